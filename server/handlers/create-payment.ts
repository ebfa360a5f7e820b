/**
 * What the three creates share: the organisation's configuration, idempotency, and the
 * `internal_error_after_commit` fault (the payment is committed, then the answer is a
 * 500, as a crash after commit would be).
 */
import { orgNow } from '../domain/clock.ts';
import { DomainError } from '../domain/errors.ts';
import type { Save } from '../domain/idempotency.ts';
import { type CreateFields, checkConfiguration, newPayment } from '../domain/payments.ts';
import type { OkBody, OperationRequest, Reply } from '../http/operation.ts';
import { type JsonText, jsonText } from '../json-text.ts';
import { authenticated, type Scope } from '../scope.ts';
import type { Payment, PaymentKind } from '../store/types.ts';

/** A create operation: a JSON body holding at least the fields every create shares. */
type Create = {
  parameters: { query?: never; path?: never };
  requestBody: { content: { 'application/json': CreateFields } };
  responses: { 200: { content: { 'application/json': unknown } } };
};

export async function createPayment<O extends Create>(
  request: OperationRequest<O>,
  scope: Scope,
  kind: PaymentKind,
  shape: (payment: Payment, now: number) => OkBody<O>,
): Promise<Reply<O>> {
  const { apiKey, org } = authenticated(scope);
  const { idempotency, ids, faults } = scope.services;
  const fields: CreateFields = request.body;
  // The webhook target was checked with the schemas (moreValidation, http/backends.ts).
  checkConfiguration(org, fields);

  const now = orgNow(org);
  const create = async (save: Save) => {
    const payment = newPayment(ids, kind, org, apiKey.mode, fields, now);
    const json: JsonText<OkBody<O>> = jsonText(shape(payment, now));
    await save(payment, 200, json);
    if (await faults.take(org.id, 'internal_error_after_commit')) {
      throw new DomainError(
        'internal_error',
        'Something went wrong on our side after the payment was saved. Retry with the same Idempotency-Key.',
      );
    }
    return { status: 200, json };
  };
  const key = request.headers['idempotency-key'];
  if (typeof key !== 'string') return create(idempotency.saveOnly);
  return idempotency.run({ orgId: org.id, mode: apiKey.mode, key, kind, now }, fields, create);
}

/**
 * What the three creates share: the organisation's configuration, idempotency, and the
 * `internal_error_after_commit` fault (the payment is committed, then the answer is a
 * 500, as a crash after commit would be).
 */
import type { Context } from 'openapi-backend';
import { orgNow } from '../domain/clock.ts';
import type { Reply, Save } from '../domain/idempotency.ts';
import { checkConfiguration, newPayment, type CreateFields } from '../domain/payments.ts';
import { ApiError } from '../http/errors.ts';
import { authenticated, type Scope } from '../scope.ts';
import type { Payment, PaymentKind } from '../store/types.ts';

export async function createPayment(
  c: Context,
  scope: Scope,
  kind: PaymentKind,
  shape: (payment: Payment) => unknown,
): Promise<Reply> {
  const { apiKey, org } = authenticated(scope);
  const { store, idempotency } = scope.services;
  const fields = c.request.requestBody as CreateFields;
  // The webhook target was checked with the schemas (moreValidation in app.ts).
  checkConfiguration(org, fields);

  const now = orgNow(org);
  const key = c.request.headers['idempotency-key'];
  const create = async (save: Save): Promise<Reply> => {
    const payment = newPayment(kind, org, apiKey.mode, fields, now);
    const json = JSON.stringify(shape(payment));
    await save(payment, 200, json);
    if (await store.takeFault(org.id, 'internal_error_after_commit')) {
      throw new ApiError(
        500,
        'internal_error',
        'Something went wrong on our side after the payment was saved. Retry with the same Idempotency-Key.',
      );
    }
    return { status: 200, json };
  };
  if (typeof key !== 'string') return create(idempotency.saveOnly);
  return idempotency.run({ orgId: org.id, mode: apiKey.mode, key, kind, now }, fields, create);
}

/**
 * GET /api/transaction/{id}, the retired read path: 404 for checkout sessions (by `cs_` id
 * or by their transaction id); for a payment link, an answer while it is payable and 404
 * once it settles; a legacy transaction whatever its status.
 */
import type { operations } from '@payment-service/contract';
import { orgNow } from '../domain/clock.ts';
import { notFound } from '../domain/errors.ts';
import { legacyTransactionShape, statusAt } from '../domain/payments.ts';
import type { Handler } from '../http/operation.ts';
import { authenticated, type Scope } from '../scope.ts';

export const getLegacyTransaction: Handler<operations['getLegacyTransaction'], Scope> = async (request, scope) => {
  const { org } = authenticated(scope);
  const now = orgNow(org);
  const payment = await scope.services.store.getPayment(org.id, request.params.id);
  if (!payment || payment.kind === 'checkout_session') throw notFound('transaction');
  if (payment.kind === 'payment_link' && statusAt(payment, now) === 'completed') throw notFound('transaction');
  return { status: 200, body: legacyTransactionShape(payment, scope.services.publicUrl, now) };
};

/**
 * GET /api/transaction/{id}, the retired read path: 404 for checkout sessions (by `cs_` id
 * or by their transaction id); for a payment link, an answer while it is payable and 404
 * once it settles; a legacy transaction whatever its status.
 */
import type { Context } from 'openapi-backend';
import { orgNow } from '../domain/clock.ts';
import type { Reply } from '../domain/idempotency.ts';
import { legacyTransactionShape, statusAt } from '../domain/payments.ts';
import { notFound } from '../http/errors.ts';
import { authenticated, type Scope } from '../scope.ts';

export async function getLegacyTransaction(c: Context, scope: Scope): Promise<Reply> {
  const { org } = authenticated(scope);
  const now = orgNow(org);
  const payment = await scope.services.store.getPayment(org.id, String(c.request.params.id));
  if (!payment || payment.kind === 'checkout_session') throw notFound('transaction');
  if (payment.kind === 'payment_link' && statusAt(payment, now) === 'completed') throw notFound('transaction');
  return { status: 200, body: legacyTransactionShape(payment, scope.services.publicUrl, now) };
}

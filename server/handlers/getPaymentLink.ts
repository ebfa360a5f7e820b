/** GET /api/payment-links/{id}: reads a link back by its id (its transaction id). */
import type { Context } from 'openapi-backend';
import { orgNow } from '../domain/clock.ts';
import type { Reply } from '../domain/idempotency.ts';
import { paymentLinkShape } from '../domain/payments.ts';
import { notFound } from '../http/errors.ts';
import { authenticated, type Scope } from '../scope.ts';

export async function getPaymentLink(c: Context, scope: Scope): Promise<Reply> {
  const { org } = authenticated(scope);
  const payment = await scope.services.store.getPayment(org.id, String(c.request.params.id));
  if (payment?.kind !== 'payment_link') throw notFound('payment link');
  return { status: 200, body: paymentLinkShape(payment, scope.services.publicUrl, orgNow(org)) };
}

/** POST /api/payment-links: a payment without a checkout session; its id is its transaction id. */
import type { Context } from 'openapi-backend';
import { orgNow } from '../domain/clock.ts';
import type { Reply } from '../domain/idempotency.ts';
import { paymentLinkShape } from '../domain/payments.ts';
import { authenticated, type Scope } from '../scope.ts';
import { createPayment } from './create-payment.ts';

export function createPaymentLink(c: Context, scope: Scope): Promise<Reply> {
  const now = orgNow(authenticated(scope).org);
  return createPayment(c, scope, 'payment_link', (p) => paymentLinkShape(p, scope.services.publicUrl, now));
}

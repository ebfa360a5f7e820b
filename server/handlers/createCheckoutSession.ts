/** POST /api/checkout-sessions: one payment by one customer, paid on the hosted page. */
import type { Context } from 'openapi-backend';
import { sessionCreatedShape } from '../domain/payments.ts';
import type { Reply } from '../domain/idempotency.ts';
import type { Scope } from '../scope.ts';
import { createPayment } from './create-payment.ts';

export function createCheckoutSession(c: Context, scope: Scope): Promise<Reply> {
  return createPayment(c, scope, 'checkout_session', (p) => sessionCreatedShape(p, scope.services.publicUrl));
}

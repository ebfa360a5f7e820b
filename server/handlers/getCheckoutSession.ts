/**
 * GET /api/checkout-sessions/{id}: where the payment stands now, the authoritative way to
 * decide fulfilment. Another organisation's session is 404, never 403.
 */
import type { Context } from 'openapi-backend';
import { orgNow } from '../domain/clock.ts';
import type { Reply } from '../domain/idempotency.ts';
import { sessionReadShape } from '../domain/payments.ts';
import { notFound } from '../http/errors.ts';
import { authenticated, type Scope } from '../scope.ts';

export async function getCheckoutSession(c: Context, scope: Scope): Promise<Reply> {
  const { org } = authenticated(scope);
  const payment = await scope.services.store.getPaymentBySessionId(org.id, String(c.request.params.id));
  if (!payment) throw notFound('checkout session');
  return { status: 200, body: sessionReadShape(payment, orgNow(org)) };
}

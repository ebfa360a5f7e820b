/**
 * GET /api/checkout-sessions/{id}: where the payment stands now, the authoritative way to
 * decide fulfilment. Another organisation's session is 404, never 403.
 */
import type { Context } from 'openapi-backend';
import { orgNow } from '../domain/clock.ts';
import type { Reply } from '../domain/idempotency.ts';
import { sessionReadShape, statusAt } from '../domain/payments.ts';
import { notFound } from '../http/errors.ts';
import { authenticated, type Scope } from '../scope.ts';
import type { Payment } from '../store/types.ts';

/**
 * The answer as sent, by stored payment and status. The read depends on the clock only
 * through the status (an unpaid session expires), and the store hands out one frozen
 * object per stored row, so a polled session is serialised once per status.
 */
const sent = new WeakMap<Readonly<Payment>, { status: string; json: string }>();

export async function getCheckoutSession(c: Context, scope: Scope): Promise<Reply> {
  const { org } = authenticated(scope);
  const payment = await scope.services.store.getPaymentBySessionId(org.id, String(c.request.params.id));
  if (!payment) throw notFound('checkout session');
  const now = orgNow(org);
  const status = statusAt(payment, now);
  const known = sent.get(payment);
  if (known?.status === status) return { status: 200, json: known.json };
  const json = JSON.stringify(sessionReadShape(payment, now));
  sent.set(payment, { status, json });
  return { status: 200, json };
}

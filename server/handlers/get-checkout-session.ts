/**
 * GET /api/checkout-sessions/{id}: where the payment stands now, the authoritative way to
 * decide fulfilment. Another organisation's session is 404, never 403.
 */
import type { operations } from '@payment-service/contract';
import { orgNow } from '../domain/clock.ts';
import { notFound } from '../domain/errors.ts';
import { sessionReadShape, statusAt } from '../domain/payments.ts';
import { type Handler, type JsonText, jsonText } from '../http/operation.ts';
import { authenticated, type Scope } from '../scope.ts';
import type { Payment } from '../store/types.ts';

type GetCheckoutSession = operations['getCheckoutSession'];

/**
 * Answers as sent, by stored payment, with the status they state (one map per server).
 * The read depends on the clock only through the status (an unpaid session expires), and
 * the store hands out one frozen object per stored row, so a polled session is serialised
 * once per status.
 */
export type SessionAnswers = WeakMap<
  Readonly<Payment>,
  { status: string; json: JsonText<ReturnType<typeof sessionReadShape>> }
>;

export const getCheckoutSession: Handler<GetCheckoutSession, Scope> = async (request, scope) => {
  const { org } = authenticated(scope);
  const payment = await scope.services.store.getPaymentBySessionId(org.id, request.params.id);
  if (!payment) throw notFound('checkout session');
  const now = orgNow(org);
  const status = statusAt(payment, now);
  const sent = scope.services.sessionAnswers;
  const known = sent.get(payment);
  if (known?.status === status) return { status: 200, json: known.json };
  const json = jsonText(sessionReadShape(payment, now));
  sent.set(payment, { status, json });
  return { status: 200, json };
};

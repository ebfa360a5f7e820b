/**
 * GET /api/checkout-sessions/{id}: where the payment stands now, the authoritative way to
 * decide fulfilment. Another organisation's session is 404, never 403.
 */
import type { operations } from '@payment-service/contract';
import { orgNow } from '../domain/clock.ts';
import { notFound } from '../domain/errors.ts';
import { sessionReadShape, statusAt } from '../domain/payments.ts';
import type { Handler } from '../http/operation.ts';
import { jsonText } from '../json-text.ts';
import { authenticated, type Scope } from '../scope.ts';

type GetCheckoutSession = operations['getCheckoutSession'];

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

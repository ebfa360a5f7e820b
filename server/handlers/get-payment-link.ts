/** GET /api/payment-links/{id}: reads a link back by its id (its transaction id). */
import type { operations } from '@payment-service/contract';
import { orgNow } from '../domain/clock.ts';
import { notFound } from '../domain/errors.ts';
import { paymentLinkShape } from '../domain/payments.ts';
import type { Handler } from '../http/operation.ts';
import { authenticated, type Scope } from '../scope.ts';

export const getPaymentLink: Handler<operations['getPaymentLink'], Scope> = async (request, scope) => {
  const { org } = authenticated(scope);
  const payment = await scope.services.store.getPayment(org.id, request.params.id);
  if (payment?.kind !== 'payment_link') throw notFound('payment link');
  return { status: 200, body: paymentLinkShape(payment, scope.services.publicUrl, orgNow(org)) };
};

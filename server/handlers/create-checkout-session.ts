/** POST /api/checkout-sessions: one payment by one customer, paid on the hosted page. */
import type { operations } from '@payment-service/contract';
import { sessionCreatedShape } from '../domain/payments.ts';
import type { Handler } from '../http/operation.ts';
import type { Scope } from '../scope.ts';
import { createPayment } from './create-payment.ts';

export const createCheckoutSession: Handler<operations['createCheckoutSession'], Scope> = (request, scope) =>
  createPayment(request, scope, 'checkout_session', (p) => sessionCreatedShape(p, scope.services.publicUrl));

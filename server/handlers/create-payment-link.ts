/** POST /api/payment-links: a payment without a checkout session; its id is its transaction id. */
import type { operations } from '@payment-service/contract';
import { paymentLinkShape } from '../domain/payments.ts';
import type { Handler } from '../http/operation.ts';
import type { Scope } from '../scope.ts';
import { createPayment } from './create-payment.ts';

export const createPaymentLink: Handler<operations['createPaymentLink'], Scope> = (request, scope) =>
  createPayment(request, scope, 'payment_link', (p, now) => paymentLinkShape(p, scope.services.publicUrl, now));

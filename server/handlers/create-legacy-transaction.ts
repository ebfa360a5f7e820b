/** POST /api/transaction: the older creation path; its payments get the legacy two-field webhook. */
import type { operations } from '@payment-service/contract';
import { legacyTransactionShape } from '../domain/payments.ts';
import type { Handler } from '../http/operation.ts';
import type { Scope } from '../scope.ts';
import { createPayment } from './create-payment.ts';

export const createLegacyTransaction: Handler<operations['createLegacyTransaction'], Scope> = (request, scope) =>
  createPayment(request, scope, 'legacy', (p, now) => legacyTransactionShape(p, scope.services.publicUrl, now));

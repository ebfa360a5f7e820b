/** The public API's handlers, keyed by operationId: the description's name is the code's. Wired in by app.ts. */
import type { operations, paths } from '@payment-service/contract';
import type { Handlers } from '../http/operation.ts';
import type { Scope } from '../scope.ts';
import { createAccessToken } from './create-access-token.ts';
import { createCheckoutSession } from './create-checkout-session.ts';
import { createLegacyTransaction } from './create-legacy-transaction.ts';
import { createPaymentLink } from './create-payment-link.ts';
import { getCheckoutSession } from './get-checkout-session.ts';
import { getLegacyTransaction } from './get-legacy-transaction.ts';
import { getPaymentLink } from './get-payment-link.ts';

export const publicHandlers = {
  createAccessToken,
  createCheckoutSession,
  getCheckoutSession,
  createPaymentLink,
  getPaymentLink,
  createLegacyTransaction,
  getLegacyTransaction,
} satisfies Handlers<operations, paths, Scope>;

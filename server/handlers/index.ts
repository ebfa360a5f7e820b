/** The public API's handlers, keyed by operationId: the description's name is the code's. */
import { createAccessToken } from './createAccessToken.ts';
import { createCheckoutSession } from './createCheckoutSession.ts';
import { createLegacyTransaction } from './createLegacyTransaction.ts';
import { createPaymentLink } from './createPaymentLink.ts';
import { getCheckoutSession } from './getCheckoutSession.ts';
import { getLegacyTransaction } from './getLegacyTransaction.ts';
import { getPaymentLink } from './getPaymentLink.ts';

export const publicHandlers = {
  createAccessToken,
  createCheckoutSession,
  getCheckoutSession,
  createPaymentLink,
  getPaymentLink,
  createLegacyTransaction,
  getLegacyTransaction,
};

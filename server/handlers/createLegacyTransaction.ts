/** POST /api/transaction: the older creation path; its payments get the legacy two-field webhook. */
import type { Context } from 'openapi-backend';
import { orgNow } from '../domain/clock.ts';
import type { Reply } from '../domain/idempotency.ts';
import { legacyTransactionShape } from '../domain/payments.ts';
import { authenticated, type Scope } from '../scope.ts';
import { createPayment } from './create-payment.ts';

export function createLegacyTransaction(c: Context, scope: Scope): Promise<Reply> {
  const now = orgNow(authenticated(scope).org);
  return createPayment(c, scope, 'legacy', (p) => legacyTransactionShape(p, scope.services.publicUrl, now));
}

/**
 * The payer's side of a payment, shared by the sandbox API and the hosted page's test-mode
 * buttons: the attempt, then, when it completed the payment, its webhook.
 */
import { orgNow } from '../domain/clock.ts';
import { notFound } from '../domain/errors.ts';
import { attempt, type Outcome, redirectAfterSuccess } from '../domain/lifecycle.ts';
import type { Services } from '../scope.ts';
import type { Payment, Rail } from '../store/types.ts';

/** The webhook goes inline (awaited) on the open-banking rail, queued on the card rail. */
export async function payerAttempt(services: Services, payment: Payment, rail: Rail, outcome: Outcome) {
  const { store, webhooks } = services;
  const org = await store.getOrganisation(payment.orgId);
  if (!org) throw notFound('payment');
  const now = orgNow(org);
  const result = await attempt(store, payment, rail, outcome, now, webhooks.lease());
  if (result.webhook) {
    const delivery = webhooks.deliver(result.webhook);
    if (rail === 'open_banking') await delivery;
  }
  return {
    payment: result.payment,
    now,
    redirectTo: outcome === 'succeeded' ? redirectAfterSuccess(result.payment) : null,
  };
}

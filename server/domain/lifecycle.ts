/**
 * A payer's attempt on a payment (service document: States and transitions).
 *
 *   created | pending | failed  --succeeded-->  completed  (final; the webhook is queued)
 *   created | pending | failed  --declined--->  failed     (still live: the payer may retry)
 *   created | pending | failed  --pending---->  pending    (a payment in flight)
 *   completed | expired         --any-------->  refused with invalid_state
 *
 * The status reports the last attempt. A session expires 24 hours after creation on the
 * organisation's clock; expiry sends no webhook, and neither does a decline.
 */
import type {
  Lease,
  NewWebhook,
  OutboxEntry,
  Payment,
  PaymentStatus,
  PaymentUpdate,
  Rail,
  Store,
} from '../store/types.ts';
import { iso } from './clock.ts';
import { DomainError, validationFailed } from './errors.ts';
import { statusAt } from './payments.ts';

export type Outcome = 'succeeded' | 'declined' | 'pending';

const STATUS_AFTER: Record<Outcome, PaymentStatus> = { succeeded: 'completed', declined: 'failed', pending: 'pending' };

function allows(payment: Payment, rail: Rail): boolean {
  return payment.checkoutMethod === 'both' || payment.checkoutMethod === rail;
}

/**
 * The event kinds the service sends: the members of the description's open
 * `WebhookEventType`, each with its schema under openapi/webhooks/ (Events: more will be added).
 */
export type WebhookEventType = 'checkout_session.completed';

/**
 * The exact webhook body of `event`, fixed when the event happens so every attempt sends
 * the same bytes; a legacy payment gets the two-field body, which names no event.
 */
export function webhookBody(payment: Payment, event: WebhookEventType, happenedAt: number): string {
  if (payment.kind === 'legacy') {
    return JSON.stringify({ transactionId: payment.transactionId, foreignTransactionId: payment.foreignTransactionId });
  }
  return JSON.stringify({
    event,
    createdAt: iso(happenedAt),
    checkoutSessionId: payment.sessionId,
    transactionId: payment.transactionId,
    foreignTransactionId: payment.foreignTransactionId,
  });
}

export interface AttemptResult {
  payment: Payment;
  /** The queued webhook, when the attempt completed a payment that has a webhookUrl. */
  webhook?: OutboxEntry;
}

/**
 * `lease`: the queued webhook's first attempt is leased to whoever makes it (the
 * dispatcher of this server), so that no other server's poller takes it meanwhile.
 */
export async function attempt(
  store: Store,
  payment: Payment,
  rail: Rail,
  outcome: Outcome,
  now: number,
  lease: Lease,
): Promise<AttemptResult> {
  const status = statusAt(payment, now);
  if (status === 'completed' || status === 'expired') {
    throw new DomainError('invalid_state', `This payment is ${status}; nothing can be paid on it.`);
  }
  if (!allows(payment, rail)) {
    throw validationFailed([
      {
        field: 'rail',
        constraints: { isIn: `rail ${rail} is not allowed: checkoutMethod is ${payment.checkoutMethod}` },
      },
    ]);
  }
  const completed = outcome === 'succeeded';
  const update: PaymentUpdate = {
    status: STATUS_AFTER[outcome],
    // transactionType tells the rail the money moved on; before completion it reads open_banking.
    transactionType: completed ? rail : 'open_banking',
    updatedAt: now,
    completedAt: completed ? now : null,
  };
  const webhook: NewWebhook | undefined =
    completed && payment.webhookUrl
      ? {
          transactionId: payment.transactionId,
          orgId: payment.orgId,
          mode: payment.mode,
          rail,
          url: payment.webhookUrl,
          body: webhookBody(payment, 'checkout_session.completed', now),
          legacy: payment.kind === 'legacy',
          nextAttemptAt: now,
        }
      : undefined;
  const queued = await store.updatePayment(payment.transactionId, update, webhook && { entry: webhook, lease });
  if (queued === false) throw new DomainError('invalid_state', 'This payment is completed; nothing can be paid on it.');
  return { payment: { ...payment, ...update }, webhook: queued };
}

/**
 * Where the payer's browser goes after a successful attempt: the ids appended to the
 * merchant's query as it was written (searchParams would write the whole query again as
 * a form: `q=a%20b+c` would come back as `q=a+b+c`, another value). Null for a stored URL
 * creates refuse now (one that does not parse, or is not http(s): an older server took
 * them), so the payment page is shown instead of an error, or a script, after paying.
 */
export function redirectAfterSuccess(payment: Payment): string | null {
  if (!URL.canParse(payment.redirectUrl)) return null;
  const url = new URL(payment.redirectUrl);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  const ids = new URLSearchParams({ transactionId: payment.transactionId });
  if (payment.sessionId) ids.set('checkoutSessionId', payment.sessionId);
  url.search = url.search.length > 1 ? `${url.search.slice(1)}&${ids}` : `${ids}`;
  return url.toString();
}

/**
 * A payer's attempts and their outcome (States and transitions; Redirect rule): the rails a
 * payment offers, the redirect on success, a decline that is not final, and completion with
 * its webhook queued (card) or sent at once (open banking).
 */
import { COMPLETION_DELAY_MS, type Rail, type Session, type Payment, type Job, ApiError } from './types.ts';
import { iso, wholeSecond } from './helpers.ts';
import type { State } from './state.ts';
import type { makeWebhooks } from './webhooks.ts';

/** Attempts over the state, handing completed payments to delivery. */
export function makeAttempts(st: State, webhooks: ReturnType<typeof makeWebhooks>) {
  const { orgOf, statusOf, now, timers, queue } = st;
  const { deliver } = webhooks;
  function railsOf(p: Payment): Rail[] {
    if (p.kind === 'session')
      return p.checkoutMethod === 'both' ? ['card', 'open_banking'] : [p.checkoutMethod as Rail];
    // Links and legacy transactions (ours): whatever rails the organisation can take.
    const org = orgOf(p);
    const rails: Rail[] = [];
    if (org.cardEnabled) rails.push('card');
    if (org.openBankingApproved && org.settlementAccount && org.settlementCurrency === 'NZD')
      rails.push('open_banking');
    return rails;
  }

  /** redirect.params: ids appended, the merchant's own query kept byte for byte. */
  function redirectFor(s: Session): string {
    const hash = s.redirectUrl.indexOf('#');
    const base = hash < 0 ? s.redirectUrl : s.redirectUrl.slice(0, hash);
    const fragment = hash < 0 ? '' : s.redirectUrl.slice(hash);
    const joiner = !base.includes('?') ? '?' : /[?&]$/.test(base) ? '' : '&';
    const ids = `checkoutSessionId=${encodeURIComponent(s.id)}&transactionId=${s.transactionId}`;
    return `${base}${joiner}${ids}${fragment}`;
  }

  function attempt(p: Payment, rail: Rail, outcome: string): { redirectTo: string | null } {
    if (outcome !== 'succeeded' && outcome !== 'declined' && outcome !== 'pending')
      throw new ApiError(400, 'bad_outcome', 'outcome must be succeeded, declined or pending');
    const status = statusOf(p);
    if (status !== 'created' && status !== 'failed')
      throw new ApiError(409, 'not_payable', `The payment is ${status}; it cannot be paid now.`);
    if (!railsOf(p).includes(rail))
      throw new ApiError(400, 'rail_not_offered', `${rail} is not offered for this payment.`);
    p.updatedAt = wholeSecond(now(orgOf(p)));
    p.status = 'pending'; // state.pending: in flight; an outcome `pending` leaves it there
    if (outcome === 'pending') return { redirectTo: null };
    // Asynchronous outcome (ours): the charge settles or is declined a moment later.
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (outcome === 'succeeded') complete(p, rail);
      else decline(p);
    }, COMPLETION_DELAY_MS);
    timers.add(timer);
    return { redirectTo: outcome === 'succeeded' && p.kind === 'session' ? redirectFor(p) : null };
  }

  /** state.declined: not final, the session stays live and the payer may try again; no event (event.none). */
  function decline(p: Payment): void {
    if (p.status !== 'pending') return;
    p.status = 'failed';
    p.updatedAt = wholeSecond(now(orgOf(p)));
  }

  function complete(p: Payment, rail: Rail): void {
    if (p.status !== 'pending') return;
    const org = orgOf(p);
    p.status = 'completed'; // state.completed
    p.paidWith = rail;
    p.updatedAt = wholeSecond(now(org));
    // target.none: without a webhook address nobody is notified.
    if (!p.notifyUrl) return;
    // payload.created: when the event happened, fixed once, so every attempt carries the same body.
    const body =
      p.kind === 'legacy'
        ? JSON.stringify({ transactionId: p.transactionId, foreignTransactionId: p.foreignTransactionId }) // legacy.payload
        : JSON.stringify({
            transactionId: p.transactionId, // payload.transaction
            checkoutSessionId: p.kind === 'session' ? p.id : null, // payload.session
            foreignTransactionId: p.foreignTransactionId, // payload.foreign-id
            event: 'checkout_session.completed', // event.completed
            createdAt: iso(p.updatedAt), // payload.created
          });
    const job: Job = {
      payment: p,
      url: p.notifyUrl,
      body,
      signable: p.kind !== 'legacy',
      rail,
      attempts: 0,
      dueAt: now(org),
      inFlight: false,
    };
    // retry.card: from a queue; retry.open-banking: inline, one attempt.
    if (rail === 'card') queue.add(job);
    else void deliver(job);
  }

  return { railsOf, attempt };
}

/**
 * What the lifecycle, webhook and retry checks share: payments made through the adapter,
 * deliveries awaited at the suite's own receiver and verified independently of the target
 * (the client's verifyWebhook with the organisation's secret), and the clock moved to
 * bring on retries.
 *
 * Time moves through the adapter's clock: after each failed attempt the clock is advanced
 * step by step until the next attempt arrives or every step has passed. Repeated
 * deliveries of a delivered event are allowed (Duplicates); after a failed or final
 * attempt, every further delivery counts as an attempt.
 */
import type { Rail } from '../../core/adapter.ts';
import { fail } from './assert.ts';
import { legacyTransactionBody } from './context/api.ts';
import type { CheckContext } from './context/check-context.ts';
import type { Hook } from './context/hooks.ts';
import type { Org } from './context/organisations.ts';
import { at, show, text } from '../../core/json.ts';
import { digestProblem, headerFormatProblem, unixSecondsProblem } from '../../rules/signature.ts';
import { UUID } from '../../rules/values.ts';
import { CheckFailure, CheckSkipped } from '../../core/outcome.ts';
import { poll } from '../../core/poll.ts';
import type { Behaviour } from './capture-receiver.ts';
import type { Received } from '../../core/exchange.ts';

export const section = 'Events';
export const lifecycleSection = 'States and transitions';
/** Clock steps tried, in turn, to bring on the next attempt (1 min, 5 min, 1 h, 1 day in total). */
export const CLOCK_STEPS = [60, 240, 3300, 82800];
/** Longer than the five seconds the service waits for an answer (Response and retry behaviour: Wait time). */
export const HOLD_MS = 7000;
/** Well inside the five seconds: an answer this slow is still an answer in time. */
export const SLOW_ANSWER_MS = 3500;
/** How far t may be from the time of arrival before the sender's clock or queue is suspect (should). */
export const FRESH_ALLOWANCE_S = 30;

/** Answers the n-th delivery with the n-th status (the last one from then on). */
export const answer =
  (...statuses: number[]): Behaviour =>
  (n) => ({ status: statuses[Math.min(n, statuses.length) - 1]! });

/** The organisation's signing secret, which the webhook checks verify with. */
export function secretOf(org: Org): string {
  if (!org.webhookSigningSecret) {
    throw new CheckSkipped(
      "needs the organisation's webhook signing secret: createOrganisation, or webhookSigningSecret in the --config profile",
      ['createOrganisation'],
    );
  }
  return org.webhookSigningSecret;
}

export async function paidSession(
  ctx: CheckContext,
  org: Org,
  options: { rail?: Rail; hook?: Hook; patch?: Record<string, unknown>; payAfterMs?: number } = {},
) {
  const rail = options.rail ?? 'card';
  const session = await ctx.api.session(org, {
    checkoutMethod: rail,
    ...(options.hook ? { webhookUrl: options.hook.url } : {}),
    ...(options.patch ?? {}),
  });
  if (options.payAfterMs) await ctx.hooks.settle(options.payAfterMs);
  const paid = await ctx.target.pay(org, session.id, rail, 'succeeded');
  return { session, paid };
}

/**
 * What the target's own records say of the last attempt: `final` (no attempt follows),
 * `more` (another is due, some time), or `unknown` (the adapter keeps no records, or they
 * do not yet list the attempts that arrived).
 */
async function lastRecord(
  ctx: CheckContext,
  sessionId: string,
  attempts: number,
): Promise<'final' | 'more' | 'unknown'> {
  if (!ctx.target.has('webhookDeliveries')) return 'unknown';
  // An attempt is recorded once answered: at most the five-second wait after it arrived.
  const deliveries = await poll(
    () => ctx.target.deliveries({ checkoutSessionId: sessionId }),
    (found) => found.length >= attempts,
    HOLD_MS,
  );
  if (deliveries.length < attempts) return 'unknown';
  return deliveries.at(-1)?.final ? 'final' : 'more';
}

/** Days the clock is moved on, a day at a time, while the target's records say an attempt is still due. */
const MAX_DAYS_AWAITED = 7;

/**
 * Every attempt the target makes for one payment: waits for the first, then moves the
 * organisation's clock until no further attempt comes (or more than `cap` came). The
 * document states no spacing of the card rail's attempts: after a day's steps, while the
 * target's records say another attempt is due, the clock moves on a day at a time.
 */
export async function allAttempts(
  ctx: CheckContext,
  org: Org,
  hook: Hook,
  sessionId: string,
  cap = 5,
): Promise<Received[]> {
  let got = await ctx.hooks.waitFor(hook, 1);
  if (got.length === 0) return got;
  const next = async (step: number) => {
    await ctx.target.advanceClock(org, step);
    const arrived = await ctx.hooks.waitFor(hook, got.length + 1, ctx.run.settings.deliveryWaitMs);
    if (arrived.length <= got.length) return false;
    got = arrived;
    return true;
  };
  for (;;) {
    if (got.length >= cap) return got;
    const record = await lastRecord(ctx, sessionId, got.length);
    let progressed = false;
    for (const step of record === 'final' ? [86400] : CLOCK_STEPS) {
      progressed = await next(step);
      if (progressed) break;
    }
    for (let day = 0; !progressed && record === 'more' && day < MAX_DAYS_AWAITED; day++) progressed = await next(86400);
    if (!progressed) return got;
  }
}

/** Brings on attempt number `count` by moving the clock (for checks that need a retry to compare). */
export async function untilAttempt(ctx: CheckContext, org: Org, hook: Hook, count: number): Promise<Received[]> {
  let got = await ctx.hooks.waitFor(hook, 1);
  for (const step of [...CLOCK_STEPS, ...CLOCK_STEPS]) {
    if (got.length >= count) return got;
    await ctx.target.advanceClock(org, step);
    got = await ctx.hooks.waitFor(hook, count, ctx.run.settings.deliveryWaitMs);
  }
  return got;
}

/**
 * That nothing was delivered for a session: nothing at the suite's receiver after the
 * delivery wait, and nothing in the target's own delivery records.
 */
export async function expectNothingDelivered(
  ctx: CheckContext,
  hook: Hook | undefined,
  sessionId: string,
  what: string,
) {
  await ctx.hooks.settle();
  // No event at all, whatever its kind: the document sends none for failure or expiry.
  const got = hook ? [...ctx.hooks.received(hook), ...ctx.hooks.receivedOther(hook)] : [];
  if (got.length > 0) failWith(`${what}: a webhook arrived at the receiver.`, got[0]);
  const records = await ctx.target.deliveries({ checkoutSessionId: sessionId });
  if (records.length > 0) {
    const to = [...new Set(records.map((r) => String(r?.url)))].join(', ');
    fail(
      `${what}: the target's delivery records list ${records.length} attempt${records.length === 1 ? '' : 's'} (to ${to}).`,
    );
  }
}

/** The merchant's own id a legacy transaction is made with, which its body may echo. */
export const LEGACY_FOREIGN_ID = 'legacy-1';

/**
 * A legacy transaction paid, and its delivery. The document does not show how one is made:
 * an adapter offering legacyTransactions makes it in the target's own way; else the suite
 * sends our modelled POST /api/transaction, and when the target does not accept it or
 * answers without a UUID transactionId, the legacy path cannot be reached and the check is
 * skipped, naming legacyTransactions.
 */
export async function legacyDelivery(
  ctx: CheckContext,
  label: string,
): Promise<{ d: Received; transactionId: string }> {
  const org = await ctx.target.organisation();
  const hook = ctx.hooks.hook(label);
  const transactionId =
    (await ctx.target.legacyTransaction(org, hook.url, LEGACY_FOREIGN_ID)) ?? (await modelledLegacy(ctx, org, hook));
  await ctx.target.attempt(org, { kind: 'transaction', id: transactionId }, 'card', 'succeeded');
  const [d] = await ctx.hooks.waitFor(hook, 1);
  if (!d)
    fail(`No legacy webhook arrived within ${ctx.run.settings.settleTimeoutMs / 1000} s of the payment completing.`);
  return { d, transactionId };
}

/** A legacy transaction through our modelled POST /api/transaction; its transaction id. */
async function modelledLegacy(ctx: CheckContext, org: Org, hook: Hook): Promise<string> {
  const created = await ctx.api.send('POST', '/api/transaction', {
    token: await ctx.api.token(org),
    json: legacyTransactionBody({ webhookUrl: hook.url, foreignTransactionId: LEGACY_FOREIGN_ID }),
  });
  ctx.hooks.skipWhenRefused(created, hook.url);
  const transactionId = text(created.json, 'transactionId');
  if (created.status !== 200 || transactionId === undefined || !UUID.test(transactionId)) {
    throw new CheckSkipped(
      `POST /api/transaction did not accept the modelled request with a UUID transactionId (status ${created.status}); the legacy path cannot be reached: an adapter offering legacyTransactions makes them in the target's own way`,
      ['legacyTransactions'],
    );
  }
  ctx.api.remember(org, created, 'transactionId');
  return transactionId;
}

/** A delivery as the receiver got it, for a report. */
export function describeDelivery(d: Received): string {
  const headers = Object.entries(d.headers)
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join('\n');
  return `${d.method} ${d.path} (attempt ${d.attempt} at the receiver)\n${headers}\n\n${d.raw.toString('utf8')}`;
}

/** Fails the check with the delivery as its evidence. */
export function failWith(message: string, d?: Received): never {
  throw new CheckFailure(
    message,
    d ? { evidence: { request: describeDelivery(d), response: '(the suite’s receiver)', curl: '' } } : undefined,
  );
}

/** The first delivery to the hook, which must come within --settle-timeout of the payment completing. */
export async function firstDelivery(ctx: CheckContext, hook: Hook): Promise<Received> {
  const [d] = await ctx.hooks.waitFor(hook, 1);
  if (d) return d;
  const within = `within ${ctx.run.settings.settleTimeoutMs / 1000} s of the payment completing`;
  const others = ctx.hooks.receivedOther(hook);
  if (others.length > 0) {
    const kinds = [...new Set(others.map((o) => show(at(o.body, 'event'))))].join(', ');
    failWith(
      `No checkout_session.completed arrived ${within}, only events of other kinds (${kinds}): a payment that succeeds sends checkout_session.completed.`,
      others[0],
    );
  }
  fail(`No webhook arrived ${within}.`);
}

/** `t=<unix_seconds>` (Signature header: Format), on the real clock or the organisation's moved one. */
export function expectUnixSeconds(d: Received, org: Org): void {
  const problem = unixSecondsProblem(d, org.clockMovedS);
  if (problem) failWith(problem, d);
}

/** The header as the document writes it, read as its receivers must read it. */
function expectHeaderFormat(d: Received, header: string, what: string): void {
  const problem = headerFormatProblem(header);
  if (problem) failWith(`${what}: ${problem}`, d);
}

export function expectSigned(d: Received, secret: string, what: string, org: Org) {
  const header = d.headers['service-signature'];
  if (typeof header !== 'string') failWith(`${what}: the delivery has no Service-Signature header.`, d);
  expectHeaderFormat(d, header, what);
  expectUnixSeconds(d, org);
  const reason = digestProblem(d, secret);
  if (reason)
    failWith(`${what}: the signature does not verify with the organisation's secret over the raw body (${reason}).`, d);
}

/**
 * The payment lifecycle and its webhooks, observed at the suite's own receiver and
 * verified independently of the target (the client's verifyWebhook with the
 * organisation's secret). Service document: States and transitions; Redirect rule; Events
 * (delivery target, event kinds, payload, legacy payload, signature header, response and
 * retry behaviour); Webhook signing secret (rotation).
 *
 * Time moves through the adapter's clock: after each failed attempt the clock is advanced
 * step by step until the next attempt arrives or every step has passed. Repeated
 * deliveries of a delivered event are allowed (Duplicates); after a failed or final
 * attempt, every further delivery counts as an attempt.
 */
import { verifyWebhook, WebhookVerificationError } from '@payment-service/client/webhooks';
import type { Capability, Rail } from '../adapter.ts';
import { expect, expectStatus, fail } from '../assert.ts';
import type { Check } from '../check.ts';
import type { CheckContext } from '../context/check.ts';
import type { Hook } from '../context/hooks.ts';
import type { Org } from '../context/organisations.ts';
import { at, isObject, show, text } from '../json.ts';
import { CheckFailure, CheckSkipped } from '../outcome.ts';
import { attemptsOf, type Behaviour, type Received } from '../receiver.ts';

const section = 'Events';
const lifecycleSection = 'States and transitions';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Clock steps tried, in turn, to bring on the next attempt (1 min, 5 min, 1 h, 1 day in total). */
const CLOCK_STEPS = [60, 240, 3300, 82800];
/** Longer than the five seconds the service waits for an answer (Response and retry behaviour: Wait time). */
const HOLD_MS = 7000;
/** Well inside the five seconds: an answer this slow is still an answer in time. */
const SLOW_ANSWER_MS = 3500;
/** Receivers reject a signature whose t is older than five minutes (Receiver verification step 4). */
const TOLERANCE_S = 300;
/** How far t may be from the time of arrival before the sender's clock or queue is suspect (should). */
const FRESH_ALLOWANCE_S = 30;

/** Answers the n-th delivery with the n-th status (the last one from then on). */
const answer =
  (...statuses: number[]): Behaviour =>
  (n) => ({ status: statuses[Math.min(n, statuses.length) - 1]! });

/** The organisation's signing secret, which the webhook checks verify with. */
function secretOf(org: Org): string {
  if (!org.webhookSigningSecret) {
    throw new CheckSkipped(
      "needs the organisation's webhook signing secret: createOrganisation, or webhookSigningSecret in the --config profile",
      ['createOrganisation'],
    );
  }
  return org.webhookSigningSecret;
}

async function paidSession(
  ctx: CheckContext,
  org: Org,
  options: { rail?: Rail; hook?: Hook; patch?: Record<string, unknown> } = {},
) {
  const rail = options.rail ?? 'card';
  const session = await ctx.api.session(org, {
    checkoutMethod: rail,
    ...(options.hook ? { webhookUrl: options.hook.url } : {}),
    ...(options.patch ?? {}),
  });
  const paid = await ctx.target.pay(org, session.id, rail, 'succeeded');
  return { session, paid };
}

/** Whether the target's own records say the last attempt was final; false when the adapter keeps no records. */
async function lastRecordFinal(ctx: CheckContext, sessionId: string, attempts: number): Promise<boolean> {
  if (!ctx.target.has('webhookDeliveries')) return false;
  const deadline = Date.now() + HOLD_MS;
  for (;;) {
    const deliveries = await ctx.target.deliveries({ checkoutSessionId: sessionId });
    if (deliveries.length >= attempts) return Boolean(deliveries.at(-1)?.final);
    if (Date.now() > deadline) return false;
    await ctx.hooks.settle(100);
  }
}

/**
 * Every attempt the target makes for one payment: waits for the first, then moves the
 * organisation's clock until no further attempt comes (or more than `cap` came).
 */
async function allAttempts(ctx: CheckContext, org: Org, hook: Hook, sessionId: string, cap = 5): Promise<Received[]> {
  let got = await ctx.hooks.waitFor(hook, 1, 10_000);
  if (got.length === 0) return got;
  for (;;) {
    if (got.length >= cap) return got;
    const final = await lastRecordFinal(ctx, sessionId, got.length);
    let progressed = false;
    for (const step of final ? [86400] : CLOCK_STEPS) {
      await ctx.target.advanceClock(org, step);
      const next = await ctx.hooks.waitFor(hook, got.length + 1, ctx.run.settings.settleMs);
      if (next.length > got.length) {
        got = next;
        progressed = true;
        break;
      }
    }
    if (!progressed) return got;
  }
}

/** Brings on attempt number `count` by moving the clock (for checks that need a retry to compare). */
async function untilAttempt(ctx: CheckContext, org: Org, hook: Hook, count: number): Promise<Received[]> {
  let got = await ctx.hooks.waitFor(hook, 1, 10_000);
  for (const step of [...CLOCK_STEPS, ...CLOCK_STEPS]) {
    if (got.length >= count) return got;
    await ctx.target.advanceClock(org, step);
    got = await ctx.hooks.waitFor(hook, count, ctx.run.settings.settleMs);
  }
  return got;
}

/**
 * That nothing was delivered for a session: nothing at the suite's receiver after the
 * delivery wait, and nothing in the target's own delivery records.
 */
async function expectNothingDelivered(ctx: CheckContext, hook: Hook | undefined, sessionId: string, what: string) {
  await ctx.hooks.settle();
  const got = hook ? ctx.hooks.received(hook) : [];
  if (got.length > 0) failWith(`${what}: a webhook arrived at the receiver.`, got[0]);
  const records = await ctx.target.deliveries({ checkoutSessionId: sessionId });
  if (records.length > 0) {
    const to = [...new Set(records.map((r) => String(r?.url)))].join(', ');
    fail(
      `${what}: the target's delivery records list ${records.length} attempt${records.length === 1 ? '' : 's'} (to ${to}).`,
    );
  }
}

/**
 * A legacy transaction paid, and its delivery. The request and response shapes of POST
 * /api/transaction are our modelling (the document does not show them): when the target
 * does not accept the modelled request or answers without a UUID transactionId, the
 * legacy path cannot be reached and the check is skipped.
 */
async function legacyDelivery(ctx: CheckContext, label: string): Promise<{ d: Received; transactionId: string }> {
  const org = await ctx.target.organisation();
  const hook = ctx.hooks.hook(label);
  const created = await ctx.api.send('POST', '/api/transaction', {
    token: await ctx.api.token(org),
    json: {
      amount: { total: 42 },
      creditorReference: { reference: 'LEGACY-1' },
      redirectUrl: 'https://shop.example.com/paid',
      checkoutMethod: 'card',
      webhookUrl: hook.url,
      foreignTransactionId: 'legacy-1',
    },
  });
  ctx.hooks.skipWhenRefused(created, hook.url);
  const transactionId = text(created.json, 'transactionId');
  if (created.status !== 200 || transactionId === undefined || !UUID.test(transactionId)) {
    throw new CheckSkipped(
      `POST /api/transaction did not accept the modelled request with a UUID transactionId (status ${created.status}); the legacy path cannot be reached`,
    );
  }
  ctx.api.remember(org, created, 'transactionId');
  await ctx.target.attempt(org, { kind: 'transaction', id: transactionId }, 'card', 'succeeded');
  const [d] = await ctx.hooks.waitFor(hook, 1, 10_000);
  if (!d) fail('No legacy webhook arrived within 10 s of the payment completing.');
  return { d, transactionId };
}

function describeDelivery(d: Received): string {
  const headers = Object.entries(d.headers)
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join('\n');
  return `${d.method} ${d.path} (attempt ${d.attempt} at the receiver)\n${headers}\n\n${d.raw.toString('utf8')}`;
}

/** Fails the check with the delivery as its evidence. */
function failWith(message: string, d?: Received): never {
  throw new CheckFailure(
    message,
    d ? { evidence: { request: describeDelivery(d), response: '(the suite’s receiver)', curl: '' } } : undefined,
  );
}

/** The first delivery to the hook, which must come within 10 s of the payment completing. */
async function firstDelivery(ctx: CheckContext, hook: Hook): Promise<Received> {
  const [d] = await ctx.hooks.waitFor(hook, 1, 10_000);
  if (!d) fail('No webhook arrived within 10 s of the payment completing.');
  return d;
}

function verifies(d: Received, secret: string): boolean {
  try {
    verifyWebhook(d.raw, String(d.headers['service-signature']), secret, { toleranceSeconds: 600 });
    return true;
  } catch {
    return false;
  }
}

function expectSigned(d: Received, secret: string, what: string) {
  const header = d.headers['service-signature'];
  if (typeof header !== 'string') failWith(`${what}: the delivery has no Service-Signature header.`, d);
  try {
    verifyWebhook(d.raw, header, secret, { toleranceSeconds: 600 });
  } catch (error) {
    const reason = error instanceof WebhookVerificationError ? `${error.name}: ${error.message}` : String(error);
    failWith(`${what}: the signature does not verify with the organisation's secret over the raw body (${reason}).`, d);
  }
}

/** How old the delivery's signature timestamp was when it arrived, in seconds (undefined without a t). */
function signatureAge(d: Received): number | undefined {
  const t = Number(/(?:^|,)\s*t=(\d+)/.exec(String(d.headers['service-signature'] ?? ''))?.[1]);
  return Number.isFinite(t) ? Math.round(d.receivedAt / 1000 - t) : undefined;
}

interface AttemptsCheck {
  id: string;
  rail: Rail;
  title: string;
  rule: string;
  /** How the receiver answers each attempt. */
  behaviour: Behaviour;
  /** What is wrong with this many attempts, or undefined. */
  judge: (attempts: number) => string | undefined;
  slow?: boolean;
}

/** The attempts the target makes for one payment, its receiver answering as told. */
function attemptsCheck(c: AttemptsCheck): Check {
  return {
    id: c.id,
    level: 'must',
    rule: c.rule,
    section,
    title: c.title,
    requires: ['createOrganisation', 'attempt', 'advanceClock'],
    uses: ['webhookDeliveries'],
    ...(c.slow ? { slow: true } : {}),
    async run(ctx) {
      const org = await ctx.target.organisation();
      const hook = ctx.hooks.hook(c.rail, c.behaviour);
      const { session } = await paidSession(ctx, org, { rail: c.rail, hook });
      const got = attemptsOf(await allAttempts(ctx, org, hook, session.id));
      const problem = c.judge(got.length);
      if (problem) failWith(`${problem} (received ${got.length} attempt${got.length === 1 ? '' : 's'}).`, got.at(-1));
    },
  };
}

/**
 * The receiver answers 200 after SLOW_ANSWER_MS, inside the five seconds the service waits:
 * a success. The target's own record of the attempt must say so; a sender that gave up
 * sooner records a failure (and retries a card delivery, or loses an open-banking one).
 * Only the record tells a retry from an allowed duplicate, so the check needs it.
 */
function slowAnswerCheck(id: string, rail: Rail): Check {
  const railName = rail === 'card' ? 'card rail' : 'open banking rail';
  return {
    id,
    level: 'must',
    rule: `Response and retry behaviour: Wait time; Success; ${rail === 'card' ? 'Card rail' : 'Open banking rail'}`,
    section,
    title: `${railName}, receiver answers 2xx after ${SLOW_ANSWER_MS / 1000} s (inside the 5 s wait): the attempt is recorded as delivered`,
    requires: PAYS_AND_RECORDS,
    slow: true,
    async run(ctx) {
      const org = await ctx.target.organisation();
      const hook = ctx.hooks.hook(`slow-${rail}`, () => ({ holdMs: SLOW_ANSWER_MS }));
      const { session } = await paidSession(ctx, org, { rail, hook });
      const d = await firstDelivery(ctx, hook);
      // The answer goes out SLOW_ANSWER_MS after arrival; the record is read once it has.
      await ctx.hooks.settle(Math.max(0, d.receivedAt + SLOW_ANSWER_MS + 1000 - Date.now()));
      const records = await ctx.target.deliveries({ checkoutSessionId: session.id });
      const record = records.find((r) => r.url === hook.url && r.attempt === 1) ?? records[0];
      if (!record) fail('The target delivered, but its delivery records list no attempt.');
      const status = record.responseStatus;
      if (typeof status !== 'number' || status < 200 || status > 299) {
        const lost =
          rail === 'card' ? 'it will be retried as if it had failed' : 'the one attempt is counted as failed';
        failWith(
          `The receiver answered 200 after ${SLOW_ANSWER_MS / 1000} s, within the five seconds the service waits, yet the target recorded ${status === null ? `no answer (${show(record.error)})` : `status ${status}`}: ${lost}.`,
          d,
        );
      }
    },
  };
}

const retried = (n: number) =>
  n < 2
    ? 'A card delivery that failed this way must be retried'
    : n > 3
      ? 'The card rail makes up to three attempts in total'
      : undefined;
const once = (what: string) => (n: number) => (n === 1 ? undefined : `${what}: exactly one attempt`);
const oneOpenBankingAttempt = once('The open banking rail makes one attempt');

/** Capabilities of a check that pays and reads the target's delivery records. */
const PAYS_AND_RECORDS: Capability[] = ['attempt', 'webhookDeliveries'];

export const webhookChecks: Check[] = [
  {
    id: 'LIFE-001',
    level: 'must',
    rule: 'States rule 4; Resources: transactionType',
    section: lifecycleSection,
    title: 'a succeeded attempt completes the session; transactionType tells the rail of a both session',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      for (const rail of ['card', 'open_banking'] as const) {
        const session = await ctx.api.session(org, { checkoutMethod: 'both' });
        await ctx.target.pay(org, session.id, rail);
        const read = await ctx.api.readSession(org, session.id);
        expectStatus(read, 200, 'reading a paid session');
        const status = at(read.json, 'status');
        expect(
          status === 'completed',
          `A session paid by ${rail} must read completed; received ${show(status)}.`,
          read,
        );
        const type = at(read.json, 'transactionType');
        expect(
          type === rail,
          `transactionType must be ${rail} for a both session paid by ${rail}; received ${show(type)}.`,
          read,
        );
      }
    },
  },
  {
    id: 'LIFE-002',
    level: 'must',
    rule: 'States rule 2',
    section: lifecycleSection,
    title: 'a declined attempt is not final: status failed, and the payer can still pay',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const session = await ctx.api.session(org, { checkoutMethod: 'card' });
      await ctx.target.pay(org, session.id, 'card', 'declined');
      const failed = await ctx.api.readSession(org, session.id);
      const status = at(failed.json, 'status');
      expect(status === 'failed', `After a declined attempt status must be failed; received ${show(status)}.`, failed);
      await ctx.target.pay(org, session.id, 'card', 'succeeded');
      const done = await ctx.api.readSession(org, session.id);
      const after = at(done.json, 'status');
      expect(after === 'completed', `A retry after a decline must be able to complete; received ${show(after)}.`, done);
    },
  },
  {
    id: 'LIFE-003',
    level: 'must',
    rule: 'POST /api/checkout-sessions: Redirect rule',
    section: lifecycleSection,
    title:
      "on success the redirect carries transactionId and checkoutSessionId and keeps the merchant's own query parameters",
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const redirectUrl = 'https://shop.example.com/checkout/done?order=1001&lang=en';
      const session = await ctx.api.session(org, { checkoutMethod: 'card', redirectUrl });
      const { redirectTo } = await ctx.target.pay(org, session.id, 'card');
      if (redirectTo === null) {
        throw new CheckSkipped(
          'the adapter does not say where the payer was sent on success (attempt gave redirectTo null)',
        );
      }
      if (!URL.canParse(redirectTo)) {
        fail(`The payer must be sent to redirectUrl on success; the adapter gave redirectTo ${show(redirectTo)}.`);
      }
      const to = new URL(redirectTo);
      const q = to.searchParams;
      expect(
        `${to.origin}${to.pathname}` === 'https://shop.example.com/checkout/done',
        `The redirect goes to ${to.origin}${to.pathname}, not to redirectUrl.`,
      );
      expect(
        q.get('order') === '1001' && q.get('lang') === 'en',
        `The merchant's own query parameters (order=1001, lang=en) must be kept: ${redirectTo}`,
      );
      expect(
        q.get('checkoutSessionId') === session.id,
        `checkoutSessionId=${session.id} must be appended: ${redirectTo}`,
      );
      expect(UUID.test(q.get('transactionId') ?? ''), `transactionId=<uuid> must be appended: ${redirectTo}`);
    },
  },
  {
    id: 'HOOK-001',
    level: 'must',
    rule: 'Events: Signature header',
    section,
    title:
      'completion sends a signed POST application/json that verifies with the organisation’s secret over the raw bytes',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const secret = secretOf(org);
      const hook = ctx.hooks.hook('signed');
      await paidSession(ctx, org, { hook });
      const got = await ctx.hooks.waitFor(hook, 1, 10_000);
      if (got.length === 0) fail('No webhook arrived within 10 s of the payment completing.');
      for (const d of got) {
        if (d.method !== 'POST') failWith(`Deliveries must be POST; received ${d.method}.`, d);
        if (!/^application\/json\b/i.test(String(d.headers['content-type'])))
          failWith(`Deliveries must be application/json; received ${String(d.headers['content-type'])}.`, d);
        expectSigned(d, secret, 'a completed payment’s delivery');
      }
    },
  },
  {
    id: 'HOOK-002',
    level: 'must',
    rule: 'Events: Payload',
    section,
    title:
      'the payload has event, createdAt, checkoutSessionId, transactionId (as in the redirect) and foreignTransactionId',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const hook = ctx.hooks.hook('payload');
      const { session, paid } = await paidSession(ctx, org, { hook, patch: { foreignTransactionId: 'order-hook-2' } });
      const d = await firstDelivery(ctx, hook);
      const field = (name: string) => at(d.body, name);
      const redirectTransaction =
        paid.redirectTo && URL.canParse(paid.redirectTo)
          ? new URL(paid.redirectTo).searchParams.get('transactionId')
          : null;
      const problems: string[] = [];
      if (field('event') !== 'checkout_session.completed')
        problems.push(`event is ${show(field('event'))}, expected "checkout_session.completed"`);
      const createdAt = field('createdAt');
      if (typeof createdAt !== 'string' || Number.isNaN(Date.parse(createdAt)) || !/(Z|[+-]00:?00)$/.test(createdAt))
        problems.push(`createdAt ${show(createdAt)} is not an ISO 8601 UTC timestamp`);
      if (field('checkoutSessionId') !== session.id)
        problems.push(`checkoutSessionId is ${show(field('checkoutSessionId'))}, expected ${session.id}`);
      const transactionId = field('transactionId');
      if (typeof transactionId !== 'string' || !UUID.test(transactionId))
        problems.push(`transactionId ${show(transactionId)} is not a UUID`);
      else if (redirectTransaction && transactionId !== redirectTransaction)
        problems.push(`transactionId ${transactionId} differs from the redirect's ${redirectTransaction}`);
      if (field('foreignTransactionId') !== 'order-hook-2')
        problems.push(`foreignTransactionId is ${show(field('foreignTransactionId'))}, expected "order-hook-2"`);
      if (problems.length > 0) failWith(`The payload is not as documented: ${problems.join('; ')}.`, d);
    },
  },
  {
    id: 'HOOK-003',
    level: 'must',
    rule: 'Events: Payload foreignTransactionId',
    section,
    title: 'foreignTransactionId is null in the payload when none was given',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const hook = ctx.hooks.hook('no-foreign');
      await paidSession(ctx, org, { hook });
      const d = await firstDelivery(ctx, hook);
      if (!isObject(d.body) || !('foreignTransactionId' in d.body) || d.body.foreignTransactionId !== null)
        failWith(
          `foreignTransactionId must be present and null; received ${show(at(d.body, 'foreignTransactionId'))}.`,
          d,
        );
    },
  },
  {
    id: 'HOOK-004',
    level: 'must',
    rule: 'Events: Payload createdAt',
    section,
    title: 'createdAt is when the event happened: identical on a repeated attempt',
    requires: ['createOrganisation', 'attempt', 'advanceClock'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const hook = ctx.hooks.hook('created-at', answer(500, 200));
      await paidSession(ctx, org, { hook });
      const got = await untilAttempt(ctx, org, hook, 2);
      const [a, b] = got;
      if (!a || !b) {
        failWith(
          `The card delivery was not attempted again after a 500 (received ${got.length} attempt), so createdAt stability cannot be seen.`,
          a,
        );
      }
      if (at(a.body, 'createdAt') !== at(b.body, 'createdAt'))
        failWith(
          `createdAt changed between attempts: ${show(at(a.body, 'createdAt'))} then ${show(at(b.body, 'createdAt'))}.`,
          b,
        );
      if (at(a.body, 'transactionId') !== at(b.body, 'transactionId'))
        failWith('transactionId changed between attempts of the same event.', b);
    },
  },
  {
    id: 'HOOK-005',
    level: 'should',
    rule: 'Events: Receiver verification step 4',
    section,
    title: `the signature timestamp t is current: within ${FRESH_ALLOWANCE_S} s of the delivery's arrival (an allowance for clocks and transit)`,
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const hook = ctx.hooks.hook('fresh-t');
      await paidSession(ctx, org, { hook, rail: 'open_banking' });
      const d = await firstDelivery(ctx, hook);
      const age = signatureAge(d);
      if (age === undefined || Math.abs(age) > FRESH_ALLOWANCE_S)
        failWith(
          `t is ${age === undefined ? 'missing' : `${age} s away from the time of receipt`}; a sender whose t drifts this far comes closer to the five minutes after which receivers reject it.`,
          d,
        );
    },
  },
  {
    id: 'HOOK-027',
    level: 'must',
    rule: 'Events: Receiver verification step 4; Response and retry behaviour',
    section,
    title:
      'no delivery arrives with a signature t older than five minutes (every receiver following the document rejects it, so it could never be delivered)',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const hook = ctx.hooks.hook('stale-t');
      await paidSession(ctx, org, { hook });
      const d = await firstDelivery(ctx, hook);
      const age = signatureAge(d);
      if (age !== undefined && age > TOLERANCE_S)
        failWith(
          `The signature's t was ${age} s old when the delivery arrived; receivers reject t older than ${TOLERANCE_S} s, so this delivery can never be accepted.`,
          d,
        );
    },
  },
  {
    id: 'HOOK-006',
    level: 'must',
    rule: 'Events: Event kinds (no event for failure)',
    section,
    title: 'a declined attempt sends no webhook',
    requires: PAYS_AND_RECORDS,
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const hook = ctx.hooks.hook('declined');
      const session = await ctx.api.session(org, { checkoutMethod: 'card', webhookUrl: hook.url });
      await ctx.target.pay(org, session.id, 'card', 'declined');
      await ctx.target.pay(org, session.id, 'card', 'pending');
      await expectNothingDelivered(ctx, hook, session.id, 'A declined (then pending) attempt sends no webhook');
    },
  },
  {
    id: 'HOOK-007',
    level: 'must',
    rule: 'States rule 3; Events: Event kinds (none for expiry)',
    section,
    title: 'a session that expires unpaid sends no webhook',
    requires: ['createOrganisation', 'advanceClock', 'webhookDeliveries'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const hook = ctx.hooks.hook('expired');
      const session = await ctx.api.session(org, { webhookUrl: hook.url });
      await ctx.target.advanceClock(org, 24 * 3600 + 60);
      const read = await ctx.api.readSession(org, session.id);
      const status = at(read.json, 'status');
      expect(status === 'expired', `The session must read expired after 24 hours; received ${show(status)}.`, read);
      await ctx.target.advanceClock(org, 3600);
      await expectNothingDelivered(ctx, hook, session.id, 'An expired session sends no webhook');
    },
  },
  {
    id: 'HOOK-008',
    level: 'must',
    rule: 'Events: Delivery target (a payment without webhookUrl notifies nobody)',
    section,
    title: 'a payment created without webhookUrl notifies nobody (the target lists no delivery)',
    requires: PAYS_AND_RECORDS,
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const { session } = await paidSession(ctx, org, { rail: 'open_banking' });
      await expectNothingDelivered(ctx, undefined, session.id, 'A payment without webhookUrl notifies nobody');
    },
  },
  attemptsCheck({
    id: 'HOOK-010',
    rail: 'card',
    title: 'card rail, receiver answers 500: retried, at most three attempts in total',
    rule: 'Response and retry behaviour: Card rail',
    behaviour: answer(500),
    judge: retried,
  }),
  attemptsCheck({
    id: 'HOOK-011',
    rail: 'card',
    title: 'card rail, receiver answers 408: retried (not final), at most three attempts',
    rule: 'Response and retry behaviour: Final failures',
    behaviour: answer(408),
    judge: retried,
  }),
  attemptsCheck({
    id: 'HOOK-012',
    rail: 'card',
    title: 'card rail, receiver answers 429: retried (not final), at most three attempts',
    rule: 'Response and retry behaviour: Final failures',
    behaviour: answer(429),
    judge: retried,
  }),
  attemptsCheck({
    id: 'HOOK-013',
    rail: 'card',
    title: 'card rail, receiver answers 400: final, no retry',
    rule: 'Response and retry behaviour: Final failures',
    behaviour: answer(400),
    judge: once('A 4xx other than 408 or 429 is final'),
  }),
  attemptsCheck({
    id: 'HOOK-014',
    rail: 'card',
    title: 'card rail, receiver holds its answer past 5 s: a failed delivery, retried',
    rule: 'Response and retry behaviour: Wait time',
    behaviour: (n) => (n === 1 ? { holdMs: HOLD_MS } : { status: 200 }),
    judge: retried,
    slow: true,
  }),
  attemptsCheck({
    id: 'HOOK-015',
    rail: 'open_banking',
    title: 'open banking rail, receiver answers 500: one attempt, no retry',
    rule: 'Response and retry behaviour: Open banking rail',
    behaviour: answer(500),
    judge: oneOpenBankingAttempt,
  }),
  attemptsCheck({
    id: 'HOOK-016',
    rail: 'open_banking',
    title: 'open banking rail, receiver holds its answer past 5 s: one attempt, no retry',
    rule: 'Response and retry behaviour: Open banking rail',
    behaviour: () => ({ holdMs: HOLD_MS }),
    judge: oneOpenBankingAttempt,
    slow: true,
  }),
  attemptsCheck({
    id: 'HOOK-017',
    rail: 'open_banking',
    title: 'open banking rail, receiver answers 429: one attempt, no retry',
    rule: 'Response and retry behaviour: Open banking rail',
    behaviour: answer(429),
    judge: oneOpenBankingAttempt,
  }),
  attemptsCheck({
    id: 'HOOK-018',
    rail: 'card',
    title: 'card rail, receiver answers 500 then 200: delivered on the retry, no attempt after the success fails',
    rule: 'Response and retry behaviour: Success',
    behaviour: answer(500, 200),
    judge: (n) => (n < 2 ? 'A card delivery that failed with 500 must be retried' : undefined),
  }),
  attemptsCheck({
    id: 'HOOK-019',
    rail: 'open_banking',
    title: 'open banking rail, receiver answers 408: one attempt, no retry',
    rule: 'Response and retry behaviour: Open banking rail',
    behaviour: answer(408),
    judge: oneOpenBankingAttempt,
  }),
  attemptsCheck({
    id: 'HOOK-026',
    rail: 'open_banking',
    title: 'open banking rail, receiver answers 400: one attempt, no retry',
    rule: 'Response and retry behaviour: Open banking rail',
    behaviour: answer(400),
    judge: oneOpenBankingAttempt,
  }),
  slowAnswerCheck('HOOK-028', 'card'),
  slowAnswerCheck('HOOK-029', 'open_banking'),
  {
    id: 'HOOK-020',
    level: 'must',
    rule: 'Webhook signing secret: Rotation',
    section: 'Webhook signing secret',
    title: 'after rotation, deliveries verify with the new secret and not with the old one',
    requires: ['createOrganisation', 'rotateWebhookSecret', 'attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const old = secretOf(org);
      const hook = ctx.hooks.hook('rotated');
      const session = await ctx.api.session(org, { checkoutMethod: 'card', webhookUrl: hook.url });
      const rotated = await ctx.target.rotateWebhookSecret(org);
      await ctx.target.pay(org, session.id, 'card');
      const d = await firstDelivery(ctx, hook);
      expectSigned(d, rotated, 'a delivery after rotation, checked with the new secret');
      if (verifies(d, old))
        failWith('A delivery after rotation still verifies with the old secret (rotation has no overlap).', d);
    },
  },
  {
    id: 'HOOK-021',
    level: 'must',
    rule: 'Events: Signature header (unsigned case)',
    section,
    title:
      'when the signing secret cannot be resolved, the delivery is still sent, with no Service-Signature header at all',
    requires: ['createOrganisation', 'injectFault', 'attempt', 'webhookDeliveries'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      await ctx.target.injectFault(org, 'signing_secret_unavailable');
      const hook = ctx.hooks.hook('unsigned');
      const { session } = await paidSession(ctx, org, { hook, rail: 'open_banking' });
      const [d] = await ctx.hooks.waitFor(hook, 1, 10_000);
      if (!d) fail('No delivery arrived: an unsigned delivery must still be sent.');
      if ('service-signature' in d.headers)
        failWith(
          `The unsigned delivery must have no Service-Signature header; it had ${show(d.headers['service-signature'])}.`,
          d,
        );
      if (at(d.body, 'checkoutSessionId') !== session.id || at(d.body, 'event') !== 'checkout_session.completed')
        failWith('The unsigned delivery must still carry the event payload.', d);
      const records = await ctx.target.deliveries({ checkoutSessionId: session.id });
      const unsigned = records.find((r) => r?.url === hook.url) ?? records[0];
      if (!unsigned) fail('The target delivered, but its delivery records list no attempt.');
      if (unsigned.signed !== false)
        fail(
          `The target's delivery record says signed: ${show(unsigned.signed)} for a delivery sent with no Service-Signature header (expected false).`,
        );
    },
  },
  {
    id: 'HOOK-022',
    level: 'must',
    rule: 'Events: Legacy payload; Versioning 3',
    section,
    title:
      'a transaction created through POST /api/transaction gets the legacy body: only transactionId and foreignTransactionId, no event, no signature',
    requires: ['attempt'],
    async run(ctx) {
      const { d } = await legacyDelivery(ctx, 'legacy');
      if (!isObject(d.body))
        failWith('The legacy body must be a JSON object with transactionId and foreignTransactionId.', d);
      if ('event' in d.body) failWith(`The legacy body has no event field; it has event ${show(d.body.event)}.`, d);
      const keys = Object.keys(d.body).sort();
      if (keys.join(',') !== 'foreignTransactionId,transactionId')
        failWith(
          `The legacy body must have only transactionId and foreignTransactionId; it has ${keys.join(', ') || 'no field'}.`,
          d,
        );
      if ('service-signature' in d.headers)
        failWith('The legacy body must be sent with no Service-Signature header.', d);
    },
  },
  {
    id: 'HOOK-025',
    level: 'assumption',
    rule: 'Events: Legacy payload (request shape of POST /api/transaction is modelled)',
    section,
    title:
      'the legacy body names the transaction POST /api/transaction answered and the foreignTransactionId given in the (modelled) request',
    requires: ['attempt'],
    async run(ctx) {
      const { d, transactionId } = await legacyDelivery(ctx, 'legacy-echo');
      if (at(d.body, 'transactionId') !== transactionId)
        failWith(
          `The legacy body names transaction ${show(at(d.body, 'transactionId'))}; POST /api/transaction answered ${transactionId}.`,
          d,
        );
      if (at(d.body, 'foreignTransactionId') !== 'legacy-1')
        failWith(
          `The legacy body has foreignTransactionId ${show(at(d.body, 'foreignTransactionId'))}; the request gave "legacy-1".`,
          d,
        );
    },
  },
  {
    id: 'HOOK-023',
    level: 'assumption',
    rule: 'Events: Payload checkoutSessionId (null for a payment link)',
    section,
    title: 'a paid payment link sends a signed event with checkoutSessionId null and transactionId = the link id',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const secret = secretOf(org);
      const hook = ctx.hooks.hook('link');
      const created = await ctx.api.send('POST', '/api/payment-links', {
        token: await ctx.api.token(org),
        json: {
          amount: { total: 15 },
          creditorReference: { reference: 'LINK-1' },
          redirectUrl: 'https://shop.example.com/paid',
          checkoutMethod: 'card',
          webhookUrl: hook.url,
        },
      });
      ctx.hooks.skipWhenRefused(created, hook.url);
      expectStatus(created, 200, 'POST /api/payment-links (assumed request shape)');
      const id = text(created.json, 'id');
      expect(id, 'A created payment link must have an id.', created);
      ctx.api.remember(org, created);
      await ctx.target.attempt(org, { kind: 'payment-link', id }, 'card', 'succeeded');
      const [d] = await ctx.hooks.waitFor(hook, 1, 10_000);
      if (!d) fail('No webhook arrived within 10 s of the link being paid.');
      expectSigned(d, secret, 'a payment link delivery');
      if (at(d.body, 'checkoutSessionId') !== null || at(d.body, 'transactionId') !== id)
        failWith(`Expected checkoutSessionId null and transactionId ${id}.`, d);
    },
  },
  {
    id: 'HOOK-024',
    level: 'must',
    rule: 'Webhook signing secret: Rotation (deliveries in flight)',
    section: 'Webhook signing secret',
    title: 'a delivery retried after rotation is signed with the new secret only',
    requires: ['createOrganisation', 'rotateWebhookSecret', 'attempt', 'advanceClock'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const old = secretOf(org);
      const hook = ctx.hooks.hook('rotated-retry', answer(500, 200));
      await paidSession(ctx, org, { hook });
      const first = await firstDelivery(ctx, hook);
      expectSigned(first, old, 'the first attempt, before rotation');
      const rotated = await ctx.target.rotateWebhookSecret(org);
      const retry = (await untilAttempt(ctx, org, hook, 2))[1];
      if (!retry)
        failWith(
          'The card delivery was not attempted again after a 500, so the retry after rotation cannot be seen.',
          first,
        );
      expectSigned(retry, rotated, 'the retry after rotation, checked with the new secret');
      if (verifies(retry, old))
        failWith('The retry after rotation still verifies with the old secret (rotation has no overlap).', retry);
    },
  },
];

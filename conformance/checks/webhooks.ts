/**
 * The payment lifecycle and its webhooks, observed at the suite's own receiver and
 * verified independently of the target (client/webhooks.ts with the organisation's
 * secret). Service document: States and transitions; Redirect rule; Events (delivery
 * target, event kinds, payload, legacy payload, signature header, response and retry
 * behaviour); Webhook signing secret (rotation).
 *
 * Time moves through the sandbox clock: after each failed attempt the clock is advanced
 * step by step until the next attempt arrives or every step has passed. Repeated
 * deliveries of a delivered event are allowed (Duplicates); after a failed or final
 * attempt, every further delivery counts as an attempt.
 */
import { verifyWebhook, WebhookVerificationError } from '@payment-service/client/webhooks';
import type { CheckContext, Hook, Org } from '../context.ts';
import { attemptsOf, type Behaviour, type Delivery } from '../receiver.ts';
import { CheckFailure, CheckSkipped, type Check } from '../types.ts';

const section = 'Events';
const lifecycleSection = 'States and transitions';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Clock steps tried, in turn, to bring on the next attempt (1 min, 5 min, 1 h, 1 day in total). */
const CLOCK_STEPS = [60, 240, 3300, 82800];
const HOLD_MS = 7000; // longer than the five seconds the service waits

const answer =
  (...statuses: number[]): Behaviour =>
  (n) => ({ status: statuses[Math.min(n, statuses.length) - 1]! });

async function paidSession(
  ctx: CheckContext,
  org: Org,
  options: { rail?: 'card' | 'open_banking'; hook?: Hook; patch?: Record<string, unknown> } = {},
) {
  const rail = options.rail ?? 'card';
  const session = await ctx.session(org, {
    checkoutMethod: rail,
    ...(options.hook ? { webhookUrl: options.hook.url } : {}),
    ...(options.patch ?? {}),
  });
  const paid = await ctx.pay(session.id, rail, 'succeeded');
  return { session, paid };
}

/** The target's own record of finished attempts (sandbox API), used only to stop early. */
async function lastRecordFinal(ctx: CheckContext, sessionId: string, attempts: number): Promise<boolean> {
  const deadline = Date.now() + HOLD_MS;
  for (;;) {
    const deliveries = await ctx.deliveryRecords({ checkoutSessionId: sessionId });
    if (deliveries.length >= attempts) return Boolean(deliveries.at(-1)?.final);
    if (Date.now() > deadline) return false;
    await ctx.settle(100);
  }
}

/**
 * Every attempt the target makes for one payment: waits for the first, then moves the
 * organisation's clock until no further attempt comes (or more than `cap` came).
 */
async function allAttempts(ctx: CheckContext, org: Org, hook: Hook, sessionId: string, cap = 5): Promise<Delivery[]> {
  let got = await ctx.waitForDeliveries(hook, 1, 10_000);
  if (got.length === 0) return got;
  for (;;) {
    if (got.length >= cap) return got;
    const final = await lastRecordFinal(ctx, sessionId, got.length);
    let progressed = false;
    for (const step of final ? [86400] : CLOCK_STEPS) {
      await ctx.advanceClock(org, step);
      const next = await ctx.waitForDeliveries(hook, got.length + 1, ctx.run.settings.settleMs);
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
async function untilAttempt(ctx: CheckContext, org: Org, hook: Hook, count: number): Promise<Delivery[]> {
  let got = await ctx.waitForDeliveries(hook, 1, 10_000);
  for (const step of [...CLOCK_STEPS, ...CLOCK_STEPS]) {
    if (got.length >= count) return got;
    await ctx.advanceClock(org, step);
    got = await ctx.waitForDeliveries(hook, count, ctx.run.settings.settleMs);
  }
  return got;
}

/**
 * That nothing was delivered for a session: nothing at the suite's receiver after the
 * delivery wait, and nothing in the target's own delivery records (sandbox API).
 */
async function expectNothingDelivered(
  ctx: CheckContext,
  hook: Hook | undefined,
  sessionId: string,
  what: string,
): Promise<void> {
  await ctx.settle();
  const got = hook ? ctx.received(hook) : [];
  if (got.length > 0) failWith(`${what}: a webhook arrived at the receiver.`, got[0]);
  const records = await ctx.deliveryRecords({ checkoutSessionId: sessionId });
  if (records.length > 0)
    ctx.fail(
      `${what}: the target's delivery records list ${records.length} attempt${records.length === 1 ? '' : 's'} (to ${[...new Set(records.map((r) => String(r?.url)))].join(', ')}).`,
    );
}

/**
 * A legacy transaction paid, and its delivery. The request and response shapes of POST
 * /api/transaction are our modelling (the document does not show them): when the target
 * does not accept the modelled request or answers without a UUID transactionId, the
 * legacy path cannot be reached and the check is skipped.
 */
async function legacyDelivery(ctx: CheckContext, label: string): Promise<{ d: Delivery; transactionId: string }> {
  const org = await ctx.organisation();
  const hook = ctx.hook(label);
  const created = await ctx.api('POST', '/api/transaction', {
    token: await ctx.token(org),
    json: {
      amount: { total: 42 },
      creditorReference: { reference: 'LEGACY-1' },
      redirectUrl: 'https://shop.example.com/paid',
      checkoutMethod: 'card',
      webhookUrl: hook.url,
      foreignTransactionId: 'legacy-1',
    },
  });
  ctx.skipWhenReceiverRefused(created, hook.url);
  const transactionId = created.json?.transactionId;
  if (created.status !== 200 || typeof transactionId !== 'string' || !UUID.test(transactionId)) {
    throw new CheckSkipped(
      `POST /api/transaction did not accept the modelled request with a UUID transactionId (status ${created.status}); the legacy path cannot be reached`,
    );
  }
  await ctx.sandbox('POST', `/sandbox/transactions/${encodeURIComponent(transactionId)}/attempts`, {
    rail: 'card',
    outcome: 'succeeded',
  });
  const [d] = await ctx.waitForDeliveries(hook, 1, 10_000);
  if (!d) return ctx.fail('No legacy webhook arrived within 10 s of the payment completing.');
  return { d, transactionId };
}

function describeDelivery(d: Delivery): string {
  const headers = Object.entries(d.headers)
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join('\n');
  return `${d.method} ${d.path} (attempt ${d.attempt} at the receiver)\n${headers}\n\n${d.raw.toString('utf8')}`;
}

function deliveryEvidence(d: Delivery | undefined) {
  return d ? { request: describeDelivery(d), response: '(the suite’s receiver)', curl: '' } : undefined;
}

/** Fails the check with the delivery as its evidence. */
function failWith(message: string, d?: Delivery): never {
  throw new CheckFailure(message, deliveryEvidence(d));
}

function expectSigned(d: Delivery, secret: string, what: string) {
  const header = d.headers['service-signature'];
  if (typeof header !== 'string') failWith(`${what}: the delivery has no Service-Signature header.`, d);
  try {
    verifyWebhook(d.raw, header, secret, { toleranceSeconds: 600 });
  } catch (error) {
    const reason = error instanceof WebhookVerificationError ? `${error.name}: ${error.message}` : String(error);
    failWith(`${what}: the signature does not verify with the organisation's secret over the raw body (${reason}).`, d);
  }
}

function attemptsCheck(
  id: string,
  rail: 'card' | 'open_banking',
  title: string,
  behaviour: Behaviour,
  judge: (n: number) => string | undefined,
  options: { slow?: boolean; rule: string },
): Check {
  return {
    id,
    level: 'must',
    rule: options.rule,
    section,
    title,
    needs: ['sandbox'],
    ...(options.slow ? { slow: true } : {}),
    async run(ctx) {
      const org = await ctx.organisation();
      const hook = ctx.hook(rail, behaviour);
      const { session } = await paidSession(ctx, org, { rail, hook });
      const got = attemptsOf(await allAttempts(ctx, org, hook, session.id));
      const problem = judge(got.length);
      if (problem) failWith(`${problem} (received ${got.length} attempt${got.length === 1 ? '' : 's'}).`, got.at(-1));
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

export const webhookChecks: Check[] = [
  {
    id: 'LIFE-001',
    level: 'must',
    rule: 'States rule 4; Resources: transactionType',
    section: lifecycleSection,
    title: 'a succeeded attempt completes the session; transactionType tells the rail of a both session',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      for (const rail of ['card', 'open_banking'] as const) {
        const session = await ctx.session(org, { checkoutMethod: 'both' });
        await ctx.pay(session.id, rail);
        const read = await ctx.readSession(org, session.id);
        ctx.expectStatus(read, 200, 'reading a paid session');
        ctx.expect(
          read.json?.status === 'completed',
          `A session paid by ${rail} must read completed; received ${JSON.stringify(read.json?.status)}.`,
          read,
        );
        ctx.expect(
          read.json?.transactionType === rail,
          `transactionType must be ${rail} for a both session paid by ${rail}; received ${JSON.stringify(read.json?.transactionType)}.`,
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
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      const session = await ctx.session(org, { checkoutMethod: 'card' });
      await ctx.pay(session.id, 'card', 'declined');
      const failed = await ctx.readSession(org, session.id);
      ctx.expect(
        failed.json?.status === 'failed',
        `After a declined attempt status must be failed; received ${JSON.stringify(failed.json?.status)}.`,
        failed,
      );
      await ctx.pay(session.id, 'card', 'succeeded');
      const done = await ctx.readSession(org, session.id);
      ctx.expect(
        done.json?.status === 'completed',
        `A retry after a decline must be able to complete; received ${JSON.stringify(done.json?.status)}.`,
        done,
      );
    },
  },
  {
    id: 'LIFE-003',
    level: 'must',
    rule: 'POST /api/checkout-sessions: Redirect rule',
    section: lifecycleSection,
    title:
      "on success the redirect carries transactionId and checkoutSessionId and keeps the merchant's own query parameters",
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      const redirectUrl = 'https://shop.example.com/checkout/done?order=1001&lang=en';
      const session = await ctx.session(org, { checkoutMethod: 'card', redirectUrl });
      const paid = await ctx.pay(session.id, 'card');
      let to: URL;
      try {
        to = new URL(paid.redirectTo);
      } catch {
        return ctx.fail(
          `The payer must be sent to redirectUrl on success; the sandbox gave redirectTo ${JSON.stringify(paid.redirectTo)}.`,
        );
      }
      const q = to.searchParams;
      ctx.expect(
        `${to.origin}${to.pathname}` === 'https://shop.example.com/checkout/done',
        `The redirect goes to ${to.origin}${to.pathname}, not to redirectUrl.`,
      );
      ctx.expect(
        q.get('order') === '1001' && q.get('lang') === 'en',
        `The merchant's own query parameters (order=1001, lang=en) must be kept: ${paid.redirectTo}`,
      );
      ctx.expect(
        q.get('checkoutSessionId') === session.id,
        `checkoutSessionId=${session.id} must be appended: ${paid.redirectTo}`,
      );
      ctx.expect(UUID.test(q.get('transactionId') ?? ''), `transactionId=<uuid> must be appended: ${paid.redirectTo}`);
    },
  },
  {
    id: 'HOOK-001',
    level: 'must',
    rule: 'Events: Signature header',
    section,
    title:
      'completion sends a signed POST application/json that verifies with the organisation’s secret over the raw bytes',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const hook = ctx.hook('signed');
      await paidSession(ctx, org, { hook });
      const got = await ctx.waitForDeliveries(hook, 1, 10_000);
      if (got.length === 0) ctx.fail('No webhook arrived within 10 s of the payment completing.');
      for (const d of got) {
        if (d.method !== 'POST') failWith(`Deliveries must be POST; received ${d.method}.`, d);
        if (!/^application\/json\b/i.test(String(d.headers['content-type'])))
          failWith(`Deliveries must be application/json; received ${String(d.headers['content-type'])}.`, d);
        expectSigned(d, org.webhookSigningSecret!, 'a completed payment’s delivery');
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
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const hook = ctx.hook('payload');
      const { session, paid } = await paidSession(ctx, org, { hook, patch: { foreignTransactionId: 'order-hook-2' } });
      const [d] = await ctx.waitForDeliveries(hook, 1, 10_000);
      if (!d) return ctx.fail('No webhook arrived within 10 s of the payment completing.');
      const body = d.body ?? {};
      const redirectTransaction = paid.redirectTo ? new URL(paid.redirectTo).searchParams.get('transactionId') : null;
      const problems: string[] = [];
      if (body.event !== 'checkout_session.completed')
        problems.push(`event is ${JSON.stringify(body.event)}, expected "checkout_session.completed"`);
      if (
        typeof body.createdAt !== 'string' ||
        Number.isNaN(Date.parse(body.createdAt)) ||
        !/(Z|[+-]00:?00)$/.test(body.createdAt)
      )
        problems.push(`createdAt ${JSON.stringify(body.createdAt)} is not an ISO 8601 UTC timestamp`);
      if (body.checkoutSessionId !== session.id)
        problems.push(`checkoutSessionId is ${JSON.stringify(body.checkoutSessionId)}, expected ${session.id}`);
      if (typeof body.transactionId !== 'string' || !UUID.test(body.transactionId))
        problems.push(`transactionId ${JSON.stringify(body.transactionId)} is not a UUID`);
      else if (redirectTransaction && body.transactionId !== redirectTransaction)
        problems.push(`transactionId ${body.transactionId} differs from the redirect's ${redirectTransaction}`);
      if (body.foreignTransactionId !== 'order-hook-2')
        problems.push(`foreignTransactionId is ${JSON.stringify(body.foreignTransactionId)}, expected "order-hook-2"`);
      if (problems.length > 0) failWith(`The payload is not as documented: ${problems.join('; ')}.`, d);
    },
  },
  {
    id: 'HOOK-003',
    level: 'must',
    rule: 'Events: Payload foreignTransactionId',
    section,
    title: 'foreignTransactionId is null in the payload when none was given',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const hook = ctx.hook('no-foreign');
      await paidSession(ctx, org, { hook });
      const [d] = await ctx.waitForDeliveries(hook, 1, 10_000);
      if (!d) return ctx.fail('No webhook arrived within 10 s of the payment completing.');
      if (!d.body || !('foreignTransactionId' in d.body) || d.body.foreignTransactionId !== null)
        failWith(
          `foreignTransactionId must be present and null; received ${JSON.stringify(d.body?.foreignTransactionId)}.`,
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
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const hook = ctx.hook('created-at', answer(500, 200));
      await paidSession(ctx, org, { hook });
      const got = await untilAttempt(ctx, org, hook, 2);
      if (got.length < 2)
        return failWith(
          `The card delivery was not attempted again after a 500 (received ${got.length} attempt), so createdAt stability cannot be seen.`,
          got[0],
        );
      const [a, b] = got;
      if (a!.body?.createdAt !== b!.body?.createdAt)
        failWith(
          `createdAt changed between attempts: ${JSON.stringify(a!.body?.createdAt)} then ${JSON.stringify(b!.body?.createdAt)}.`,
          b,
        );
      if (a!.body?.transactionId !== b!.body?.transactionId)
        failWith('transactionId changed between attempts of the same event.', b);
    },
  },
  {
    id: 'HOOK-005',
    level: 'should',
    rule: 'Events: Receiver verification step 4',
    section,
    title: 'the signature timestamp t is current (receivers reject t older than five minutes)',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const hook = ctx.hook('fresh-t');
      await paidSession(ctx, org, { hook, rail: 'open_banking' });
      const [d] = await ctx.waitForDeliveries(hook, 1, 10_000);
      if (!d) return ctx.fail('No webhook arrived within 10 s of the payment completing.');
      const t = Number(/(?:^|,)\s*t=(\d+)/.exec(String(d.headers['service-signature'] ?? ''))?.[1]);
      const age = Math.round(d.receivedAt / 1000 - t);
      if (!Number.isFinite(t) || Math.abs(age) > 300)
        failWith(
          `t is ${Number.isFinite(t) ? `${age} s away from the time of receipt` : 'missing'}; receivers following the document reject it.`,
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
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      const hook = ctx.hook('declined');
      const session = await ctx.session(org, { checkoutMethod: 'card', webhookUrl: hook.url });
      await ctx.pay(session.id, 'card', 'declined');
      await ctx.pay(session.id, 'card', 'pending');
      await expectNothingDelivered(ctx, hook, session.id, 'A declined (then pending) attempt sends no webhook');
    },
  },
  {
    id: 'HOOK-007',
    level: 'must',
    rule: 'States rule 3; Events: Event kinds (none for expiry)',
    section,
    title: 'a session that expires unpaid sends no webhook',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const hook = ctx.hook('expired');
      const session = await ctx.session(org, { webhookUrl: hook.url });
      await ctx.advanceClock(org, 24 * 3600 + 60);
      const read = await ctx.readSession(org, session.id);
      ctx.expect(
        read.json?.status === 'expired',
        `The session must read expired after 24 hours; received ${JSON.stringify(read.json?.status)}.`,
        read,
      );
      await ctx.advanceClock(org, 3600);
      await expectNothingDelivered(ctx, hook, session.id, 'An expired session sends no webhook');
    },
  },
  {
    id: 'HOOK-008',
    level: 'must',
    rule: 'Events: Delivery target (a payment without webhookUrl notifies nobody)',
    section,
    title: 'a payment created without webhookUrl notifies nobody (the sandbox lists no delivery)',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      const { session } = await paidSession(ctx, org, { rail: 'open_banking' });
      await expectNothingDelivered(ctx, undefined, session.id, 'A payment without webhookUrl notifies nobody');
    },
  },
  attemptsCheck(
    'HOOK-010',
    'card',
    'card rail, receiver answers 500: retried, at most three attempts in total',
    answer(500),
    retried,
    { rule: 'Response and retry behaviour: Card rail' },
  ),
  attemptsCheck(
    'HOOK-011',
    'card',
    'card rail, receiver answers 408: retried (not final), at most three attempts',
    answer(408),
    retried,
    { rule: 'Response and retry behaviour: Final failures' },
  ),
  attemptsCheck(
    'HOOK-012',
    'card',
    'card rail, receiver answers 429: retried (not final), at most three attempts',
    answer(429),
    retried,
    { rule: 'Response and retry behaviour: Final failures' },
  ),
  attemptsCheck(
    'HOOK-013',
    'card',
    'card rail, receiver answers 400: final, no retry',
    answer(400),
    once('A 4xx other than 408 or 429 is final'),
    { rule: 'Response and retry behaviour: Final failures' },
  ),
  attemptsCheck(
    'HOOK-014',
    'card',
    'card rail, receiver holds its answer past 5 s: a failed delivery, retried',
    (n) => (n === 1 ? { holdMs: HOLD_MS } : { status: 200 }),
    retried,
    { slow: true, rule: 'Response and retry behaviour: Wait time' },
  ),
  attemptsCheck(
    'HOOK-015',
    'open_banking',
    'open banking rail, receiver answers 500: one attempt, no retry',
    answer(500),
    once('The open banking rail makes one attempt'),
    { rule: 'Response and retry behaviour: Open banking rail' },
  ),
  attemptsCheck(
    'HOOK-016',
    'open_banking',
    'open banking rail, receiver holds its answer past 5 s: one attempt, no retry',
    () => ({ holdMs: HOLD_MS }),
    once('The open banking rail makes one attempt'),
    { slow: true, rule: 'Response and retry behaviour: Open banking rail' },
  ),
  attemptsCheck(
    'HOOK-017',
    'open_banking',
    'open banking rail, receiver answers 429: one attempt, no retry',
    answer(429),
    once('The open banking rail makes one attempt'),
    { rule: 'Response and retry behaviour: Open banking rail' },
  ),
  attemptsCheck(
    'HOOK-018',
    'card',
    'card rail, receiver answers 500 then 200: delivered on the retry, no attempt after the success fails',
    answer(500, 200),
    (n) => (n < 2 ? 'A card delivery that failed with 500 must be retried' : undefined),
    { rule: 'Response and retry behaviour: Success' },
  ),
  attemptsCheck(
    'HOOK-019',
    'open_banking',
    'open banking rail, receiver answers 408: one attempt, no retry',
    answer(408),
    once('The open banking rail makes one attempt'),
    { rule: 'Response and retry behaviour: Open banking rail' },
  ),
  attemptsCheck(
    'HOOK-026',
    'open_banking',
    'open banking rail, receiver answers 400: one attempt, no retry',
    answer(400),
    once('The open banking rail makes one attempt'),
    { rule: 'Response and retry behaviour: Open banking rail' },
  ),
  {
    id: 'HOOK-020',
    level: 'must',
    rule: 'Webhook signing secret: Rotation',
    section: 'Webhook signing secret',
    title: 'after rotation, deliveries verify with the new secret and not with the old one',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const old = org.webhookSigningSecret!;
      const hook = ctx.hook('rotated');
      const session = await ctx.session(org, { checkoutMethod: 'card', webhookUrl: hook.url });
      const { webhookSigningSecret } = await ctx.sandbox('POST', `/sandbox/organisations/${org.id}/webhook-secret`);
      ctx.expect(
        typeof webhookSigningSecret === 'string' && webhookSigningSecret !== old,
        'Rotation must give a new secret.',
      );
      await ctx.pay(session.id, 'card');
      const [d] = await ctx.waitForDeliveries(hook, 1, 10_000);
      if (!d) return ctx.fail('No webhook arrived within 10 s of the payment completing.');
      expectSigned(d, webhookSigningSecret, 'a delivery after rotation, checked with the new secret');
      let oldVerifies = true;
      try {
        verifyWebhook(d.raw, String(d.headers['service-signature']), old, { toleranceSeconds: 600 });
      } catch {
        oldVerifies = false;
      }
      if (oldVerifies)
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
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      await ctx.sandbox('POST', '/sandbox/faults', { kind: 'signing_secret_unavailable', orgId: org.id });
      const hook = ctx.hook('unsigned');
      const { session } = await paidSession(ctx, org, { hook, rail: 'open_banking' });
      const [d] = await ctx.waitForDeliveries(hook, 1, 10_000);
      if (!d) return ctx.fail('No delivery arrived: an unsigned delivery must still be sent.');
      if ('service-signature' in d.headers)
        failWith(
          `The unsigned delivery must have no Service-Signature header; it had ${JSON.stringify(d.headers['service-signature'])}.`,
          d,
        );
      if (d.body?.checkoutSessionId !== session.id || d.body?.event !== 'checkout_session.completed')
        failWith('The unsigned delivery must still carry the event payload.', d);
      const records = await ctx.deliveryRecords({ checkoutSessionId: session.id });
      const unsignedRecord = records.find((r) => r?.url === hook.url) ?? records[0];
      if (!unsignedRecord)
        return ctx.fail(
          'The target delivered, but its delivery records (GET /sandbox/webhook-deliveries) list no attempt.',
        );
      if (unsignedRecord.signed !== false)
        ctx.fail(
          `The target's delivery record says signed: ${JSON.stringify(unsignedRecord.signed)} for a delivery sent with no Service-Signature header (expected false).`,
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
    needs: ['sandbox'],
    async run(ctx) {
      const { d } = await legacyDelivery(ctx, 'legacy');
      const keys = Object.keys(d.body ?? {}).sort();
      if (d.body === undefined || typeof d.body !== 'object' || Array.isArray(d.body))
        failWith('The legacy body must be a JSON object with transactionId and foreignTransactionId.', d);
      if ('event' in d.body)
        failWith(`The legacy body has no event field; it has event ${JSON.stringify(d.body.event)}.`, d);
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
    needs: ['sandbox'],
    async run(ctx) {
      const { d, transactionId } = await legacyDelivery(ctx, 'legacy-echo');
      if (d.body?.transactionId !== transactionId)
        failWith(
          `The legacy body names transaction ${JSON.stringify(d.body?.transactionId)}; POST /api/transaction answered ${transactionId}.`,
          d,
        );
      if (d.body?.foreignTransactionId !== 'legacy-1')
        failWith(
          `The legacy body has foreignTransactionId ${JSON.stringify(d.body?.foreignTransactionId)}; the request gave "legacy-1".`,
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
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const hook = ctx.hook('link');
      const created = await ctx.api('POST', '/api/payment-links', {
        token: await ctx.token(org),
        json: {
          amount: { total: 15 },
          creditorReference: { reference: 'LINK-1' },
          redirectUrl: 'https://shop.example.com/paid',
          checkoutMethod: 'card',
          webhookUrl: hook.url,
        },
      });
      ctx.skipWhenReceiverRefused(created, hook.url);
      ctx.expectStatus(created, 200, 'POST /api/payment-links (assumed request shape)');
      await ctx.sandbox('POST', `/sandbox/payment-links/${encodeURIComponent(created.json.id)}/attempts`, {
        rail: 'card',
        outcome: 'succeeded',
      });
      const [d] = await ctx.waitForDeliveries(hook, 1, 10_000);
      if (!d) return ctx.fail('No webhook arrived within 10 s of the link being paid.');
      expectSigned(d, org.webhookSigningSecret!, 'a payment link delivery');
      if (d.body?.checkoutSessionId !== null || d.body?.transactionId !== created.json.id)
        failWith(`Expected checkoutSessionId null and transactionId ${created.json.id}.`, d);
    },
  },
  {
    id: 'HOOK-024',
    level: 'must',
    rule: 'Webhook signing secret: Rotation (deliveries in flight)',
    section: 'Webhook signing secret',
    title: 'a delivery retried after rotation is signed with the new secret only',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const old = org.webhookSigningSecret!;
      const hook = ctx.hook('rotated-retry', answer(500, 200));
      await paidSession(ctx, org, { hook });
      const [first] = await ctx.waitForDeliveries(hook, 1, 10_000);
      if (!first) return ctx.fail('No webhook arrived within 10 s of the payment completing.');
      expectSigned(first, old, 'the first attempt, before rotation');
      const { webhookSigningSecret } = await ctx.sandbox('POST', `/sandbox/organisations/${org.id}/webhook-secret`);
      const got = await untilAttempt(ctx, org, hook, 2);
      const retry = got[1];
      if (!retry)
        return failWith(
          'The card delivery was not attempted again after a 500, so the retry after rotation cannot be seen.',
          first,
        );
      expectSigned(retry, webhookSigningSecret, 'the retry after rotation, checked with the new secret');
      let oldVerifies = true;
      try {
        verifyWebhook(retry.raw, String(retry.headers['service-signature']), old, { toleranceSeconds: 600 });
      } catch {
        oldVerifies = false;
      }
      if (oldVerifies)
        failWith('The retry after rotation still verifies with the old secret (rotation has no overlap).', retry);
    },
  },
];

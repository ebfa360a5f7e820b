/**
 * The webhooks a payment produces, observed at the suite's own receiver (service
 * document: States and transitions 3-4; Events: delivery target, event kinds, payload,
 * legacy payload, signature header; Webhook signing secret): which events are sent, their
 * payload, their signature, and rotation of the secret.
 */
import { AdapterError, type Rail } from '../../../../core/adapter.ts';
import { expect, fail } from '../../assert.ts';
import { Api } from '../../context/api.ts';
import type { CheckContext, RunCheck } from '../../context/check-context.ts';
import type { Org } from '../../context/organisations.ts';
import type { Exchange } from '../../../../core/exchange.ts';
import { at, isObject, show } from '../../../../core/json.ts';
import { payloadProblems } from '../../../../rules/payload.ts';
import { verifies } from '../../../../rules/signature.ts';
import { CheckFailure, NoVerdict, SuiteTooLate } from '../../../../core/outcome.ts';
import type { Received } from '../../../../core/exchange.ts';
import {
  answer,
  expectNothingDelivered,
  expectSigned,
  expectUnixSeconds,
  FRESH_ALLOWANCE_S,
  failWith,
  firstDelivery,
  LEGACY_FOREIGN_ID,
  legacyDelivery,
  paidSession,
  secretOf,
  section,
  untilAttempt,
} from '../../deliveries.ts';
import { signatureAge, staleSignatureProblem } from '../../../../rules/signature.ts';

/**
 * How soon after a delivery arrives the receiver's read of the session must be back: the
 * service waits five seconds from sending for the answer, which goes once the read is
 * back, so the read gets three and transit and a busy machine the rest.
 */
const READ_AT_ARRIVAL_MS = 3000;

/** The statuses the document names for a session not (yet) paid: a read at delivery showing one contradicts the event. */
const UNPAID = new Set(['created', 'pending', 'failed', 'expired']);

/** What a read of the session made while its delivery waited for the answer showed, if it came back in time. */
type ReadAtArrival = { rail: Rail; d: Received; read?: Exchange };

/**
 * Reads the session back as a merchant does on the prompt, before answering the delivery.
 * A read that is not back within READ_AT_ARRIVAL_MS of the arrival is given up (and the
 * delivery answered), so the suite never turns its own slowness into a failed delivery.
 */
async function readAtArrival(
  ctx: CheckContext,
  token: string,
  sessionId: string,
  d: Received,
): Promise<Exchange | undefined> {
  const left = READ_AT_ARRIVAL_MS - (Date.now() - d.receivedAt);
  if (left <= 0) return undefined;
  // One try: a throttled read waited out would keep the delivery waiting past the service's wait.
  const api = new Api(ctx.run, ctx.id, AbortSignal.any([ctx.signal, AbortSignal.timeout(left)]), ctx.exchanges, 1);
  try {
    return await api.send('GET', `/api/checkout-sessions/${encodeURIComponent(sessionId)}`, { token, timeoutMs: left });
  } catch {
    return undefined;
  }
}

/** A paid session whose deliveries the receiver answers only after reading the session back; what each read showed. */
async function readsAtArrival(ctx: CheckContext, org: Org, token: string, rail: Rail): Promise<ReadAtArrival[]> {
  const seen: ReadAtArrival[] = [];
  const reads: Promise<void>[] = [];
  let sessionId = '';
  const hook = ctx.hooks.hook(`read-at-arrival-${rail}`, (_n, d) => {
    const read = readAtArrival(ctx, token, sessionId, d).then((r) => {
      seen.push({ rail, d, ...(r ? { read: r } : {}) });
    });
    reads.push(read);
    return read.then(() => ({ status: 200 }));
  });
  const session = await ctx.api.session(org, { checkoutMethod: rail, webhookUrl: hook.url });
  sessionId = session.id;
  await ctx.target.pay(org, session.id, rail, 'succeeded');
  await firstDelivery(ctx, hook);
  await Promise.all(reads);
  return seen;
}

/** Capabilities of a check that pays and reads the target's delivery records. */
const PAYS_AND_RECORDS = ['attempt', 'webhookDeliveries'] as const;

const checks: RunCheck[] = [
  {
    id: 'HOOK-001',
    clauses: [
      'receiver.post',
      'sig.header',
      'sig.format',
      'sig.digest',
      'secret.scope',
      'secret.distinct',
      'state.completed-webhook',
      'svc.hook',
      'target.test-mode',
      'conv.webhook-address',
      'ver.signature',
    ],
    section,
    title:
      'completion by card and by open banking each sends a signed POST application/json that verifies with the organisation’s secret over the raw bytes',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const secret = secretOf(org);
      expect(secret.startsWith('whsec_'), 'The organisation’s signing secret must have the prefix whsec_.');
      expect(
        secret !== org.keys.test.clientSecret && secret !== org.keys.live?.clientSecret,
        'The signing secret must be distinct from the client secret.',
      );
      // Reaching completed sends the webhook whichever rail the money moved on.
      const got: Received[] = [];
      for (const rail of ['card', 'open_banking'] as const) {
        const hook = ctx.hooks.hook(`signed-${rail}`);
        await paidSession(ctx, org, { hook, rail });
        const arrived = await ctx.hooks.waitFor(hook, 1);
        if (arrived.length === 0)
          fail(
            `No webhook arrived within ${ctx.run.settings.settleTimeoutMs / 1000} s of a payment by ${rail} completing.`,
          );
        got.push(...arrived);
      }
      for (const d of got) {
        if (d.method !== 'POST') failWith(`Deliveries must be POST; received ${d.method}.`, d);
        if (!/^application\/json\b/i.test(String(d.headers['content-type'])))
          failWith(`Deliveries must be application/json; received ${String(d.headers['content-type'])}.`, d);
        expectSigned(d, secret, 'a completed payment’s delivery', org);
      }
    },
  },
  {
    id: 'HOOK-002',
    clauses: [
      'payload.small',
      'payload.event',
      'payload.created',
      'payload.session',
      'payload.transaction',
      'payload.foreign-id',
      'event.completed',
      'target.no-mode',
      'svc.uuid',
      'res.transaction',
    ],
    section,
    title:
      'the payload has event, createdAt (when the payment completed), checkoutSessionId, transactionId (as in the redirect) and foreignTransactionId, and nothing saying test or live',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const hook = ctx.hooks.hook('payload');
      // Paid two seconds after creation, so an event createdAt that is the session's own
      // (not when the payment completed) shows even in whole seconds.
      const { session, paid } = await paidSession(ctx, org, {
        hook,
        patch: { foreignTransactionId: 'order-hook-2' },
        payAfterMs: 2100,
      });
      const d = await firstDelivery(ctx, hook);
      const found = payloadProblems(d.body, { checkoutSessionId: session.id, foreignTransactionId: 'order-hook-2' });
      const problems = found.map((p) => p.problem);
      const kept = (clause: string) => !found.some((p) => p.clause === clause);
      const createdAt = String(at(d.body, 'createdAt'));
      if (kept('payload.created')) {
        const read = await ctx.api.readSession(org, session.id);
        const sessionCreated = Date.parse(String(at(read.json, 'createdAt')));
        if (Date.parse(createdAt) < sessionCreated + 1000)
          problems.push(
            `createdAt ${createdAt} is not when the payment completed (two seconds after the session was created, at ${show(at(read.json, 'createdAt'))})`,
          );
      }
      const redirectTransaction =
        paid.redirectTo && URL.canParse(paid.redirectTo)
          ? new URL(paid.redirectTo).searchParams.get('transactionId')
          : null;
      const transactionId = at(d.body, 'transactionId');
      if (kept('payload.transaction') && redirectTransaction && transactionId !== redirectTransaction)
        problems.push(`transactionId ${String(transactionId)} differs from the redirect's ${redirectTransaction}`);
      if (problems.length > 0) failWith(`The payload is not as documented: ${problems.join('; ')}.`, d);
    },
  },
  {
    id: 'HOOK-003',
    clauses: ['payload.foreign-id'],
    section,
    title: 'foreignTransactionId is null in the payload when none was given',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const hook = ctx.hooks.hook('no-foreign');
      const { session } = await paidSession(ctx, org, { hook });
      const d = await firstDelivery(ctx, hook);
      const wrong = payloadProblems(d.body, { checkoutSessionId: session.id, foreignTransactionId: null }).find(
        (p) => p.clause === 'payload.foreign-id',
      );
      if (wrong) failWith(`${wrong.problem}: the key is always present, null when none was given.`, d);
    },
  },
  {
    id: 'HOOK-004',
    clauses: ['payload.created'],
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
    // The clause fixes unix seconds, not a bound on skew: the allowance is ours, so it only warns.
    level: 'should',
    clauses: ['sig.format'],
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
    clauses: ['sig.format', 'limit.signature-age'],
    section,
    title:
      't is unix seconds (within a day of arrival) and no delivery arrives with a t older than five minutes (every receiver following the document rejects it, so it could never be delivered)',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const hook = ctx.hooks.hook('stale-t');
      await paidSession(ctx, org, { hook });
      const d = await firstDelivery(ctx, hook);
      expectUnixSeconds(d, org);
      const stale = staleSignatureProblem(d);
      if (stale) failWith(stale, d);
    },
  },
  {
    id: 'HOOK-006',
    clauses: ['event.none', 'state.declined'],
    section,
    title: 'a declined attempt sends no webhook, and a payment still in flight no completed event',
    requires: PAYS_AND_RECORDS,
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const hook = ctx.hooks.hook('declined');
      const session = await ctx.api.session(org, { checkoutMethod: 'card', webhookUrl: hook.url });
      await ctx.target.pay(org, session.id, 'card', 'declined');
      await expectNothingDelivered(ctx, hook, session.id, 'A declined attempt sends no webhook');
      // Event values will be added, so one may say a payment is in flight; but only
      // checkout_session.completed means paid, and this one is not.
      await ctx.target.pay(org, session.id, 'card', 'pending');
      await ctx.hooks.settle();
      const completed = ctx.hooks.received(hook).find((d) => at(d.body, 'event') === 'checkout_session.completed');
      if (completed)
        failWith('A payment still in flight (pending) was announced as checkout_session.completed.', completed);
    },
  },
  {
    id: 'HOOK-007',
    clauses: ['event.none', 'state.expiry-silent'],
    section,
    title: 'a session that expires unpaid sends no webhook',
    requires: ['createOrganisation', 'advanceClock', 'webhookDeliveries'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const hook = ctx.hooks.hook('expired');
      const session = await ctx.api.session(org, { webhookUrl: hook.url });
      await ctx.target.advanceClock(org, 24 * 3600 + 60);
      const read = await ctx.api.readSessionUntil(org, session.id, 'expired');
      const status = at(read.json, 'status');
      expect(status === 'expired', `The session must read expired after 24 hours; received ${show(status)}.`, read);
      await ctx.target.advanceClock(org, 3600);
      await expectNothingDelivered(ctx, hook, session.id, 'An expired session sends no webhook');
    },
  },
  {
    id: 'HOOK-008',
    clauses: ['target.none', 'create.webhook-url', 'conv.webhook-address'],
    section,
    title: 'a payment created without webhookUrl notifies nobody (the target lists no delivery)',
    webhooks: false,
    requires: PAYS_AND_RECORDS,
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const { session } = await paidSession(ctx, org, { rail: 'open_banking' });
      await expectNothingDelivered(ctx, undefined, session.id, 'A payment without webhookUrl notifies nobody');
    },
  },
  {
    id: 'HOOK-034',
    clauses: ['svc.prompt', 'state.completed-webhook', 'event.completed'],
    section,
    title:
      'a delivery arrives when the session already reads completed: the receiver reads it back before answering, on either rail',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      // The token is at hand before any delivery: the read is all the receiver does in the wait.
      const token = await ctx.api.token(org);
      const seen = (
        await Promise.all((['card', 'open_banking'] as const).map((rail) => readsAtArrival(ctx, org, token, rail)))
      ).flat();
      const statusOf = (s: ReadAtArrival) => (s.read?.status === 200 ? at(s.read.json, 'status') : undefined);
      const unpaid = seen.find((s) => UNPAID.has(statusOf(s) as string));
      if (unpaid)
        throw new CheckFailure(
          `The ${unpaid.rail} payment's checkout_session.completed arrived while a read of its session said ${show(statusOf(unpaid))}: the webhook is a prompt to read, sent once the session reached completed, so a merchant reading back on it sees an unpaid order, and nothing else will arrive.`,
          { exchange: unpaid.read! },
        );
      // Completed, or a status the document does not name (the list is open): no contradiction.
      const judged = new Set(seen.filter((s) => typeof statusOf(s) === 'string').map((s) => s.rail));
      const unjudged = seen.filter((s) => !judged.has(s.rail));
      if (judged.size === 0) {
        const answered = unjudged.filter((s) => s.read !== undefined).map((s) => `${s.rail}: ${s.read!.status}`);
        if (answered.length > 0)
          throw new NoVerdict(
            `The reads made as each delivery arrived were not answered 200 (${answered.join(', ')}).`,
          );
        throw new SuiteTooLate(
          `No read of the session made as a delivery arrived was back within ${READ_AT_ARRIVAL_MS / 1000} s, inside the service's five-second wait.`,
        );
      }
      if (judged.size < 2)
        ctx.note = `Judged on the ${[...judged].join(' and ')} rail only: no read at the other's arrival was back within ${READ_AT_ARRIVAL_MS / 1000} s with 200.`;
    },
  },
  {
    id: 'HOOK-020',
    clauses: ['secret.rotation', 'secret.scope'],
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
      expectSigned(d, rotated, 'a delivery after rotation, checked with the new secret', org);
      if (verifies(d, old))
        failWith('A delivery after rotation still verifies with the old secret (rotation has no overlap).', d);
    },
  },
  {
    id: 'HOOK-021',
    clauses: ['sig.unsigned'],
    section,
    title:
      'when the signing secret cannot be resolved, the delivery is still sent, with no Service-Signature header at all',
    requires: ['createOrganisation', 'injectFault', 'attempt'],
    uses: ['webhookDeliveries'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      await ctx.target.injectFault(org, 'signing_secret_unavailable');
      const hook = ctx.hooks.hook('unsigned');
      const { session } = await paidSession(ctx, org, { hook, rail: 'open_banking' });
      const [d] = await ctx.hooks.waitFor(hook, 1);
      if (!d) fail('No delivery arrived: an unsigned delivery must still be sent.');
      // Signed with the very secret the fault made unresolvable: the fault did not take effect.
      if (org.webhookSigningSecret !== undefined && verifies(d, org.webhookSigningSecret))
        throw new AdapterError(
          'injectFault(signing_secret_unavailable) did not take effect: the delivery is signed with the organisation’s secret',
        );
      if ('service-signature' in d.headers)
        failWith(
          `The unsigned delivery must have no Service-Signature header; it had ${show(d.headers['service-signature'])}.`,
          d,
        );
      if (at(d.body, 'checkoutSessionId') !== session.id || at(d.body, 'event') !== 'checkout_session.completed')
        failWith('The unsigned delivery must still carry the event payload.', d);
      // The record confirms the fault took effect; `signed` is the adapter's report (our
      // shape, not the document's), so a record that contradicts the bytes is the adapter's fault.
      if (!ctx.target.has('webhookDeliveries')) return;
      const records = await ctx.target.deliveriesOnce({ checkoutSessionId: session.id }, (found) =>
        found.some((r) => r?.url === hook.url),
      );
      const unsigned = records.find((r) => r?.url === hook.url) ?? records[0];
      if (unsigned && unsigned.signed !== false)
        throw new AdapterError(
          `webhookDeliveries says signed: ${show(unsigned.signed)} for a delivery that arrived with no Service-Signature header`,
        );
    },
  },
  {
    id: 'HOOK-022',
    clauses: ['legacy.payload', 'legacy.webhook', 'ver.legacy'],
    section,
    title:
      'a transaction created the older way (POST /api/transaction) gets the legacy body: only transactionId and foreignTransactionId, no event, no signature',
    requires: ['attempt'],
    uses: ['legacyTransactions'],
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
    clauses: ['legacy.payload', 'legacy.webhook'],
    section,
    title:
      'the legacy body names the transaction created the older way, and the foreignTransactionId given at its creation or null',
    requires: ['attempt'],
    uses: ['legacyTransactions'],
    async run(ctx) {
      const { d, transactionId } = await legacyDelivery(ctx, 'legacy-echo');
      if (at(d.body, 'transactionId') !== transactionId)
        failWith(
          `The legacy body names transaction ${show(at(d.body, 'transactionId'))}; the transaction created was ${transactionId}.`,
          d,
        );
      // How the older way takes the merchant's id is not shown: a target that did not take
      // it may send null, but a value other than the one given is someone else's.
      const foreign = at(d.body, 'foreignTransactionId');
      if (foreign !== LEGACY_FOREIGN_ID && foreign !== null)
        failWith(
          `The legacy body has foreignTransactionId ${show(foreign)}; the transaction was created with "${LEGACY_FOREIGN_ID}".`,
          d,
        );
    },
  },
  {
    id: 'HOOK-023',
    clauses: [
      'payload.session',
      'res.link-id',
      'res.link-no-session',
      'res.link',
      'link.endpoints',
      'state.completed-webhook',
    ],
    section,
    title: 'a paid payment link sends a signed event with checkoutSessionId null and transactionId = the link id',
    requires: ['attempt'],
    uses: ['paymentLinks'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const secret = secretOf(org);
      const hook = ctx.hooks.hook('link');
      const id = await ctx.target.paymentLink(org, { webhookUrl: hook.url });
      await ctx.target.attempt(org, { kind: 'payment-link', id }, 'card', 'succeeded');
      const [d] = await ctx.hooks.waitFor(hook, 1);
      if (!d) fail(`No webhook arrived within ${ctx.run.settings.settleTimeoutMs / 1000} s of the link being paid.`);
      expectSigned(d, secret, 'a payment link delivery', org);
      if (at(d.body, 'checkoutSessionId') !== null || at(d.body, 'transactionId') !== id)
        failWith(`Expected checkoutSessionId null and transactionId ${id}.`, d);
    },
  },
  {
    id: 'HOOK-024',
    clauses: ['secret.rotation'],
    section: 'Webhook signing secret',
    title: 'a delivery retried after rotation is signed with the new secret only',
    requires: ['createOrganisation', 'rotateWebhookSecret', 'attempt', 'advanceClock'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const old = secretOf(org);
      const hook = ctx.hooks.hook('rotated-retry', answer(500, 200));
      await paidSession(ctx, org, { hook });
      const first = await firstDelivery(ctx, hook);
      expectSigned(first, old, 'the first attempt, before rotation', org);
      const rotated = await ctx.target.rotateWebhookSecret(org);
      const retry = (await untilAttempt(ctx, org, hook, 2))[1];
      if (!retry)
        failWith(
          'The card delivery was not attempted again after a 500, so the retry after rotation cannot be seen.',
          first,
        );
      expectSigned(retry, rotated, 'the retry after rotation, checked with the new secret', org);
      if (verifies(retry, old))
        failWith('The retry after rotation still verifies with the old secret (rotation has no overlap).', retry);
    },
  },
];

/** Each judges what reaches the suite's receiver (HOOK-008 only what the target records). */
export const webhookChecks: RunCheck[] = checks.map((c) => ({ webhooks: true, ...c }));

/**
 * How the target answers a receiver's answer (service document: Events, Response and
 * retry behaviour): the card rail retries a failed delivery up to three attempts in total,
 * 408 and 429 are not final, other 4xx are; the open banking rail makes one attempt; any
 * 2xx within the five seconds the service waits is a success.
 */
import type { Capability, Delivery, Rail } from '../../../../core/adapter.ts';
import { fail } from '../../assert.ts';
import { SuiteTooLate } from '../../../../core/outcome.ts';
import type { CheckContext, RunCheck } from '../../context/check-context.ts';
import { show } from '../../../../core/json.ts';
import { attemptsOf, type Behaviour } from '../../capture-receiver.ts';
import type { Answer, Received } from '../../../../core/exchange.ts';
import {
  allAttempts,
  answer,
  expectSigned,
  failWith,
  firstDelivery,
  HOLD_MS,
  paidSession,
  SLOW_ANSWER_MS,
  secretOf,
  section,
} from '../../deliveries.ts';

/** One way the receiver answers, and how a report names it ("404", "302 with a Location"). */
interface AnswerCase {
  label: string;
  /**
   * How the receiver answers each attempt; `elsewhere` is an address of the receiver's
   * own for a redirect to point at, which no delivery may reach (the target is the webhookUrl).
   */
  behaviour: (elsewhere: string) => Behaviour;
}

interface AttemptsCheck {
  id: string;
  rail: Rail;
  title: string;
  clauses: readonly string[];
  /** How the receiver answers: each case is a payment of its own, in an organisation of its own. */
  cases: readonly AnswerCase[];
  /**
   * What is wrong with the attempts, or undefined: how many `arrived` at the receiver, and
   * how many the target `made` by its own records (the rest being repeats of the event).
   */
  judge: (attempts: { arrived: number; made: number }) => string | undefined;
  slow?: boolean;
  /** The session's checkoutMethod when not the rail itself (a both session paid on one rail). */
  checkoutMethod?: 'both';
  /**
   * Count every arrival, not only those up to the first 2xx: after a 2xx answer a further
   * arrival is a repeat of the delivered event or a retry, and only the target's records
   * (required then) tell which.
   */
  afterSuccess?: boolean;
}

/** Answers every attempt the same way. */
const always = (label: string, a: Exclude<Answer, { holdMs: number }>): AnswerCase => ({
  label,
  behaviour: () => () => a,
});

/** Answers every attempt with a redirect to the receiver's other address. */
const redirect = (status: number): AnswerCase => ({
  label: `${status} with a Location`,
  behaviour: (elsewhere) => () => ({ status, location: elsewhere, body: null }),
});

/** The behaviour of a check answering one way only. */
const only = (behaviour: Behaviour, label = ''): AnswerCase[] => [{ label, behaviour: () => behaviour }];

/**
 * How many of the deliveries that arrived the target counts as attempts: the same event may
 * also arrive through another completion path (Duplicates), and only the target's records
 * (the highest attempt number of the payment's deliveries) tell its attempts from such
 * repeats. A delivery after one answered 2xx is a repeat unless the records say the target
 * made it as another attempt: without records that say so, the attempts are those up to the
 * first one accepted.
 */
async function attemptsMade(ctx: CheckContext, sessionId: string, url: string, got: Received[]): Promise<number> {
  const arrived = got.length;
  const upToSuccess = attemptsOf(got).length;
  if (!ctx.target.has('webhookDeliveries')) return upToSuccess;
  const records = await ctx.target.deliveries({ checkoutSessionId: sessionId });
  // Every delivery of a payment goes to its webhookUrl; a record that names it otherwise
  // (another spelling of the same address) still counts.
  const same = records.filter((r) => sameAddress(r.url, url));
  const numbers = (same.length > 0 ? same : records).map((r) => r.attempt);
  if (numbers.length === 0 || !numbers.every((n) => Number.isInteger(n) && n >= 1)) return upToSuccess;
  return Math.min(arrived, Math.max(...numbers));
}

/** Two spellings of one address (case of scheme and host, a default port, a trailing slash). */
function sameAddress(a: string, b: string): boolean {
  if (!URL.canParse(a) || !URL.canParse(b)) return a === b;
  const norm = (u: string) => new URL(u).href.replace(/\/$/, '');
  return norm(a) === norm(b);
}

/** The attempts the target makes for one payment, its receiver answering as the case says: what is wrong, if anything. */
async function attemptsFor(
  ctx: CheckContext,
  c: AttemptsCheck,
  k: AnswerCase,
): Promise<{ problem: string; d: Received | undefined } | undefined> {
  const org = await ctx.target.organisation();
  const elsewhere = ctx.hooks.hook(`${c.rail}-elsewhere`);
  const hook = ctx.hooks.hook(c.rail, k.behaviour(elsewhere.url));
  const { session } = await paidSession(ctx, org, {
    rail: c.rail,
    hook,
    ...(c.checkoutMethod ? { patch: { checkoutMethod: c.checkoutMethod } } : {}),
  });
  const all = await allAttempts(ctx, org, hook, session.id);
  const got = c.afterSuccess ? all : attemptsOf(all);
  // Every attempt is signed over the bytes it carries, the retries as the first.
  for (const d of got) expectSigned(d, secretOf(org), `attempt ${d.attempt} at the receiver`, org);
  const when = k.label ? `Answered ${k.label}: ` : '';
  // A redirect is a failed delivery: the sender tries the webhookUrl again or not at all,
  // and never takes the Location as a new target.
  const followed = [...ctx.hooks.received(elsewhere), ...ctx.hooks.receivedOther(elsewhere)];
  if (followed.length > 0)
    return {
      problem: `${when}the target followed the redirect: a ${followed[0]!.method} reached the Location ${elsewhere.url}; a 3xx is a failed delivery, and deliveries go to the webhookUrl alone`,
      d: followed[0],
    };
  // A retry must arrive to count; the limits are on what the target made (its repeats aside).
  const arrived = got.length;
  const made = await attemptsMade(ctx, session.id, hook.url, got);
  const problem = c.judge({ arrived, made });
  if (!problem) return undefined;
  return {
    problem: `${when}${problem} (received ${arrived} attempt${arrived === 1 ? '' : 's'}${made < arrived ? `, ${made} of them attempts by the target's records, the rest repeats` : ''})`,
    d: got.at(-1),
  };
}

/** The attempts the target makes for a payment per case, its receiver answering as told. */
function attemptsCheck(c: AttemptsCheck): RunCheck {
  return {
    id: c.id,
    clauses: c.clauses,
    section,
    title: c.title,
    requires: [
      'createOrganisation',
      'attempt',
      'advanceClock',
      ...(c.afterSuccess ? ['webhookDeliveries' as const] : []),
    ],
    ...(c.afterSuccess ? {} : { uses: ['webhookDeliveries'] as Capability[] }),
    ...(c.slow ? { slow: true } : {}),
    async run(ctx) {
      // The cases side by side, each on its own organisation's clock; every one runs to its end.
      const settled = await Promise.allSettled(c.cases.map((k) => attemptsFor(ctx, c, k)));
      const thrown = settled.find((s) => s.status === 'rejected');
      if (thrown) throw thrown.reason;
      const found = settled.flatMap((s) => (s.status === 'fulfilled' && s.value ? [s.value] : []));
      if (found.length > 0) failWith(`${found.map((f) => f.problem).join('; ')}.`, found[0]!.d);
    },
  };
}

/** How much later than asked the receiver's slow answer may go and still leave the target time to hear it. */
const ANSWER_LATENESS_MS = 1000;

/**
 * The receiver answers 200 after SLOW_ANSWER_MS, inside the five seconds the service waits:
 * a success. The target's own record of the attempt must say so; a sender that gave up
 * sooner records a failure (and retries a card delivery, or loses an open-banking one).
 * Only the record tells a retry from an allowed duplicate, so the check needs it.
 */
function slowAnswerCheck(id: string, rail: Rail): RunCheck {
  const railName = rail === 'card' ? 'card rail' : 'open banking rail';
  return {
    id,
    clauses: [
      'retry.wait',
      'retry.success',
      rail === 'card' ? 'retry.card' : 'retry.open-banking',
      'limit.webhook-wait',
    ],
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
      const first = (r: Delivery) => r.url === hook.url && r.attempt === 1;
      const records = await ctx.target.deliveriesOnce({ checkoutSessionId: session.id }, (found) =>
        found.some((r) => first(r) && (r.responseStatus !== null || r.error !== null)),
      );
      const record = records.find(first) ?? records[0];
      if (!record) fail('The target delivered, but its delivery records list no attempt.');
      const status = record.responseStatus;
      if (typeof status !== 'number' || status < 200 || status > 299) {
        // The answer must leave well inside the five seconds for the target to be blamed:
        // a receiver starved of its own machine's time answers late through no fault of the target.
        const answered = d.answeredAt === undefined ? undefined : d.answeredAt - d.receivedAt;
        const waited = answered ?? Date.now() - d.receivedAt;
        if (waited > SLOW_ANSWER_MS + ANSWER_LATENESS_MS)
          throw new SuiteTooLate(
            `The suite's receiver was to answer ${SLOW_ANSWER_MS / 1000} s after the delivery arrived, but its machine was too busy: it ${answered === undefined ? 'had not answered' : 'answered'} ${(waited / 1000).toFixed(1)} s after. The target's record (${status === null ? `no answer: ${show(record.error)}` : `status ${status}`}) cannot be judged.`,
          );
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

const retried = ({ arrived, made }: { arrived: number; made: number }) =>
  arrived < 2
    ? 'A card delivery that failed this way must be retried'
    : made > 3
      ? 'The card rail makes up to three attempts in total'
      : undefined;
const once =
  (what: string) =>
  ({ made }: { made: number }) =>
    made === 1 ? undefined : `${what}: exactly one attempt`;
const oneOpenBankingAttempt = once('The open banking rail makes one attempt');

/** Capabilities of a check that pays and reads the target's delivery records. */
const PAYS_AND_RECORDS: Capability[] = ['attempt', 'webhookDeliveries'];

const checks: RunCheck[] = [
  attemptsCheck({
    id: 'HOOK-010',
    rail: 'card',
    title: 'card rail, receiver answers 500 or 503: retried, at most three attempts in total',
    clauses: ['retry.card', 'retry.failure', 'limit.card-attempts'],
    cases: [always('500', { status: 500 }), always('503 with no body', { status: 503, body: null })],
    judge: retried,
  }),
  attemptsCheck({
    id: 'HOOK-011',
    rail: 'card',
    title: 'card rail, receiver answers 408: retried (not final), at most three attempts',
    clauses: ['retry.final', 'retry.card'],
    cases: only(answer(408)),
    judge: retried,
  }),
  attemptsCheck({
    id: 'HOOK-012',
    rail: 'card',
    title: 'card rail, receiver answers 429: retried (not final), at most three attempts',
    clauses: ['retry.final', 'retry.card'],
    cases: only(answer(429)),
    judge: retried,
  }),
  attemptsCheck({
    id: 'HOOK-013',
    rail: 'card',
    title: 'card rail, receiver answers 400, 404 or 410: final, no retry',
    clauses: ['retry.final'],
    cases: [
      always('400', { status: 400 }),
      always('404', { status: 404 }),
      always('410 with no body', { status: 410, body: null }),
    ],
    judge: once('A 4xx other than 408 or 429 is final'),
  }),
  attemptsCheck({
    id: 'HOOK-014',
    rail: 'card',
    title: 'card rail, receiver holds its answer past 5 s: a failed delivery, retried',
    clauses: ['retry.wait', 'retry.failure', 'retry.card', 'limit.webhook-wait'],
    cases: only((n) => (n === 1 ? { holdMs: HOLD_MS } : { status: 200 })),
    judge: retried,
    slow: true,
  }),
  attemptsCheck({
    id: 'HOOK-015',
    rail: 'open_banking',
    title: 'open banking rail, receiver answers 500: one attempt, no retry',
    clauses: ['retry.open-banking', 'limit.open-banking-attempts'],
    cases: only(answer(500)),
    judge: oneOpenBankingAttempt,
  }),
  attemptsCheck({
    id: 'HOOK-016',
    rail: 'open_banking',
    title: 'open banking rail, receiver holds its answer past 5 s: one attempt, no retry',
    clauses: ['retry.open-banking', 'retry.wait'],
    cases: only(() => ({ holdMs: HOLD_MS })),
    judge: oneOpenBankingAttempt,
    slow: true,
  }),
  attemptsCheck({
    id: 'HOOK-017',
    rail: 'open_banking',
    title: 'open banking rail, receiver answers 429: one attempt, no retry',
    clauses: ['retry.open-banking'],
    cases: only(answer(429)),
    judge: oneOpenBankingAttempt,
  }),
  attemptsCheck({
    id: 'HOOK-018',
    rail: 'card',
    title: 'card rail, receiver answers 500 then 200: delivered on the retry, no attempt after the success fails',
    clauses: ['retry.success', 'retry.card'],
    cases: only(answer(500, 200)),
    judge: ({ arrived }) => (arrived < 2 ? 'A card delivery that failed with 500 must be retried' : undefined),
  }),
  attemptsCheck({
    id: 'HOOK-019',
    rail: 'open_banking',
    title: 'open banking rail, receiver answers 408: one attempt, no retry',
    clauses: ['retry.open-banking'],
    cases: only(answer(408)),
    judge: oneOpenBankingAttempt,
  }),
  attemptsCheck({
    id: 'HOOK-026',
    rail: 'open_banking',
    title: 'open banking rail, receiver answers 400: one attempt, no retry',
    clauses: ['retry.open-banking'],
    cases: only(answer(400)),
    judge: oneOpenBankingAttempt,
  }),
  attemptsCheck({
    id: 'HOOK-030',
    rail: 'open_banking',
    checkoutMethod: 'both',
    title:
      'a both session paid by open banking, receiver answers 500: one attempt, the open banking rail’s (the rail is the one the money moved on)',
    clauses: ['retry.open-banking', 'res.read.transaction-type'],
    cases: only(answer(500)),
    judge: oneOpenBankingAttempt,
  }),
  attemptsCheck({
    id: 'HOOK-031',
    rail: 'card',
    title:
      'card rail, receiver answers 201, 202 or 204, or 200 with no body: delivered, no retry (by the target’s records)',
    clauses: ['retry.success', 'retry.card'],
    cases: [
      always('201 with a text body', { status: 201, body: { type: 'text/plain', text: 'OK' } }),
      always('202 with no body', { status: 202, body: null }),
      always('204', { status: 204 }),
      always('200 with no body', { status: 200, body: null }),
    ],
    judge: ({ made }) => (made > 1 ? 'Any 2xx is a success: the delivery is not attempted again' : undefined),
    afterSuccess: true,
  }),
  attemptsCheck({
    id: 'HOOK-032',
    rail: 'card',
    title:
      'card rail, receiver answers 302 or 307 with a Location: a failed delivery, retried at the webhookUrl; the Location is never called',
    clauses: ['retry.failure', 'retry.card', 'receiver.post'],
    cases: [redirect(302), redirect(307)],
    judge: retried,
  }),
  attemptsCheck({
    id: 'HOOK-033',
    rail: 'open_banking',
    title: 'open banking rail, receiver answers 302 or 307 with a Location: one attempt; the Location is never called',
    clauses: ['retry.failure', 'retry.open-banking', 'receiver.post'],
    cases: [redirect(302), redirect(307)],
    judge: oneOpenBankingAttempt,
  }),
  slowAnswerCheck('HOOK-028', 'card'),
  slowAnswerCheck('HOOK-029', 'open_banking'),
];

/** Each judges the attempts that reach the suite's receiver. */
export const retryChecks: RunCheck[] = checks.map((c) => ({ ...c, webhooks: true }));

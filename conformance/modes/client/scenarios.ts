/**
 * What the client checks share: the sections they cite, scripts for the scripted service
 * (forward, answer the n-th request its own way, hold an answer back until told), what a
 * check reads of a scenario (the requests during an operation, the tokens issued, the
 * repeats of a create), and the plain traffic several checks judge.
 */
import { DEFAULT_SETTLE_TIMEOUT_S } from '../../runner/flags.ts';
import { CheckSkipped, NoVerdict } from '../../core/outcome.ts';
import type { Check } from '../../runner/check-definition.ts';
import type { Answer } from './protocol.ts';
import { type ClientRun, expectKept, linkBody, type Scenario, sessionBody, type Step } from './context.ts';
import { envelope, isCreate, isSessionRead, type Plan, type Script } from './service.ts';
import type { Recorded, Reply } from '../../core/exchange.ts';
import { repeatProblem } from '../../rules/client.ts';

export type ClientCheck = Check<ClientRun>;

export const AUTH = 'Authentication';
export const IDEM = 'Idempotency rules';
export const ERRORS = 'Errors';
export const STATES = 'States and transitions';
export const EVENTS = 'Events';

/**
 * Totals the plain traffic always creates with: each at most two decimals, some a binary
 * float cannot hold exactly, and the first twice (two payments alike are two payments).
 */
const FIXED_TOTALS = [25.5, 25.5, 10.1, 0.3, 1234.56, 19.99];

/** The plain traffic's totals: the fixed ones, and three drawn from the run's seed (1 cent to 10000). */
export function totalsOf(seed: number): number[] {
  let state = seed >>> 0;
  // mulberry32: a few well-spread draws from a 32-bit seed, the same on every machine.
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return [...FIXED_TOTALS, ...Array.from({ length: 3 }, () => (1 + Math.floor(next() * 1_000_000)) / 100)];
}
/** How long a paid session may take to read completed on the target (--settle-timeout's default). */
export const SETTLE_TIMEOUT_MS = DEFAULT_SETTLE_TIMEOUT_S * 1000;
/** The Retry-After of CLIENT-017's 429, in seconds. */
export const RETRY_AFTER_S = 2;

// ---- scripts ----

export const forwardAll: Script = () => 'forward';

/** Applies `plan` to the requests `which` picks (their number among those it picks, from 1), else forwards. */
export function on(which: (r: Recorded) => boolean, plan: (n: number, r: Recorded) => Plan | undefined): Script {
  let n = 0;
  return (r) => (which(r) ? (plan(++n, r) ?? 'forward') : 'forward');
}

/** An error envelope as the service answers it, its doc_url on the scripted service the request reached. */
export function errorReply(r: Recorded, status: number, code: string, param: string | null = null): Reply {
  return envelope(`http://${r.headers.host}`, status, code, { param });
}

/**
 * A scripted answer given only once the check says so (a client may read a session back
 * inside its create), then `times` times.
 */
function trigger(times = 1): { arm(): void; fire(): boolean } {
  let armed = false;
  let left = times;
  return {
    arm: () => {
      armed = true;
    },
    fire: () => armed && left-- > 0,
  };
}

// ---- what checks read of a scenario ----

/** The access token a token request was given, if it was given one. */
export function issuedToken(r: Recorded): string[] {
  try {
    const token = JSON.parse(r.got?.body ?? '').accessToken;
    return typeof token === 'string' ? [token] : [];
  } catch {
    return [];
  }
}

/**
 * A session created through the client, then read back through it with the suite answering
 * the read `code` (the first `times` reads from then on): gives what the read came to and
 * what the client sent after the answer.
 */
export async function readAnswered(
  run: ClientRun,
  code: string,
  times: number,
  judge: (s: Scenario, answer: Exclude<Answer, { broken: string }>, after: Recorded[]) => void,
): Promise<void> {
  const armed = trigger(times);
  await run.scenario(
    (r) => (isSessionRead(r) && armed.fire() ? { answer: errorReply(r, 401, code) } : 'forward'),
    async (s) => {
      const id = await createdId(s);
      armed.arm();
      const answer = await s.ask({ op: 'readSession', sessionId: id });
      expectAnswered(s, answer, `A read answered ${code}`);
      judge(s, answer, afterScripted(s));
    },
  );
}

/** What the client sent, in the last operation, after the first request the suite answered for. */
function afterScripted(s: Scenario): Recorded[] {
  const sent = during(s, last(s));
  const scripted = sent.findIndex((r) => r.plan !== 'forward');
  return scripted === -1 ? [] : sent.slice(scripted + 1);
}

export const bearerOf = (r: Recorded) => /^Bearer (\S+)$/.exec(r.headers.authorization ?? '')?.[1] ?? '';

/** The requests the client sent while the driver worked on `step` (operations are asked one at a time). */
export function during(s: Scenario, step: Step): Recorded[] {
  return s.requests.slice(step.from, step.to);
}

export const last = (s: Scenario) => s.steps.at(-1)!;
export const valueIn = (answer: Answer): Record<string, unknown> | undefined =>
  'ok' in answer && answer.ok && answer.value && typeof answer.value === 'object'
    ? (answer.value as Record<string, unknown>)
    : undefined;
export const errorOf = (answer: Answer) => ('ok' in answer && !answer.ok ? answer.error : undefined);
export const idOf = (body: string | undefined): string | undefined => {
  try {
    const id = JSON.parse(body ?? '')?.id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
};
/** A session created through the client, for a check about something else: its id. */
export async function createdId(s: Scenario): Promise<string> {
  const answer = await s.ask({ op: 'createSession', body: sessionBody() });
  const id = valueIn(answer)?.id;
  if (typeof id !== 'string') return s.fail(`Creating a session through the client failed: ${s.describe(answer)}.`);
  return id;
}

/** The client reports the refusal with its code, as one that trying again unchanged will not mend. */
export function expectReported(s: Scenario, answer: Answer, code: string): void {
  const error = errorOf(answer);
  if (error?.code !== code || error.retryable)
    s.fail(`The client reports ${s.describe(answer)} for ${code}: that code, not to be retried, was expected.`);
}

/** A client that gives no outcome for an operation crashed on it, whatever the operation was about. */
export function expectAnswered(
  s: Scenario,
  answer: Answer,
  what: string,
): asserts answer is Exclude<Answer, { broken: string }> {
  if ('broken' in answer) s.fail(`${what}: the client gave no outcome (${answer.broken}).`);
}

/**
 * A create sent again after an answer the client could not trust: each repeat must carry
 * the first attempt's Idempotency-Key and the same body (Idempotency rules 1 and 3), and a
 * create that succeeds in the end must give the session the target made first.
 */
export function judgeRepeats(s: Scenario, creates: Recorded[], committed: string | undefined) {
  const [first, ...repeats] = creates;
  if (!first) return s.fail('The client sent no create.');
  const key = first.headers['idempotency-key'];
  for (const again of repeats) {
    const problem = repeatProblem(
      { key, body: first.body },
      { key: again.headers['idempotency-key'], body: again.body },
    );
    if (problem) s.fail(`The client sent the create again (request ${again.seq}) ${problem}.`);
  }
  const value = valueIn(last(s).answer);
  if (value && committed !== undefined && value.id !== committed)
    s.fail(
      `The client reports session ${String(value.id)}, but the target had made ${committed} for the first attempt.`,
    );
  const answered = repeats.find((r) => r.got?.status === 200);
  if (!value && answered)
    s.fail(
      `The client's retry (request ${answered.seq}) got the session, yet it reports ${s.describe(last(s).answer)}.`,
    );
}

// ---- the plain traffic, judged by several checks ----

/** The operations of the plain traffic that send a request the target takes: each must be done. */
const PLAIN_OPERATIONS = new Set(['createSession', 'readSession', 'createLink', 'readLink', 'token']);

/**
 * Why the plain traffic cannot be judged as the client's whole behaviour: an operation that
 * gave no outcome (the driver ended, crashed or went silent: what it did not send would be
 * missing from every check's evidence), or one the client reports failed though it sent
 * nothing, or though the target accepted what it sent.
 */
function plainTrafficProblem(s: Scenario): string | undefined {
  for (const [i, step] of s.steps.entries()) {
    const what = `operation ${i + 1} of the plain traffic (${step.ask.op})`;
    if ('broken' in step.answer) return `${what} gave no outcome: ${step.answer.broken}`;
    if (!PLAIN_OPERATIONS.has(step.ask.op) || !('ok' in step.answer) || step.answer.ok) continue;
    const sent = during(s, step);
    if (sent.length === 0) return `${what} failed without a request: ${s.describe(step.answer)}`;
    const lastGot = sent.at(-1)?.got?.status;
    if (lastGot !== undefined && lastGot >= 200 && lastGot < 300)
      return `${what} failed though the target answered ${lastGot}: ${s.describe(step.answer)}`;
  }
  return undefined;
}

/**
 * The plain traffic, for a check that judges part of it. A client that did not carry it out
 * fails the check, saying where it stopped: what it never sent cannot pass for it.
 */
export async function traffic(run: ClientRun): Promise<Scenario> {
  const s = await plainTraffic(run);
  expectKept(s);
  const problem = plainTrafficProblem(s);
  if (problem) s.fail(`The plain traffic did not run to its end: ${problem}.`);
  return s;
}

/** What a check judges must have happened at least once: otherwise it is not judged, never passed. */
export function expectSeen(what: string, count: number): void {
  if (count === 0) throw new NoVerdict(`Not judged: the client sent no ${what}, so there is nothing to judge.`);
}

function plainTraffic(run: ClientRun): Promise<Scenario> {
  return run.sharedScenario('traffic', forwardAll, async (s) => {
    // What the client does is recorded, not judged here: each check judges its own part of it.
    const ids: string[] = [];
    for (const total of totalsOf(run.settings.seed)) {
      const id = valueIn(await s.ask({ op: 'createSession', body: sessionBody(total) }))?.id;
      if (typeof id === 'string') ids.push(id);
    }
    for (const id of ids) await s.ask({ op: 'readSession', sessionId: id });
    // The rest is what a client may not offer.
    await optional(async () => {
      const link = valueIn(await s.ask({ op: 'createLink', body: linkBody() }))?.id;
      if (typeof link === 'string') await s.ask({ op: 'readLink', linkId: link });
    });
    await optional(() => s.ask({ op: 'token' }));
  });
}

/** Runs an operation a client may not offer: without it, the scenario goes on. */
async function optional(step: () => Promise<unknown>): Promise<void> {
  try {
    await step();
  } catch (error) {
    if (!(error instanceof CheckSkipped)) throw error;
  }
}

/** The creates the client sent for each createSession of the plain traffic, with the total asked for. */
export function createsByPayment(s: Scenario): Array<{ total: unknown; creates: Recorded[] }> {
  return s.steps
    .filter((step) => step.ask.op === 'createSession')
    .map((step) => ({
      total: (step.ask as { body: { amount: { total: unknown } } }).body.amount.total,
      creates: during(s, step).filter(isCreate),
    }));
}

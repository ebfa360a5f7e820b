/**
 * CLIENT-*: the document's rules for API clients (Authentication, Idempotency rules, HTTP
 * statuses, Codes and client guidance, States, Events, Versioning), judged on what a
 * client sends and says in scripted scenarios. Each check runs a scenario of its own, or
 * reads the shared one of plain traffic; what happened is judged from the requests the
 * scripted service recorded and the outcomes the driver gave, never from the client's code.
 */
import { randomUUID } from 'node:crypto';
import { computeSignature, signWebhook } from '@payment-service/client/webhooks';
import { ACCOUNT_CONFIGURATION_CODES } from '@payment-service/contract/errors';
import type { Check } from '../../../runner/check-definition.ts';
import { AdapterError } from '../../../adapter.ts';
import { CheckSkipped } from '../../../runner/outcome.ts';
import type { Answer } from '../protocol.ts';
import { type ClientRun, describeAnswer, linkBody, type Scenario, type Step, sessionBody } from '../context.ts';
import {
  envelope,
  isCreate,
  isSessionRead,
  isToken,
  type Plan,
  type Recorded,
  type Reply,
  type Script,
} from '../service.ts';

type ClientCheck = Check<ClientRun>;

const AUTH = 'Authentication';
const IDEM = 'Idempotency rules';
const ERRORS = 'Errors';
const STATES = 'States and transitions';
const EVENTS = 'Events';

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
/** How long a paid session may take to read completed on the target (as --settle-timeout's default). */
const SETTLE_TIMEOUT_MS = 30_000;
/** Less than this between tries, on average, is no backoff. */
const MIN_BACKOFF_MS = 50;
/** Most attempts a client may make of one create that keeps failing before it is hammering the service. */
const MOST_ATTEMPTS = 10;
/** The Retry-After of CLIENT-017's 429, in seconds. */
const RETRY_AFTER_S = 2;

// ---- scripts ----

const forwardAll: Script = () => 'forward';

/** Applies `plan` to the requests `which` picks (their number among those it picks, from 1), else forwards. */
function on(which: (r: Recorded) => boolean, plan: (n: number, r: Recorded) => Plan | undefined): Script {
  let n = 0;
  return (r) => (which(r) ? (plan(++n, r) ?? 'forward') : 'forward');
}

/** An error envelope as the service answers it, its doc_url on the scripted service the request reached. */
function errorReply(r: Recorded, status: number, code: string, param: string | null = null): Reply {
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
function issuedToken(r: Recorded): string[] {
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
async function readAnswered(
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

const bearerOf = (r: Recorded) => /^Bearer (\S+)$/.exec(r.headers.authorization ?? '')?.[1] ?? '';

/** The requests the client sent while the driver worked on `step` (operations are asked one at a time). */
function during(s: Scenario, step: Step): Recorded[] {
  return s.requests.slice(step.from, step.to);
}

const last = (s: Scenario) => s.steps.at(-1)!;
const valueIn = (answer: Answer): Record<string, unknown> | undefined =>
  'ok' in answer && answer.ok && answer.value && typeof answer.value === 'object'
    ? (answer.value as Record<string, unknown>)
    : undefined;
const errorOf = (answer: Answer) => ('ok' in answer && !answer.ok ? answer.error : undefined);
const idOf = (body: string | undefined): string | undefined => {
  try {
    const id = JSON.parse(body ?? '')?.id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
};
const sameJson = (a: string, b: string) => {
  try {
    return JSON.stringify(sortKeys(JSON.parse(a))) === JSON.stringify(sortKeys(JSON.parse(b)));
  } catch {
    return a === b;
  }
};
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  return value;
}

/** A session created through the client, for a check about something else: its id. */
async function createdId(s: Scenario): Promise<string> {
  const answer = await s.ask({ op: 'createSession', body: sessionBody() });
  const id = valueIn(answer)?.id;
  if (typeof id !== 'string') return s.fail(`Creating a session through the client failed: ${describeAnswer(answer)}.`);
  return id;
}

/** The client reports the refusal with its code, as one that trying again unchanged will not mend. */
function expectReported(s: Scenario, answer: Answer, code: string): void {
  const error = errorOf(answer);
  if (error?.code !== code || error.retryable)
    s.fail(`The client reports ${describeAnswer(answer)} for ${code}: that code, not to be retried, was expected.`);
}

/** A client that gives no outcome for an operation crashed on it, whatever the operation was about. */
function expectAnswered(
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
function judgeRepeats(s: Scenario, creates: Recorded[], committed: string | undefined) {
  const [first, ...repeats] = creates;
  if (!first) return s.fail('The client sent no create.');
  const key = first.headers['idempotency-key'];
  for (const again of repeats) {
    if (!key || again.headers['idempotency-key'] !== key)
      s.fail(
        `The client sent the create again (request ${again.seq}) ${key ? `under another Idempotency-Key (${again.headers['idempotency-key'] ?? 'none'})` : 'and the first carried no Idempotency-Key'}: the target may make a second payment.`,
      );
    if (!sameJson(again.body, first.body))
      s.fail(
        `The client sent the create again (request ${again.seq}) with another body under the same key: the target answers idempotency_error.`,
      );
  }
  const value = valueIn(last(s).answer);
  if (value && committed !== undefined && value.id !== committed)
    s.fail(
      `The client reports session ${String(value.id)}, but the target had made ${committed} for the first attempt.`,
    );
  const answered = repeats.find((r) => r.got?.status === 200);
  if (!value && answered)
    s.fail(
      `The client's retry (request ${answered.seq}) got the session, yet it reports ${describeAnswer(last(s).answer)}.`,
    );
}

// ---- the plain traffic, judged by several checks ----

function traffic(run: ClientRun): Promise<Scenario> {
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
function createsByPayment(s: Scenario): Array<{ total: unknown; creates: Recorded[] }> {
  return s.steps
    .filter((step) => step.ask.op === 'createSession')
    .map((step) => ({
      total: (step.ask as { body: { amount: { total: unknown } } }).body.amount.total,
      creates: during(s, step).filter(isCreate),
    }));
}

export const clientChecks: ClientCheck[] = [
  {
    id: 'CLIENT-001',
    clauses: ['auth.exchange', 'token.form', 'conv.request-body', 'token.client-id', 'token.client-secret'],
    section: AUTH,
    title: 'The token request is POST /api/token, form-encoded, with the key pair',
    async run(run) {
      const s = await traffic(run);
      const tokens = s.requests.filter(isToken);
      if (tokens.length === 0) s.fail('The client sent no token request.');
      for (const r of tokens) {
        const type = (r.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        if (type !== 'application/x-www-form-urlencoded')
          s.fail(
            `Token request ${r.seq} is sent as ${type || 'no content type'}, not application/x-www-form-urlencoded.`,
          );
        const form = new URLSearchParams(r.body);
        if (
          form.get('clientId') !== s.org.apiKeys.test.clientId ||
          form.get('clientSecret') !== s.org.apiKeys.test.clientSecret
        )
          s.fail(`Token request ${r.seq} does not carry the key pair as the form fields clientId and clientSecret.`);
      }
    },
  },
  {
    id: 'CLIENT-002',
    clauses: ['auth.bearer'],
    section: AUTH,
    title: 'Every other request carries Authorization: Bearer <token>, with a token the service issued',
    async run(run) {
      const s = await traffic(run);
      const issued = new Set(s.requests.filter(isToken).flatMap(issuedToken));
      for (const r of s.requests.filter((x) => !isToken(x))) {
        const match = /^Bearer ([^\s]+)$/.exec(r.headers.authorization ?? '');
        if (!match)
          return s.fail(
            `Request ${r.seq} (${r.method} ${r.url}) has no Authorization header of the form Bearer <token>.`,
          );
        if (!issued.has(match[1]!))
          s.fail(`Request ${r.seq} carries a bearer token the service did not issue in this scenario.`);
      }
    },
  },
  {
    id: 'CLIENT-003',
    clauses: ['auth.reuse', 'res.token.reuse'],
    section: AUTH,
    title: 'One token serves every call made within its lifetime',
    async run(run) {
      const s = await traffic(run);
      const tokens = s.requests.filter(isToken);
      const calls = s.requests.length - tokens.length;
      if (tokens.length !== 1)
        s.fail(
          `The client asked for ${tokens.length} tokens for ${calls} calls made within seconds of each other: a token lasts five minutes.`,
        );
      // The token it says it holds, when it offers the token operation, is the one it has used.
      const held = valueIn(s.steps.find((step) => step.ask.op === 'token')?.answer ?? { unsupported: true });
      if (held && !issuedToken(tokens[0]!).includes(String(held.accessToken)))
        s.fail('The token the client gives when asked is not the one it was issued and has been using.');
    },
  },
  {
    id: 'CLIENT-004',
    clauses: ['create.idempotency-key'],
    level: 'should',
    section: IDEM,
    title: 'Every create carries an Idempotency-Key: one per payment (two alike included), kept on its retries',
    async run(run) {
      const s = await traffic(run);
      const payments = createsByPayment(s);
      const keys: string[] = [];
      for (const [i, { creates }] of payments.entries()) {
        const own = new Set(creates.map((r) => r.headers['idempotency-key']));
        if (creates.length === 0) continue;
        if (own.has(undefined) || own.has(''))
          s.fail(
            `Create ${i + 1} carries no Idempotency-Key ("strongly recommended": its retry may make a second payment).`,
          );
        if (own.size > 1) s.fail(`Create ${i + 1} was sent under more than one Idempotency-Key.`);
        keys.push([...own][0]!);
      }
      // The traffic creates two payments with the same body: a key made from the body would merge them.
      if (new Set(keys).size !== keys.length) s.fail('Two payments were created under one Idempotency-Key.');
    },
  },
  {
    id: 'CLIENT-005',
    clauses: ['conv.amounts', 'create.total'],
    section: 'General conventions',
    title: 'Amounts go out as JSON numbers in major units, as given, with at most two decimals',
    async run(run) {
      const s = await traffic(run);
      for (const { total, creates } of createsByPayment(s)) {
        for (const r of creates) {
          const literal = /"total"\s*:\s*(-?[0-9.eE+-]+|"[^"]*")/.exec(r.body)?.[1];
          if (literal === undefined) return s.fail(`Create ${r.seq} has no amount.total.`);
          if (literal.startsWith('"'))
            s.fail(`Create ${r.seq} sends amount.total as the string ${literal}, not a JSON number.`);
          if (Number(literal) !== total) s.fail(`Create ${r.seq} sends amount.total ${literal} for ${total}.`);
          if (decimals(literal) > 2)
            s.fail(`Create ${r.seq} sends amount.total as ${literal}: more than two decimal places.`);
        }
      }
    },
  },
  {
    id: 'CLIENT-006',
    clauses: ['auth.expired', 'res.token.reuse'],
    section: AUTH,
    title: 'After token_expired the client fetches one new token and repeats the request once, with it',
    run: (run) =>
      readAnswered(run, 'token_expired', 1, (s, answer, after) => {
        const reads = after.filter(isSessionRead);
        const tokens = after.filter(isToken);
        if (tokens.length !== 1 || reads.length !== 1)
          s.fail(
            `After token_expired the client asked for ${tokens.length} new token(s) and sent the read ${reads.length} more time(s); the document: one new token, the request repeated once.`,
          );
        if (!issuedToken(tokens[0]!).includes(bearerOf(reads[0]!)))
          s.fail('The client repeated the read without the new token it had just been given.');
        if (!valueIn(answer)) s.fail(`The repeated read succeeded, yet the client reports ${describeAnswer(answer)}.`);
      }),
  },
  {
    id: 'CLIENT-007',
    clauses: ['auth.expired'],
    section: AUTH,
    title: 'A repeat that is also answered token_expired is not repeated again: the client reports it',
    run: (run) =>
      readAnswered(run, 'token_expired', Number.POSITIVE_INFINITY, (s, answer, after) => {
        const reads = after.filter(isSessionRead).length;
        const tokens = after.filter(isToken).length;
        if (reads > 1 || tokens > 1)
          s.fail(
            `After token_expired the client sent the read ${reads} more times and asked for ${tokens} new tokens: the request is repeated once, not until it works.`,
          );
        if (errorOf(answer)?.code !== 'token_expired')
          s.fail(`The client reports ${describeAnswer(answer)}, not the token_expired it was answered.`);
      }),
  },
  {
    id: 'CLIENT-008',
    clauses: ['auth.removed', 'code.unknown-api-key', 'status.401'],
    section: AUTH,
    title: 'unknown_api_key is reported as it is: no new token, no repeat',
    run: (run) =>
      readAnswered(run, 'unknown_api_key', Number.POSITIVE_INFINITY, (s, answer, after) => {
        const reads = after.filter(isSessionRead).length;
        const tokens = after.filter(isToken).length;
        // "A new token does not help", and a 401 other than token_expired is not retried.
        if (reads > 0 || tokens > 0)
          s.fail(
            `After unknown_api_key the client sent the read ${reads} more time(s) and asked for ${tokens} new token(s): a new token does not help.`,
          );
        const error = errorOf(answer);
        if (error?.code !== 'unknown_api_key' || error.retryable)
          s.fail(`The client reports ${describeAnswer(answer)}: unknown_api_key, not to be retried, was expected.`);
      }),
  },
  {
    id: 'CLIENT-009',
    clauses: [
      'status.400',
      'status.401',
      'status.404',
      'code.validation-failed',
      'code.invalid-token',
      'code.not-found',
    ],
    section: ERRORS,
    title: 'validation_failed, invalid_token and not_found are reported as such, and not sent again',
    async run(run) {
      await run.scenario(
        on(isCreate, (n, r) =>
          n === 1
            ? { answer: errorReply(r, 400, 'validation_failed', 'amount.total') }
            : n === 2
              ? { answer: errorReply(r, 401, 'invalid_token') }
              : undefined,
        ),
        async (s) => {
          const cases: Array<[string, Parameters<Scenario['ask']>[0], (r: Recorded) => boolean]> = [
            ['validation_failed', { op: 'createSession', body: sessionBody() }, isCreate],
            ['not_found', { op: 'readSession', sessionId: 'cs_conformanceNoSuchSession' }, isSessionRead],
            ['invalid_token', { op: 'createSession', body: sessionBody() }, isCreate],
          ];
          for (const [code, ask, sameKind] of cases) {
            const answer = await s.ask(ask);
            expectAnswered(s, answer, `A request answered ${code}`);
            const sent = during(s, last(s));
            const answered = sent.find(sameKind);
            const after = sent.filter((r) => answered !== undefined && r.seq > answered.seq);
            if (after.some(sameKind) || after.some(isToken))
              s.fail(
                `After ${code} the client sent the request again${after.some(isToken) ? ' with a new token' : ''}: the document says not without a change.`,
              );
            expectReported(s, answer, code);
          }
        },
      );
    },
  },
  {
    id: 'CLIENT-010',
    clauses: ['code.guidance', 'status.400'],
    section: ERRORS,
    title: 'The four account-configuration codes are reported, not retried',
    async run(run) {
      const codes = ACCOUNT_CONFIGURATION_CODES;
      await run.scenario(
        on(isCreate, (n, r) => (n <= codes.length ? { answer: errorReply(r, 400, codes[n - 1]!) } : undefined)),
        async (s) => {
          for (const code of codes) {
            // Each create is answered with the next code, whatever the client sends.
            const answer = await s.ask({ op: 'createSession', body: sessionBody() });
            expectAnswered(s, answer, `A create answered ${code}`);
            const creates = during(s, last(s)).filter(isCreate).length;
            if (creates > 1)
              s.fail(
                `The client sent the create ${creates} times after ${code}: it is fixed in the portal, not by retrying.`,
              );
            expectReported(s, answer, code);
          }
        },
      );
    },
  },
  {
    id: 'CLIENT-011',
    clauses: ['code.open', 'ver.open-sets'],
    section: ERRORS,
    title: 'An error code the client has never seen is a generic failure: no crash, no retry',
    async run(run) {
      await run.scenario(
        on(isCreate, (n, r) => (n === 1 ? { answer: errorReply(r, 400, 'payment_method_paused') } : undefined)),
        async (s) => {
          const answer = await s.ask({ op: 'createSession', body: sessionBody() });
          expectAnswered(s, answer, 'A create answered with an error code added after the client was written');
          if (valueIn(answer)) s.fail('The client reports success for a create answered 400.');
          const creates = during(s, last(s)).filter(isCreate).length;
          if (creates > 1) s.fail(`The client sent the create ${creates} times after a 400.`);
        },
      );
    },
  },
  {
    id: 'CLIENT-012',
    clauses: ['state.open', 'ver.open-sets', 'svc.read', 'state.completed'],
    section: STATES,
    title: 'A status the client has never seen is read without error, and only completed is taken as paid',
    async run(run) {
      // Each read gives the status the check names now: one the client has never seen, then
      // every status the document names but completed.
      let status = 'authorised';
      const statusNamed: Script = (r) =>
        isSessionRead(r)
          ? {
              rewrite: (reply) => {
                try {
                  const body = JSON.parse(reply.body);
                  return reply.status === 200 ? { ...reply, body: JSON.stringify({ ...body, status }) } : reply;
                } catch {
                  return reply;
                }
              },
            }
          : 'forward';
      await run.scenario(statusNamed, async (s) => {
        const id = await createdId(s);
        const read = await s.ask({ op: 'readSession', sessionId: id });
        expectAnswered(s, read, 'A session read with the status "authorised"');
        if (!valueIn(read))
          s.fail(`Reading a session whose status the client does not know fails: ${describeAnswer(read)}.`);
        if (valueIn(read)?.status !== 'authorised')
          s.fail(
            `The client reports status ${JSON.stringify(valueIn(read)?.status)} for a session read as "authorised".`,
          );
        for (status of ['authorised', 'created', 'pending', 'failed', 'expired']) {
          let confirmed: Answer;
          try {
            confirmed = await s.ask({ op: 'confirmPayment', sessionId: id });
          } catch (error) {
            // confirmPayment is an operation a driver may lack: the read alone is judged then.
            if (error instanceof CheckSkipped) return;
            throw error;
          }
          expectAnswered(s, confirmed, `Deciding fulfilment on the status "${status}"`);
          const value = valueIn(confirmed);
          if (!value)
            return s.fail(`Deciding fulfilment on the status "${status}" fails: ${describeAnswer(confirmed)}.`);
          if (value.paid !== false) s.fail(`The client would fulfil a session whose status is "${status}".`);
        }
      });
    },
  },
  answerLost(
    'CLIENT-013',
    'A create answered 500 after the target committed it: a retry carries the same key and body and gets that session',
    (r) => ({ commit: errorReply(r, 500, 'internal_error') }),
  ),
  answerLost(
    'CLIENT-014',
    'A create whose connection is reset after the target committed it: a retry carries the same key and body',
    () => ({ commitThenReset: true }),
  ),
  answerLost(
    'CLIENT-015',
    'A create whose answer never comes: a retry after the client gives up carries the same key and body',
    (_r, run) => ({ commitThenHold: Math.max(10_000, 3 * run.settings.requestTimeoutMs) }),
  ),
  {
    id: 'CLIENT-016',
    clauses: ['status.500', 'order.500'],
    section: ERRORS,
    title: 'internal_error is retried, waiting between tries, under the same key, and the client stops',
    async run(run) {
      await run.scenario(
        on(isCreate, (_n, r) => ({ answer: errorReply(r, 500, 'internal_error') })),
        async (s) => {
          const answer = await s.ask({ op: 'createSession', body: sessionBody() });
          expectAnswered(s, answer, 'A create answered 500 every time');
          const creates = during(s, last(s)).filter(isCreate);
          // Without a key a retry may make a second payment (Idempotency rules 3): not retrying
          // is then right, and CLIENT-004 judges the missing key.
          if (creates.length < 2 && creates[0]?.headers['idempotency-key'])
            s.fail('The client did not retry the create answered 500 (the document: retry, with exponential backoff).');
          if (creates.length > MOST_ATTEMPTS)
            s.fail(`The client sent the create ${creates.length} times: it does not stop.`);
          judgeRepeats(s, creates, undefined);
          // Backoff with jitter may draw any wait up to its ceiling, a short one too, so single
          // waits are not judged; waiting next to nothing in all is hammering, not backing off.
          const waited = (creates.at(-1)?.at ?? 0) - (creates[0]?.at ?? 0);
          if (creates.length >= 2 && waited < MIN_BACKOFF_MS * (creates.length - 1))
            s.fail(
              `The client sent the create ${creates.length} times within ${waited} ms: it retried without backing off.`,
            );
          if (valueIn(answer)) s.fail('The client reports success, yet every attempt was answered 500.');
        },
      );
    },
  },
  {
    id: 'CLIENT-017',
    clauses: ['auth.exchange'],
    assumption:
      'the token endpoint may answer 429 with Retry-After (our modelling of its throttling; the document names no limit): a client asks again no sooner than that',
    section: AUTH,
    title: 'A token request answered 429 is not sent again before its Retry-After',
    async run(run) {
      const throttled: Reply = {
        status: 429,
        headers: { 'content-type': 'application/json', 'retry-after': String(RETRY_AFTER_S) },
        body: JSON.stringify({ error: 'Too many requests - retry after the time in Retry-After' }),
      };
      await run.scenario(
        on(isToken, (n) => (n === 1 ? { answer: throttled } : undefined)),
        async (s) => {
          const answer = await s.ask({ op: 'createSession', body: sessionBody() });
          expectAnswered(s, answer, 'A create whose token request was answered 429');
          const [first, again] = s.requests.filter(isToken);
          if (first && again && again.at - first.at < RETRY_AFTER_S * 1000 - 50)
            s.fail(
              `The client asked for a token again ${again.at - first.at} ms after a 429 whose Retry-After was ${RETRY_AFTER_S} s.`,
            );
        },
      );
    },
  },
  {
    id: 'CLIENT-018',
    clauses: [
      'sig.format',
      'sig.digest',
      'sig.versions',
      'verify.split',
      'verify.raw',
      'verify.age',
      'sig.reject-unsigned',
    ],
    section: EVENTS,
    title:
      'Webhook verification: a genuine delivery verifies (extra versions, any part order); tampered, foreign, stale and unsigned ones do not',
    async run(run) {
      await run.scenario(forwardAll, async (s) => {
        const secret = s.org.webhookSigningSecret;
        const now = Math.floor(Date.now() / 1000);
        const body = eventBody('checkout_session.completed');
        const header = signWebhook(body, secret, { timestamp: now });
        const v1 = /v1=([0-9a-f]+)/.exec(header)![1];
        const cases: Array<[string, string, Record<string, string>, boolean]> = [
          ['a genuine delivery', body, { 'service-signature': header }, true],
          [
            'a genuine delivery with another version beside v1 and its parts reordered',
            body,
            { 'service-signature': `v2=${'ab'.repeat(32)},v1=${v1},t=${now}` },
            true,
          ],
          [
            'a delivery whose body was changed after signing',
            body.replace('"createdAt"', '"createdAt" '),
            { 'service-signature': header },
            false,
          ],
          [
            'a delivery signed with another secret',
            body,
            { 'service-signature': signWebhook(body, `${secret}x`, { timestamp: now }) },
            false,
          ],
          [
            'a delivery whose t is six minutes old',
            body,
            { 'service-signature': `t=${now - 360},v1=${computeSignature(body, secret, now - 360)}` },
            false,
          ],
          ['a delivery without Service-Signature', body, {}, false],
        ];
        for (const [what, raw, headers, genuine] of cases) {
          const answer = await s.ask({
            op: 'verifyWebhook',
            body: raw,
            headers: { 'content-type': 'application/json', ...headers },
          });
          expectAnswered(s, answer, what);
          const value = valueIn(answer);
          if (genuine && (value?.kind !== 'event' || value.event !== 'checkout_session.completed'))
            s.fail(
              `${what}: the client reports ${describeAnswer(answer)}; it verifies, as the event checkout_session.completed.`,
            );
          // The transaction is what a receiver deduplicates on: it must come through as sent.
          if (genuine && value?.transactionId !== JSON.parse(raw).transactionId)
            s.fail(
              `${what}: the client reports transactionId ${JSON.stringify(value?.transactionId)}, not the delivery's.`,
            );
          if (!genuine && value)
            s.fail(`${what}: the client accepts it (${describeAnswer(answer)}); it must be rejected.`);
        }
      });
    },
  },
  {
    id: 'CLIENT-019',
    clauses: ['event.unknown', 'ver.open-sets'],
    section: EVENTS,
    title: 'A signed event of a kind the client has never seen verifies, and is given back as that kind',
    async run(run) {
      await run.scenario(forwardAll, async (s) => {
        const body = eventBody('checkout_session.disputed');
        const answer = await s.ask({
          op: 'verifyWebhook',
          body,
          headers: {
            'content-type': 'application/json',
            'service-signature': signWebhook(body, s.org.webhookSigningSecret),
          },
        });
        expectAnswered(s, answer, 'A signed event of an unknown kind');
        const value = valueIn(answer);
        if (value?.kind !== 'event' || value.event !== 'checkout_session.disputed')
          s.fail(
            `The client reports ${describeAnswer(answer)}; receivers ignore unknown events and still answer 2xx, so it must verify and be told apart.`,
          );
      });
    },
  },
  {
    id: 'CLIENT-020',
    clauses: ['legacy.branch', 'sig.reject-unsigned'],
    section: EVENTS,
    title: 'A legacy two-field body (no event, no signature) is rejected, or taken as legacy: never as a signed event',
    async run(run) {
      await run.scenario(forwardAll, async (s) => {
        const body = JSON.stringify({ transactionId: randomUUID(), foreignTransactionId: null });
        const answer = await s.ask({ op: 'verifyWebhook', body, headers: { 'content-type': 'application/json' } });
        expectAnswered(s, answer, 'A legacy two-field delivery');
        const value = valueIn(answer);
        if (value && value.kind !== 'legacy')
          s.fail(`The client takes an unsigned legacy body as ${describeAnswer(answer)}.`);
      });
    },
  },
  {
    id: 'CLIENT-021',
    clauses: ['redirect.not-proof', 'svc.read'],
    section: 'Endpoints: POST /api/checkout-sessions',
    title:
      'A redirect carrying ids is not proof of payment: the client reads the session back, and only completed is paid',
    uses: ['attempt'],
    async run(run) {
      await run.scenario(forwardAll, async (s) => {
        const unpaid = await run.sessionOf(s);
        const forged = `https://shop.example.com/thanks?order=1001&transactionId=${randomUUID()}&checkoutSessionId=${unpaid.id}`;
        const answer = await s.ask({ op: 'confirmRedirect', url: forged });
        expectAnswered(s, answer, 'The payer landing on redirectUrl with the ids of an unpaid session');
        if (valueIn(answer)?.paid !== false)
          s.fail(
            `For a redirect naming an unpaid session, the client reports ${describeAnswer(answer)}: the ids are not proof of payment.`,
          );
        if (!during(s, last(s)).some((r) => isSessionRead(r) && r.url.includes(unpaid.id)))
          s.fail('The client decided without reading the session back.');
        const attempt = run.settings.adapter.attempt;
        if (!attempt || !run.settings.adapter.capabilities.includes('attempt')) return;
        const paid = await run.sessionOf(s);
        let redirectTo: string | null;
        try {
          ({ redirectTo } = await attempt.call(
            run.settings.adapter,
            { kind: 'checkout-session', id: paid.id },
            'card',
            'succeeded',
          ));
        } catch (error) {
          throw new AdapterError(`attempt failed: ${(error as Error).message}`);
        }
        if (!redirectTo) return;
        // A target may complete a payment a moment after the payer is sent back: the client is
        // judged on a session that reads completed, as the suite reads it.
        const deadline = Date.now() + SETTLE_TIMEOUT_MS;
        while ((await run.statusOf(s, paid.id)) !== 'completed')
          if (Date.now() > deadline) return;
          else await new Promise((resolve) => setTimeout(resolve, 250));
        const landed = await s.ask({ op: 'confirmRedirect', url: redirectTo });
        expectAnswered(s, landed, 'The payer landing on redirectUrl after paying');
        if (valueIn(landed)?.paid !== true)
          s.fail(
            `For the redirect of a completed payment, the client reports ${describeAnswer(landed)}: read back, it is paid.`,
          );
      });
    },
  },
  answerLost(
    'CLIENT-022',
    'A create answered 500 before the target saw it: a retry carries the same key and body and gets the one session made',
    (r) => ({ answer: errorReply(r, 500, 'internal_error') }),
  ),
];

/**
 * A create whose answer the client did not get as the target gave it (a 500 before or after
 * the target committed it, a reset, an answer withheld): any repeat carries the first key and
 * body, and a success gives the session the target made.
 */
function answerLost(id: string, title: string, plan: (r: Recorded, run: ClientRun) => Plan): ClientCheck {
  return {
    id,
    clauses: ['idem.no-key', 'idem.replay', 'order.500'],
    section: IDEM,
    title,
    async run(run) {
      await run.scenario(
        on(isCreate, (n, r) => (n === 1 ? plan(r, run) : undefined)),
        async (s) => {
          const answer = await s.ask({ op: 'createSession', body: sessionBody() });
          expectAnswered(s, answer, 'A create whose answer was lost');
          const creates = during(s, last(s)).filter(isCreate);
          judgeRepeats(s, creates, idOf(creates.find((r) => r.target)?.target?.body));
        },
      );
    },
  };
}

/** A delivery body as the service sends it (Events: Payload). */
function eventBody(event: string): string {
  return JSON.stringify({
    event,
    createdAt: new Date().toISOString(),
    checkoutSessionId: `cs_${randomUUID().replace(/-/g, '')}`,
    transactionId: randomUUID(),
    foreignTransactionId: null,
  });
}

/** Decimal places of a JSON number literal's value (2.5e1 has none, 1.005 three). */
function decimals(literal: string): number {
  const [mantissa, exponent = '0'] = literal.toLowerCase().split('e');
  const fraction = (mantissa!.split('.')[1] ?? '').replace(/0+$/, '');
  return Math.max(0, fraction.length - Number(exponent));
}

/**
 * TRAFFIC checks of the clients' side: what each client sent, alone and in sequence
 * (service document: Authentication, General conventions, Idempotency rules, Errors). The
 * rules are the `client` mode's (rules/client.ts); here they judge requests recorded
 * anywhere, grouped by the client that sent them (context.ts says how).
 */
import { CheckFailure, CheckSkipped } from '../../../core/outcome.ts';
import { amountProblem, backoffProblem, repeatProblem, retryAfterProblem, sameJson } from '../../../rules/client.ts';
import {
  apiPath,
  clientIdOf,
  issuedTokenOf,
  tokenIdOf,
  errorCodeOf,
  isCreate,
  isTokenRequest,
  named,
  TOKEN_LIFETIME_MS,
  type TrafficRun,
} from '../context.ts';
import type { Observed } from '../read.ts';
import { evidenceOf, firstWrong, lifetimeMs, type TrafficCheck } from './service.ts';

const AUTH = 'Authentication';
const IDEMPOTENCY = 'Idempotency';

/**
 * The same request again: method, path, Idempotency-Key and body alike (the body as a JSON
 * value). Another key is another payment the client means to make, not a retry.
 */
const sameRequest = (a: Observed, b: Observed) =>
  a.entry.request.method === b.entry.request.method &&
  apiPath(a) === apiPath(b) &&
  a.entry.request.headers['idempotency-key'] === b.entry.request.headers['idempotency-key'] &&
  sameJson(a.entry.request.body ?? '', b.entry.request.body ?? '');

const statusOf = (o: Observed) => o.entry.response?.status;

function fail(o: Observed, message: string): never {
  throw new CheckFailure(`${named(o)}: ${message}`, { evidence: evidenceOf(o) });
}

/** A client's sequences, each with at least two requests: what a rule about repeats needs. */
function sequences(run: TrafficRun): Map<string, Observed[]> {
  const parties = new Map([...run.byParty(run.sent)].filter(([, list]) => list.length > 1));
  if (parties.size === 0)
    throw new CheckSkipped(
      'the traffic holds no client with two requests known to be its own (a token issued in the traffic, or shown by value)',
    );
  return parties;
}

/** Tokens issued to each client, in order, with when and for how long, and when each was last used. */
function tokenLives(run: TrafficRun) {
  const lives = new Map<string, Array<{ token: string; issued: Observed; lifeMs: number; lastUse: number }>>();
  for (const o of run.api) {
    if (!isTokenRequest(o) || statusOf(o) !== 200) continue;
    const token = issuedTokenOf(o);
    const client = clientIdOf(o) ?? o.client;
    if (!token || !client) continue;
    lives.set(client, [
      ...(lives.get(client) ?? []),
      { token, issued: o, lifeMs: lifetimeMs(o) ?? TOKEN_LIFETIME_MS, lastUse: o.entry.startedAt },
    ]);
  }
  for (const o of run.sent) {
    const token = tokenIdOf(o);
    const owner = token ? run.ownerOf(token) : undefined;
    const life = owner ? lives.get(owner)?.find((l) => l.token === token) : undefined;
    if (life) life.lastUse = Math.max(life.lastUse, o.entry.startedAt);
  }
  return lives;
}

export const clientChecks: TrafficCheck[] = [
  {
    id: 'TRAFFIC-030',
    clauses: ['auth.exchange', 'token.form', 'conv.request-body', 'token.client-id', 'token.client-secret'],
    section: AUTH,
    title: 'every token request is a form-encoded POST /api/token with clientId and clientSecret',
    run: async (run) =>
      firstWrong(
        run.expectSent((o) => isTokenRequest(o) && o.requestBodyRecorded, 'token request with its body'),
        (o) => {
          const type = o.entry.request.headers['content-type'] ?? '';
          if (!/^application\/x-www-form-urlencoded\b/i.test(type))
            return `sent as ${type || 'no content type'}; the token endpoint takes application/x-www-form-urlencoded`;
          const form = new URLSearchParams(o.entry.request.body ?? '');
          const missing = ['clientId', 'clientSecret'].filter((field) => !form.get(field));
          return missing.length > 0 ? `the form has no ${missing.join(' and no ')}` : undefined;
        },
        'token requests',
      ),
  },
  {
    id: 'TRAFFIC-031',
    clauses: ['auth.bearer'],
    section: AUTH,
    title: 'every other request to the API carries Authorization: Bearer <token>',
    run: async (run) =>
      firstWrong(
        run.expectSent((o) => !isTokenRequest(o), 'request to the API other than for a token'),
        (o) => {
          const value = o.entry.request.headers.authorization;
          if (value === undefined) return 'no Authorization header';
          return /^Bearer \S+$/.test(value)
            ? undefined
            : `Authorization is not Bearer <token>: ${value.split(' ')[0]} …`;
        },
        'requests',
      ),
  },
  {
    id: 'TRAFFIC-032',
    clauses: ['auth.reuse', 'res.token.reuse'],
    section: AUTH,
    title: 'a client reuses its token for its lifetime: a live token is not replaced by a new one',
    async run(run) {
      const lives = [...tokenLives(run)].filter(([, list]) => list.some((l) => l.lastUse > l.issued.entry.startedAt));
      if (lives.length === 0)
        throw new CheckSkipped('the traffic holds no token issued to a client and then used by value');
      for (const [client, list] of lives)
        for (const [i, life] of list.entries()) {
          const next = list[i + 1];
          if (!next) continue;
          const issuedAt = life.issued.entry.startedAt;
          const nextAt = next.issued.entry.startedAt;
          // Several instances of one client each keep a token: one still used after the next
          // was issued is another instance's, not a replaced one.
          const replaced = life.lastUse <= nextAt && nextAt < issuedAt + life.lifeMs;
          const refused = run.sent.some(
            (o) =>
              tokenIdOf(o) === life.token &&
              o.entry.startedAt <= nextAt &&
              ['token_expired', 'invalid_token'].includes(errorCodeOf(o) ?? ''),
          );
          if (replaced && !refused && !run.clockMovedBetween(life.issued, next.issued))
            fail(
              next.issued,
              `client ${client} asked for a new token ${Math.round((nextAt - issuedAt) / 1000)} s after the last (${named(life.issued)}), which was never refused and lasts ${Math.round(life.lifeMs / 1000)} s; it then stopped using the old one.`,
            );
        }
    },
  },
  {
    id: 'TRAFFIC-033',
    clauses: ['auth.expired', 'res.token.reuse'],
    section: AUTH,
    title: 'after token_expired a client repeats the request once, with a new token',
    async run(run) {
      let judged = 0;
      for (const [, list] of sequences(run))
        for (const [i, o] of list.entries()) {
          if (errorCodeOf(o) !== 'token_expired') continue;
          const later = list.slice(i + 1);
          // The recording ended before the client could act: nothing to judge.
          if (later.length === 0) continue;
          judged += 1;
          const repeats = later.filter((r) => sameRequest(r, o));
          const expiredAgain = repeats.findIndex((r) => errorCodeOf(r) === 'token_expired');
          if (repeats.length === 0)
            fail(o, 'the client went on without repeating the request: the document repeats it once, with a new token');
          if (expiredAgain >= 0 && repeats.length > expiredAgain + 1)
            fail(
              repeats[expiredAgain + 1]!,
              'the repeat was answered token_expired too, and sent again: a client reports it',
            );
          if (repeats.length > 1 && expiredAgain < 0 && statusOf(repeats[0]!) !== 500)
            fail(repeats[1]!, `sent ${repeats.length} times after token_expired; the document repeats it once`);
          if (tokenIdOf(repeats[0]!) !== undefined && tokenIdOf(repeats[0]!) === tokenIdOf(o))
            fail(repeats[0]!, 'repeated with the token that expired');
        }
      if (judged === 0) throw new CheckSkipped('the traffic holds no token_expired answer a client went on after');
    },
  },
  {
    id: 'TRAFFIC-034',
    clauses: [
      'status.400',
      'status.401',
      'status.404',
      'code.validation-failed',
      'code.invalid-token',
      'code.not-found',
      'auth.removed',
    ],
    section: 'Errors',
    title: 'a request answered 400, 404, or 401 other than token_expired is not sent again as it was',
    async run(run) {
      let judged = 0;
      for (const [, list] of sequences(run))
        for (const [i, o] of list.entries()) {
          const status = statusOf(o);
          if (!(status === 400 || status === 404 || (status === 401 && errorCodeOf(o) !== 'token_expired'))) continue;
          // The client's very next request, a token fetched on the way aside, the same as the
          // refused one is a retry of it. A new token changes nothing of a 400 or a 404; a 401
          // other than token_expired is repeated as it was only with the same token.
          const next = isTokenRequest(o) ? list[i + 1] : list.slice(i + 1).find((later) => !isTokenRequest(later));
          if (!next) continue;
          judged += 1;
          if (sameRequest(next, o) && (status !== 401 || tokenIdOf(next) === tokenIdOf(o)))
            fail(
              next,
              `sent again as it was after ${named(o)}; the document: an answer of ${status} is reported, not retried`,
            );
        }
      if (judged === 0) throw new CheckSkipped('the traffic holds no 400, 404 or 401 answer a client went on after');
    },
  },
  {
    id: 'TRAFFIC-035',
    clauses: ['idem.no-key', 'idem.replay', 'order.500'],
    section: IDEMPOTENCY,
    title: 'a create sent again carries the same Idempotency-Key and the same body',
    async run(run) {
      let judged = 0;
      for (const [, list] of sequences(run)) {
        const creates = list.filter((o) => isCreate(o) && o.requestBodyRecorded);
        for (const [i, o] of creates.entries()) {
          // A create the target failed (500, or no answer) is one a client retries.
          if (o.entry.response !== undefined && statusOf(o)! < 500) continue;
          const again = creates[i + 1];
          if (!again) continue;
          judged += 1;
          const problem = repeatProblem(
            { key: o.entry.request.headers['idempotency-key'], body: o.entry.request.body ?? '' },
            { key: again.entry.request.headers['idempotency-key'], body: again.entry.request.body ?? '' },
          );
          // Another key and another body: a new payment, not a retry.
          const retry =
            sameJson(again.entry.request.body ?? '', o.entry.request.body ?? '') ||
            again.entry.request.headers['idempotency-key'] === o.entry.request.headers['idempotency-key'];
          if (problem && retry) fail(again, `the create after ${named(o)} was sent again ${problem}`);
        }
      }
      if (judged === 0)
        throw new CheckSkipped('the traffic holds no create that failed and a later create of its client');
    },
  },
  {
    id: 'TRAFFIC-036',
    clauses: ['create.idempotency-key'],
    // The document strongly recommends the key; a create without one is not refused.
    level: 'should',
    section: IDEMPOTENCY,
    title: 'every create carries an Idempotency-Key',
    run: async (run) =>
      firstWrong(
        run.expectSent(isCreate, 'create'),
        (o) =>
          o.entry.request.headers['idempotency-key']
            ? undefined
            : 'no Idempotency-Key: a retry may make a second payment',
        'creates',
      ),
  },
  {
    id: 'TRAFFIC-037',
    clauses: ['status.500', 'order.500'],
    section: 'Errors',
    title: 'a create answered 500 is retried under its key, backing off, and not without end',
    async run(run) {
      let judged = 0;
      for (const [, list] of sequences(run)) {
        const byKey = new Map<string, Observed[]>();
        for (const o of list.filter(isCreate)) {
          const key = o.entry.request.headers['idempotency-key'];
          if (key) byKey.set(key, [...(byKey.get(key) ?? []), o]);
        }
        for (const tries of byKey.values()) {
          const failing = tries.filter((o) => statusOf(o) === 500);
          if (failing.length < 2) continue;
          judged += 1;
          const problem = backoffProblem(tries.map((o) => o.entry.startedAt));
          if (problem) fail(tries.at(-1)!, `the create was sent ${problem}`);
        }
      }
      if (judged === 0) throw new CheckSkipped('the traffic holds no create answered 500 and retried');
    },
  },
  {
    id: 'TRAFFIC-038',
    clauses: ['conv.amounts', 'create.total'],
    section: 'General conventions',
    title: 'amounts go out as JSON numbers with at most two decimals',
    run: async (run) =>
      firstWrong(
        run.expectSent(
          (o) => o.entry.request.method === 'POST' && apiPath(o) === '/api/checkout-sessions' && o.requestBodyRecorded,
          'checkout session create with its body',
        ),
        (o) => amountProblem(o.entry.request.body ?? ''),
        'creates',
      ),
  },
  {
    id: 'TRAFFIC-039',
    clauses: ['auth.exchange'],
    assumption:
      'the service may answer 429 with Retry-After (our modelling of its throttling; the document shows no rate limit): a client asks again no sooner than that',
    section: AUTH,
    title: 'a request answered 429 is not sent again before its Retry-After',
    async run(run) {
      let judged = 0;
      for (const [, list] of sequences(run))
        for (const [i, o] of list.entries()) {
          const retryAfter = o.entry.response?.headers['retry-after'];
          if (statusOf(o) !== 429 || retryAfter === undefined) continue;
          // The same request again, the next of its kind: a token request, or the one refused.
          const again = list
            .slice(i + 1)
            .find((next) => (isTokenRequest(o) ? isTokenRequest(next) : sameRequest(next, o)));
          if (!again) continue;
          judged += 1;
          const problem = retryAfterProblem(
            again.entry.startedAt - o.entry.startedAt,
            retryAfter,
            o.entry.startedAt + (o.entry.durationMs ?? 0),
          );
          if (problem) fail(again, `sent again ${problem}`);
        }
      if (judged === 0)
        throw new CheckSkipped('the traffic holds no 429 with a Retry-After a client asked again after');
    },
  },
];

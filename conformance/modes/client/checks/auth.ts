/** CLIENT checks of Authentication: the token exchange, bearer tokens, their reuse and renewal, a removed key. */
import { sessionBody } from '../context.ts';
import { isSessionRead, isToken } from '../service.ts';
import type { Reply } from '../../../core/exchange.ts';
import { retryAfterProblem } from '../../../rules/client.ts';
import {
  AUTH,
  bearerOf,
  type ClientCheck,
  errorOf,
  expectAnswered,
  expectSeen,
  issuedToken,
  on,
  readAnswered,
  RETRY_AFTER_S,
  traffic,
  valueIn,
} from '../scenarios.ts';

export const authChecks: ClientCheck[] = [
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
      const others = s.requests.filter((x) => !isToken(x));
      expectSeen('request other than a token request', others.length);
      for (const r of others) {
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
      expectSeen('call with a token', calls);
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
        if (!valueIn(answer)) s.fail(`The repeated read succeeded, yet the client reports ${s.describe(answer)}.`);
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
          s.fail(`The client reports ${s.describe(answer)}, not the token_expired it was answered.`);
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
          s.fail(`The client reports ${s.describe(answer)}: unknown_api_key, not to be retried, was expected.`);
      }),
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
          expectSeen('token request', first ? 1 : 0);
          const problem = first && again && retryAfterProblem(again.at - first.at, String(RETRY_AFTER_S), first.at);
          if (problem) s.fail(`The client asked for a token again ${problem}.`);
        },
      );
    },
  },
];

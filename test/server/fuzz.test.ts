/**
 * Property-based fuzzing of the reference server (fast-check) through real HTTP: about
 * 3000 arbitrary and near-valid requests to the create, token and read endpoints and to
 * random paths and methods. Every answer must hold to what the document and description
 * promise:
 *
 * - never a 5xx, and always a JSON body (HEAD aside; the docs pages are HTML);
 * - outside `/api/token`, every 4xx is the envelope
 *   `{ error: { code, message, param, doc_url } }`, `doc_url` = `{docs_url}/errors/#<code>`,
 *   and `details` (a non-empty list of `{ field, constraints }`) exactly on `validation_failed`;
 * - `POST /api/token` answers its 4xx as `{ error: <string> }` with the document's texts;
 * - an answer of a described operation with a documented status is valid against the
 *   description (test/support/server.ts `contractProblems`);
 * - near-valid creates get the answer a model of the rules predicts: 401 for bad
 *   credentials, `validation_failed` exactly when the body or header breaks the schema,
 *   200 for a valid body (or `idempotency_error` for a reused key, `currency_mismatch` for AUD).
 *
 * Afterwards the server is still healthy and every 200 of a create is a session that
 * reads back, as many as the store holds. The server bugs this file once found have their
 * own regression tests (fuzz-regressions.test.ts), and the generators draw their inputs too
 * (malformed percent-escapes in paths, a request sent as a JSON string, an unknown query
 * parameter on a read, a deeply nested extra field under an Idempotency-Key). What every
 * answer is held to, and the model of a create's answer, live in fuzz-judge.ts; the
 * generators in fuzz-inputs.ts.
 *
 * @tags postgres
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TOKEN, sessionRequest } from '../support/server.ts';
import {
  characters,
  clip,
  created,
  createdTestIds,
  createProblems,
  errorCode,
  FORM,
  fail,
  fresh200,
  headersFor,
  headerValue,
  keysSent,
  modeOf,
  org,
  recordCreate,
  replayedIds,
  requestSchema,
  runBatch,
  startFuzzTarget,
  stats,
  t,
  TOKEN_FIELD_MAX,
  TOKEN_INVALID,
  TOKEN_MALFORMED,
  TOKEN_TOO_MANY,
} from './fuzz-judge.ts';
import { paced } from '../support/pace.ts';
import {
  anyMethod,
  pathPrefix,
  pathQuery,
  pathSegment,
  rawPathSegment,
  AUTH_CODE,
  type Auth,
  applyMutations,
  auth,
  extraHeaders,
  idempotencyKey,
  longString,
  type Mutation,
  mutation,
  printable,
  VALID_AUTH,
  validBody,
} from './fuzz-inputs.ts';

const BATCH = { minLength: 1, maxLength: 8 };

describe('fuzzing the reference server', () => {
  beforeAll(startFuzzTarget);

  afterAll(async () => {
    await t?.close();
    console.info(
      `fuzz: ${stats.sent} requests ${JSON.stringify(stats.byProperty)}; ${fresh200} sessions created, ${replayedIds.size} replayed ids`,
    );
  });

  it(
    'POST /api/checkout-sessions with near-valid bodies gets the answer the rules predict',
    async () => {
      const spec = fc.record({
        base: fc.oneof({ weight: 1, arbitrary: fc.constant(sessionRequest()) }, { weight: 2, arbitrary: validBody }),
        mutations: fc.oneof(
          { weight: 1, arbitrary: fc.constant<Mutation[]>([]) },
          { weight: 2, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 4 }) },
        ),
        auth: auth(6),
        key: idempotencyKey,
        extra: extraHeaders,
        // Send the very same request twice at once: one create, and one replay of it (rule 1).
        twice: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(spec, BATCH), async (drawn) => {
          const specs = drawn.flatMap((s) => (s.twice && s.key !== undefined ? [s, s] : [s]));
          const keyIds = specs.map((s) =>
            s.key !== undefined && VALID_AUTH.has(s.auth.kind)
              ? `${modeOf(s.auth)}\u0000${headerValue(s.key)}`
              : undefined,
          );
          // Reused: sent before, or by another request of this concurrent batch.
          const keyReused = keyIds.map(
            (id, i) => id !== undefined && (keysSent.has(id) || keyIds.some((o, j) => j !== i && o === id)),
          );
          for (const id of keyIds) if (id !== undefined) keysSent.add(id);
          const exchanges = await runBatch(
            'create (near-valid)',
            specs,
            (s) => ({
              method: 'POST',
              path: '/api/checkout-sessions',
              headers: headersFor(s.auth, s.extra, s.key, 'application/json'),
              body: JSON.stringify(applyMutations(s.base, s.mutations)),
            }),
            (s, ex, i) => createProblems(s.auth, JSON.parse(ex.body!), s.key, ex, keyReused[i]!),
          );
          // A request sent twice at once with one key gets one answer, at most one of them new.
          for (let i = 1; i < specs.length; i++) {
            if (specs[i] !== specs[i - 1]) continue;
            const [a, b] = [exchanges[i - 1]!, exchanges[i]!];
            const fresh = [a, b].filter(
              (ex) => ex.answer.status === 200 && ex.answer.headers.get('idempotent-replayed') !== 'true',
            ).length;
            const same =
              a.answer.status === b.answer.status && (a.answer.status !== 200 || a.answer.body.id === b.answer.body.id);
            if (!same || fresh > 1)
              fail(b, [
                `the same request with the same Idempotency-Key, sent twice at once, got different answers (first: ${a.answer.status} ${clip(a.answer.text, 200)})`,
              ]);
          }
        }),
        { numRuns: 250 },
      );
    },
    paced(60_000),
  );

  it(
    'POST /api/checkout-sessions with arbitrary bodies, content types and headers never fails the server',
    async () => {
      const valid = JSON.stringify(sessionRequest());
      const rawBody = fc.oneof(
        fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
        fc.string({ maxLength: 200 }),
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.nat({ max: valid.length - 1 }).map((n) => valid.slice(0, n)), // truncated JSON
        fc.constantFrom(
          `\uFEFF${valid}`,
          ` \n${valid}\n `,
          `${valid}${valid}`,
          `[${valid}]`,
          valid.replace(/"/g, "'"),
          '',
          '{',
          'null',
          '[]',
          '{}',
        ),
        fc.constant(
          new URLSearchParams({
            type: 'single',
            'amount[total]': '25.5',
            redirectUrl: 'https://x.example',
            checkoutMethod: 'card',
          }).toString(),
        ),
        fc.constant(valid), // valid JSON, under whatever content type is drawn
        fc.constant(JSON.stringify(valid)), // the request sent as a JSON string, not an object
        // An ignored extra field nested deep (the idempotency fingerprint must not overflow).
        fc.constant(valid.replace(/}$/, `,"extra":${'['.repeat(20_000)}${']'.repeat(20_000)}}`)),
      );
      const contentType = fc.option(
        fc.oneof(
          fc.constantFrom(
            'application/json',
            'application/json; charset=utf-8',
            'APPLICATION/JSON',
            'application/problem+json',
            'text/plain',
            FORM,
            'multipart/form-data; boundary=xyz',
            'application/xml',
            '',
            'application/json; charset=latin1',
          ),
          printable(60),
        ),
        { nil: undefined, freq: 5 },
      );
      const spec = fc.record({ body: rawBody, contentType, auth: auth(3), key: idempotencyKey, extra: extraHeaders });
      await fc.assert(
        fc.asyncProperty(fc.array(spec, BATCH), async (specs) => {
          for (const s of specs)
            if (s.key !== undefined && VALID_AUTH.has(s.auth.kind))
              keysSent.add(`${modeOf(s.auth)}\u0000${headerValue(s.key)}`);
          await runBatch(
            'create (arbitrary)',
            specs,
            (s) => ({
              method: 'POST',
              path: '/api/checkout-sessions',
              headers: headersFor(s.auth, s.extra, s.key, s.contentType),
              body: s.body,
            }),
            (s, ex) => {
              const { status } = ex.answer;
              if (!VALID_AUTH.has(s.auth.kind)) return status === 401 ? [] : ['expected 401 for refused credentials'];
              if (status !== 200 && status !== 400) return [`expected 200 or 400, got ${status}`];
              if (status === 200) {
                // Only a body that is, as JSON, a valid request may create a session.
                let value: unknown;
                try {
                  value = JSON.parse(s.body);
                } catch {
                  return ['a body that is not JSON created a session'];
                }
                if (!requestSchema(value)) return ['a body that breaks the schema created a session'];
                return s.auth.kind === 'other' ? [] : recordCreate(ex, modeOf(s.auth), true);
              }
              return [];
            },
          );
        }),
        { numRuns: 85 },
      );
    },
    paced(60_000),
  );

  it(
    'POST /api/token with form, JSON and garbage bodies answers 200, or 400/401 with the document’s plain-string errors',
    async () => {
      const realPairs = () => [
        [org.apiKeys.test.clientId, org.apiKeys.test.clientSecret],
        [org.apiKeys.live.clientId, org.apiKeys.live.clientSecret],
      ];
      type FieldChoice = { kind: 'real' | 'other-real' | 'missing' | 'empty' | 'twice' | 'random'; random?: string };
      const field = fc.oneof(
        { weight: 6, arbitrary: fc.constant<FieldChoice>({ kind: 'real' }) },
        {
          weight: 1,
          arbitrary: fc.constantFrom<FieldChoice>(
            { kind: 'other-real' },
            { kind: 'missing' },
            { kind: 'empty' },
            { kind: 'twice' },
          ),
        },
        {
          weight: 2,
          arbitrary: fc
            .oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), longString)
            .map((random): FieldChoice => ({ kind: 'random', random })),
        },
      );
      const spec = fc.record({
        pair: fc.nat({ max: 1 }),
        clientId: field,
        clientSecret: field,
        extraField: fc.option(fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 20 })), {
          nil: undefined,
          freq: 4,
        }),
        encoding: fc.constantFrom('form', 'form', 'form', 'json', 'garbage'),
        garbage: fc.oneof(fc.string({ maxLength: 100 }), fc.string({ unit: 'binary', maxLength: 100 })),
        contentType: fc.option(
          fc.oneof(
            {
              weight: 6,
              arbitrary: fc.constantFrom(FORM, `${FORM}; charset=utf-8`, 'Application/X-WWW-Form-Urlencoded'),
            },
            {
              weight: 3,
              arbitrary: fc.constantFrom(
                'application/json',
                'text/plain',
                'multipart/form-data; boundary=xyz',
                '',
                `${FORM}x`,
              ),
            },
            { weight: 1, arbitrary: printable(50) },
          ),
          { nil: undefined, freq: 10 },
        ),
        extra: extraHeaders,
      });
      type Spec = typeof spec extends fc.Arbitrary<infer S> ? S : never;
      const fieldValue = (s: Spec, which: 0 | 1, choice: FieldChoice): string[] => {
        const pairs = realPairs();
        switch (choice.kind) {
          case 'real':
            return [pairs[s.pair]![which]!];
          case 'other-real':
            return [pairs[1 - s.pair]![which]!];
          case 'missing':
            return [];
          case 'empty':
            return [''];
          case 'twice':
            return [pairs[s.pair]![which]!, pairs[s.pair]![which]!];
          case 'random':
            return [choice.random!];
        }
      };
      const bodyOf = (s: Spec): string => {
        const entries: Array<[string, string]> = [
          ...fieldValue(s, 0, s.clientId).map((v): [string, string] => ['clientId', v]),
          ...fieldValue(s, 1, s.clientSecret).map((v): [string, string] => ['clientSecret', v]),
          ...(s.extraField ? [s.extraField] : []),
        ];
        if (s.encoding === 'form') return new URLSearchParams(entries).toString();
        if (s.encoding === 'json') return JSON.stringify(Object.fromEntries(entries));
        return s.garbage;
      };
      /** What the document's rules give, from what the server can read of the form. */
      const expected = (s: Spec, body: string): { status: number; error?: string } => {
        const type = headerValue(s.contentType ?? '')
          .split(';')[0]!
          .trim()
          .toLowerCase();
        if (type !== FORM || body === '') return { status: 400, error: TOKEN_MALFORMED };
        const form = new URLSearchParams(body);
        const ids = form.getAll('clientId');
        const secrets = form.getAll('clientSecret');
        if (
          ids.length !== 1 ||
          secrets.length !== 1 ||
          ids[0] === '' ||
          secrets[0] === '' ||
          characters(ids[0]!) > TOKEN_FIELD_MAX ||
          characters(secrets[0]!) > TOKEN_FIELD_MAX
        )
          return { status: 400, error: TOKEN_MALFORMED };
        const match = realPairs().some(([id, secret]) => id === ids[0] && secret === secrets[0]);
        return match ? { status: 200 } : { status: 401, error: TOKEN_INVALID };
      };
      await fc.assert(
        fc.asyncProperty(fc.array(spec, { minLength: 1, maxLength: 4 }), async (specs) => {
          await runBatch(
            'token',
            specs,
            (s) => ({
              method: 'POST',
              path: '/api/token',
              headers: headersFor({ kind: 'none' }, s.extra, undefined, s.contentType),
              body: bodyOf(s),
            }),
            (s, ex) => {
              const want = expected(s, ex.body!);
              const { status, body } = ex.answer;
              // A pair that fails may meet the failure limit of its client id (the fuzzing sends
              // the same real ids with wrong secrets again and again): 429 with Retry-After.
              if (want.status === 401 && status === 429) {
                const retryAfter = Number(ex.answer.headers.get('retry-after'));
                if ((body as { error?: unknown }).error !== TOKEN_TOO_MANY)
                  return [`expected { error: "${TOKEN_TOO_MANY}" }`];
                return Number.isInteger(retryAfter) && retryAfter >= 1
                  ? []
                  : ['expected a Retry-After of whole seconds'];
              }
              if (status !== want.status) return [`expected ${want.status}`];
              if (want.error !== undefined && (body as { error?: unknown }).error !== want.error)
                return [`expected { error: ${JSON.stringify(want.error)} }`];
              return [];
            },
          );
        }),
        { numRuns: 60 },
      );
    },
    paced(60_000),
  );

  it(
    'GET /api/checkout-sessions/{random id} answers 200 for own sessions, 404 not_found otherwise, 401 without credentials',
    async () => {
      type IdChoice = { kind: 'random'; id: string } | { kind: 'created'; index: number };
      const idChoice: fc.Arbitrary<IdChoice> = fc.oneof(
        { weight: 2, arbitrary: fc.nat().map((index): IdChoice => ({ kind: 'created', index })) },
        {
          weight: 3,
          arbitrary: fc
            .oneof(
              fc.string({ minLength: 1, maxLength: 60 }),
              fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
              fc.stringMatching(/^cs_[A-Za-z0-9]{1,30}$/),
              fc.uuid(),
              fc.constantFrom(
                'cs_',
                'cs_7Hq2mX9vK3pL8nR4',
                "' OR 1=1 --",
                '%',
                '%25',
                '../../etc/passwd',
                'null',
                'undefined',
                '__proto__',
                'constructor',
                ' ',
                'cs_\u0000',
              ),
              fc.integer({ min: 500, max: 4000 }).map((n) => 'x'.repeat(n)),
            )
            .filter((id) => id !== '.' && id !== '..')
            .map((id): IdChoice => ({ kind: 'random', id })),
        },
      );
      const spec = fc.record({
        id: idChoice,
        auth: fc.oneof(
          { weight: 4, arbitrary: auth(3) },
          { weight: 1, arbitrary: fc.constant<Auth>({ kind: 'other' }) },
        ),
        extra: extraHeaders,
        // A query parameter the operation does not declare (cache busting) changes nothing.
        query: fc.constantFrom('', '', '', '?_=1', '?expand=all&_=2'),
      });
      type Spec = typeof spec extends fc.Arbitrary<infer S> ? S : never;
      const idOf = (s: Spec) =>
        s.id.kind === 'created' && createdTestIds.length > 0
          ? createdTestIds[s.id.index % createdTestIds.length]!
          : s.id.kind === 'random'
            ? s.id.id
            : 'cs_none';
      await fc.assert(
        fc.asyncProperty(fc.array(spec, BATCH), async (specs) => {
          const ids = specs.map(idOf);
          await runBatch(
            'get by id',
            specs,
            (s, i) => ({
              method: 'GET',
              path: `/api/checkout-sessions/${encodeURIComponent(ids[i]!)}${s.query}`,
              headers: headersFor(s.auth, s.extra, undefined),
            }),
            (s, ex, i) => {
              const id = ids[i]!;
              const { status } = ex.answer;
              if (!VALID_AUTH.has(s.auth.kind))
                return status === 401 && AUTH_CODE[s.auth.kind]!.includes(errorCode(ex.answer)!)
                  ? []
                  : ['expected 401'];
              const own = created.has(id) && s.auth.kind !== 'other';
              if (own && created.get(id) === modeOf(s.auth)) {
                if (status !== 200) return ['expected 200 for the organisation’s own session'];
                const b = ex.answer.body as { id: string; status: string };
                return b.id === id ? [] : [`read back id ${b.id}, not ${id}`];
              }
              if (own) return status === 200 || status === 404 ? [] : ['expected 200 or 404 across modes'];
              return status === 404 && errorCode(ex.answer) === 'not_found'
                ? []
                : ['expected 404 not_found (unknown id, or another organisation’s session)'];
            },
          );
        }),
        { numRuns: 100 },
      );
    },
    paced(60_000),
  );

  it(
    'random paths and methods answer JSON, never 5xx, with the envelope on every 4xx',
    async () => {
      const spec = fc.record({
        method: anyMethod,
        prefix: pathPrefix,
        segments: fc.array(fc.oneof({ weight: 5, arbitrary: pathSegment }, { weight: 1, arbitrary: rawPathSegment }), {
          maxLength: 3,
        }),
        trailingSlash: fc.boolean(),
        query: pathQuery,
        body: fc.option(
          fc.oneof(
            fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
            fc.string({ maxLength: 100 }),
          ),
          { nil: undefined },
        ),
        contentType: fc.option(fc.constantFrom('application/json', FORM, 'text/plain'), { nil: undefined }),
        // The sandbox token opens the sandbox API to random bodies too.
        auth: fc.oneof(
          auth(1),
          fc.constantFrom<Auth>({ kind: 'sandbox' }, { kind: 'garbage', garbage: `x${SANDBOX_TOKEN}` }),
        ),
        extra: extraHeaders,
      });
      await fc.assert(
        fc.asyncProperty(fc.array(spec, BATCH), async (specs) => {
          await runBatch('random paths', specs, (s) => {
            let path = [s.prefix, ...s.segments].join('/') + (s.trailingSlash ? '/' : '');
            if (!path.startsWith('/')) path = `/${path}`;
            const bodyAllowed = s.method !== 'GET' && s.method !== 'HEAD';
            return {
              method: s.method,
              path: path + s.query,
              headers: headersFor(s.auth, s.extra, undefined, bodyAllowed ? s.contentType : undefined),
              body: bodyAllowed ? s.body : undefined,
            };
          });
        }),
        { numRuns: 130 },
      );
    },
    paced(60_000),
  );

  it(
    'is still healthy afterwards, and every created session reads back: as many as the store holds',
    async () => {
      const health = await t.request('GET', '/healthz', { undocumented: true });
      expect(health.status).toBe(200);
      expect(health.body).toEqual({ ok: true });

      expect(fresh200).toBeGreaterThan(200); // the near-valid property did create sessions
      expect(created.size).toBe(fresh200);
      expect(await t.server.store.countPayments(org.id)).toBe(created.size);
      for (const id of replayedIds) expect(created.has(id), `replayed id ${id} was never created`).toBe(true);

      const entries = [...created];
      for (let i = 0; i < entries.length; i += 16) {
        await Promise.all(
          entries.slice(i, i + 16).map(async ([id, mode]) => {
            stats.sent++;
            const answer = await t.request('GET', `/api/checkout-sessions/${id}`, {
              token: mode === 'test' ? org.testToken : org.liveToken,
            });
            expect(answer.status, `GET ${id}`).toBe(200);
            expect(answer.body.id).toBe(id);
            expect(answer.body.testMode).toBe(mode === 'test');
          }),
        );
      }
      expect(stats.sent).toBeGreaterThan(2600); // about 3000 requests in all
    },
    paced(60_000),
  );
});

/**
 * TRAFFIC checks of the service's side: each answer of the API against the description and
 * the error rules, the token endpoint's answers, isolation, and the idempotency of creates
 * as the recorded sequences show it. Each applies a shared rule (core/description.ts,
 * rules/) to what the traffic holds; a rule the traffic holds nothing for is not judged.
 */
import { ACCOUNT_CONFIGURATION_CODES } from '@payment-service/contract/errors';
import {
  CONTRACT_CLAUSES,
  type ContractProblem,
  contractProblems,
  documentedOperation,
  type RefusedFields,
  refusedCreateFields,
} from '../../../core/description.ts';
import { at, isObject } from '../../../core/json.ts';
import { CheckFailure, CheckSkipped } from '../../../core/outcome.ts';
import type { Check } from '../../../runner/check-definition.ts';
import {
  detailsPlacementProblem,
  docsUrlOf,
  docUrlProblem,
  namedFields,
  plainErrorProblem,
  validationDetailsProblem,
} from '../../../rules/errors.ts';
import { sameJson } from '../../../rules/client.ts';
import { replayDifferences } from '../../../rules/session.ts';
import { tokenResponseProblem } from '../../../rules/token.ts';
import type { Observed } from '../read.ts';
import { apiPath, errorCodeOf, isCreate, isTokenRequest, jsonOf, named, type TrafficRun } from '../context.ts';

export type TrafficCheck = Check<TrafficRun>;

const RESPONSES = 'Responses and errors';

function answers(run: TrafficRun, kind: ContractProblem['kind'] | 'any', level: ContractProblem['level']): void {
  const exchanges = run.exchanges();
  if (exchanges.length === 0) throw new CheckSkipped('the traffic holds no answer of the API with its body');
  const problems = exchanges
    .flatMap(contractProblems)
    .filter((p) => (kind === 'any' || p.kind === kind) && p.level === level);
  if (problems.length === 0) return;
  const first = problems[0]!;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
  throw new CheckFailure(
    `${problems.length} of ${exchanges.length} answers: exchange ${first.exchange.checkId}: ${first.message}${more}.`,
    { exchange: first.exchange },
  );
}

/** Fails with the first exchange a rule finds wrong, naming how many it found of how many judged. */
export function firstWrong(judged: Observed[], problem: (o: Observed) => string | undefined, what: string): void {
  const wrong = judged.flatMap((o) => {
    const found = problem(o);
    return found ? [{ o, found }] : [];
  });
  if (wrong.length === 0) return;
  const { o, found } = wrong[0]!;
  throw new CheckFailure(`${wrong.length} of ${judged.length} ${what}: ${named(o)}: ${found}`, {
    evidence: evidenceOf(o),
  });
}

/** An exchange as a failure shows it. */
export function evidenceOf(o: Observed): { request: string; response: string; curl: string } {
  const { request, response } = o.entry;
  const headers = (h: Record<string, string>) => Object.entries(h).map(([k, v]) => `${k}: ${v}`);
  const url = new URL(request.url);
  return {
    request: [
      `${request.method} ${url.pathname}${url.search} HTTP/1.1`,
      `host: ${url.host}`,
      ...headers(request.headers),
      '',
      request.body ?? '',
    ]
      .join('\n')
      .trimEnd(),
    response: response
      ? [`HTTP/1.1 ${response.status}`, ...headers(response.headers), '', response.body].join('\n').trimEnd()
      : `no answer${o.entry.error ? `: ${o.entry.error}` : ''}`,
    curl: '',
  };
}

const envelopeOf = (o: Observed) => {
  const error = jsonOf(o.entry.response?.body)?.error;
  return isObject(error) && typeof error.code === 'string' ? error : undefined;
};

/**
 * Creates of one party under one Idempotency-Key, in order, from the first that stored a
 * result: the sequences idempotency is judged on. A key is remembered 24 hours; a create
 * later than that, or after the organisation's clock was moved, is left out.
 */
function keyedCreates(run: TrafficRun): Observed[][] {
  const groups = new Map<string, Observed[]>();
  for (const [party, exchanges] of run.byParty())
    for (const o of exchanges) {
      const key = o.entry.request.headers['idempotency-key'];
      if (!isCreate(o) || !key || !o.requestBodyRecorded || !o.responseBodyRecorded) continue;
      const id = `${party}\n${apiPath(o)}\n${key}`;
      groups.set(id, [...(groups.get(id) ?? []), o]);
    }
  // Only an answer of the create itself (2xx, or a 400 refusal) stores, replays or conflicts:
  // a create answered 500 or not at all stored nothing (Idempotency rules: a 500 is retried
  // under its key), and a 401 (an expired token), 404 or 429 comes before the key is read.
  const ofTheCreate = (o: Observed) => {
    const status = o.entry.response?.status ?? 0;
    return (status >= 200 && status < 300) || status === 400;
  };
  return [...groups.values()]
    .map((creates) => {
      const settled = creates.findIndex(ofTheCreate);
      if (settled < 0) return [];
      const first = creates[settled]!;
      return [
        first,
        ...creates
          .slice(settled + 1)
          .filter(
            (o) =>
              ofTheCreate(o) &&
              o.entry.startedAt - first.entry.startedAt < KEY_MEMORY_MS &&
              !run.clockMovedBetween(first, o) &&
              !serviceClockJumped(first, o),
          ),
      ];
    })
    .filter((g) => g.length > 1);
}

/**
 * Whether the service's own clock, as the expiresAt of its answers shows it, ran ahead
 * between two creates by more than the time between them: an organisation's clock moved
 * by a harness the traffic holds no record of (an adapter of its own), past a key's memory.
 */
function serviceClockJumped(first: Observed, later: Observed): boolean {
  const expiry = (o: Observed) => Date.parse(String(at(jsonOf(o.entry.response?.body), 'expiresAt') ?? ''));
  const ran = expiry(later) - expiry(first);
  return Number.isFinite(ran) && ran - (later.entry.startedAt - first.entry.startedAt) > CLOCK_SLACK_MS;
}
const CLOCK_SLACK_MS = 60_000;

/** The codes the document checks after validation (Validation and configuration order and errors). */
const CONFIGURATION_CODES = ['currency_mismatch', ...ACCOUNT_CONFIGURATION_CODES] as const;
/**
 * Fields whose rules go beyond the body's schema, to what only the service knows: a
 * webhookUrl "publicly reachable", a redirectUrl "valid absolute URL". A service may refuse
 * them in a body the schema accepts, and name them beside the fields the schema refuses.
 */
const CONTEXT_FIELDS = ['webhookUrl', 'redirectUrl'];
/**
 * What a create under a used key with another body may get: idempotency_error, or the new
 * body's own refusal, since the document states no order between them (its table lists
 * idempotency_error after validation and configuration).
 */
const NEW_BODY_REFUSALS: readonly string[] = ['idempotency_error', 'validation_failed', ...CONFIGURATION_CODES];

/** How long the service remembers an Idempotency-Key (Idempotency rules: 24 hours). */
const KEY_MEMORY_MS = 24 * 3600 * 1000;

export const serviceChecks: TrafficCheck[] = [
  {
    id: 'TRAFFIC-001',
    clauses: CONTRACT_CLAUSES.status,
    section: RESPONSES,
    title: 'every answer of the API has a status documented for its operation',
    run: async (run) => answers(run, 'status', 'must'),
  },
  {
    id: 'TRAFFIC-002',
    clauses: CONTRACT_CLAUSES['content-type'],
    section: RESPONSES,
    title: 'every answer body of the API is application/json',
    run: async (run) => answers(run, 'content-type', 'must'),
  },
  {
    id: 'TRAFFIC-003',
    clauses: CONTRACT_CLAUSES.schema,
    section: RESPONSES,
    title: 'every answer body of the API matches its documented schema (fields, types, envelope)',
    run: async (run) => answers(run, 'schema', 'must'),
  },
  {
    id: 'TRAFFIC-004',
    clauses: CONTRACT_CLAUSES.assumption,
    assumption: 'the shapes the document does not show (payment links, legacy transactions) are our modelling',
    section: RESPONSES,
    title: 'answers match what is our modelling (x-assumption) of the operations the document does not show',
    run: async (run) => answers(run, 'any', 'assumption'),
  },
  {
    id: 'TRAFFIC-005',
    clauses: ['err.doc-url'],
    section: RESPONSES,
    title: 'every error.doc_url is {docs_url}/errors/#<code>, with one {docs_url} for the whole service',
    async run(run) {
      const errors = run.expect((o) => envelopeOf(o) !== undefined && !isTokenRequest(o), 'error envelope');
      firstWrong(errors, (o) => docUrlProblem(envelopeOf(o)!.doc_url, String(envelopeOf(o)!.code)), 'error envelopes');
      const bases = new Set(errors.map((o) => docsUrlOf(String(envelopeOf(o)!.doc_url), String(envelopeOf(o)!.code))));
      if (bases.size > 1)
        throw new CheckFailure(`The error envelopes name ${bases.size} docs addresses: ${[...bases].join(', ')}.`);
    },
  },
  {
    id: 'TRAFFIC-006',
    clauses: ['err.details'],
    section: RESPONSES,
    title: 'details appears only on validation_failed',
    run: async (run) =>
      firstWrong(
        run.expect((o) => envelopeOf(o) !== undefined, 'error envelope'),
        (o) => detailsPlacementProblem(envelopeOf(o)),
        'error envelopes',
      ),
  },
  {
    id: 'TRAFFIC-007',
    clauses: ['token.ok', 'res.token.access', 'res.token.type', 'res.token.expires', 'token.plain-error', 'err.token'],
    section: 'Authentication',
    title: 'the token endpoint answers an access token response on success, and a plain { error: string } otherwise',
    run: async (run) =>
      firstWrong(
        run.expect((o) => isTokenRequest(o) && o.responseBodyRecorded, 'answer of the token endpoint'),
        (o) => {
          const json = jsonOf(o.entry.response!.body);
          return o.entry.response!.status === 200 ? tokenResponseProblem(json) : plainErrorProblem(json);
        },
        'answers of the token endpoint',
      ),
  },
  {
    id: 'TRAFFIC-008',
    clauses: ['read.isolation', 'auth.isolation', 'code.not-found'],
    section: 'Authentication',
    title: 'a resource is never answered 403: another organisation’s is not found (404)',
    run: async (run) =>
      firstWrong(
        run.expect((o) => o.entry.request.method === 'GET' && !isTokenRequest(o), 'read of a resource'),
        (o) =>
          o.entry.response!.status === 403
            ? 'answered 403; the document answers a resource of another organisation 404 not_found, never 403'
            : undefined,
        'reads',
      ),
  },
  {
    id: 'TRAFFIC-009',
    clauses: ['idem.replay', 'create.idempotency-key'],
    section: 'Idempotency',
    title: 'the same key with the same body, from the same client, replays the first result',
    async run(run) {
      const pairs = keyedCreates(run).flatMap(([first, ...later]) =>
        later
          .filter((o) => sameJson(o.entry.request.body ?? '', first!.entry.request.body ?? ''))
          .map((again) => ({ first: first!, again })),
      );
      if (pairs.length === 0)
        throw new CheckSkipped('the traffic holds no create sent twice by one client under one key with one body');
      firstWrong(
        pairs.map((p) => p.again),
        (again) => {
          const { first } = pairs.find((p) => p.again === again)!;
          const [was, now] = [first.entry.response!, again.entry.response!];
          // A refusal replays as the same refusal.
          if (now.status !== was.status) return `answered ${now.status}; the first (${named(first)}) was ${was.status}`;
          if (was.status !== 200)
            return errorCodeOf(again) === errorCodeOf(first)
              ? undefined
              : `answered ${errorCodeOf(again)}; the first ${errorCodeOf(first)}`;
          const differ = replayDifferences(jsonOf(now.body), jsonOf(was.body), true);
          return differ.length > 0 ? `the replay differs from ${named(first)} in ${differ.join(', ')}` : undefined;
        },
        'creates sent again',
      );
    },
  },
  {
    id: 'TRAFFIC-010',
    clauses: ['idem.conflict', 'order.idempotency', 'code.idempotency'],
    section: 'Idempotency',
    title:
      'the same key with another body, after a create it made, is answered 400 idempotency_error or the new body’s own refusal',
    async run(run) {
      const conflicts = keyedCreates(run).flatMap(([first, ...later]) =>
        first!.entry.response!.status === 200
          ? later.filter((o) => !sameJson(o.entry.request.body ?? '', first!.entry.request.body ?? ''))
          : [],
      );
      if (conflicts.length === 0)
        throw new CheckSkipped('the traffic holds no create sent again under a key with another body');
      firstWrong(
        conflicts,
        (o) =>
          o.entry.response!.status === 400 && NEW_BODY_REFUSALS.includes(errorCodeOf(o) ?? '')
            ? undefined
            : `answered ${o.entry.response!.status} ${errorCodeOf(o) ?? ''}`.trimEnd() +
              '; the document: 400 idempotency_error (or the new body’s own refusal)',
        'creates under a used key with another body',
      );
    },
  },
  {
    id: 'TRAFFIC-011',
    clauses: ['token.400', 'conv.request-body', 'token.client-id', 'token.plain-error'],
    section: 'Authentication',
    title: 'a token request sent as JSON, or without clientId or clientSecret, is answered 400',
    run: async (run) =>
      firstWrong(
        run.expect(
          (o) => isTokenRequest(o) && o.requestBodyRecorded && malformedTokenRequest(o) !== undefined,
          'token request sent as JSON or without a field',
        ),
        (o) => {
          const status = o.entry.response?.status;
          // A failure of the service, or its throttling, says nothing of how it reads the body.
          if (status === undefined || status === 429 || status >= 500 || status === 400) return undefined;
          return `answered ${status} to a token request ${malformedTokenRequest(o)}; the document: 400 Invalid credentials`;
        },
        'malformed token requests',
      ),
  },
  {
    id: 'TRAFFIC-012',
    clauses: ['token.401', 'token.identical'],
    section: 'Authentication',
    title:
      'every 401 of the token endpoint is the same answer: an unknown client id and a wrong secret are not told apart',
    async run(run) {
      const refused = run.expect(
        (o) => isTokenRequest(o) && o.entry.response?.status === 401 && o.responseBodyRecorded,
        'token request answered 401',
      );
      if (refused.length < 2)
        throw new CheckSkipped('the traffic holds one token request answered 401: nothing to compare it with');
      const first = refused[0]!;
      firstWrong(
        refused.slice(1),
        (o) =>
          sameJson(idLike(o.entry.response!.body), idLike(first.entry.response!.body))
            ? undefined
            : `answered ${o.entry.response!.body.slice(0, 120)}, where ${named(first)} was answered ${first.entry.response!.body.slice(0, 120)}: a difference tells which client ids exist`,
        'token requests answered 401',
      );
    },
  },
  {
    id: 'TRAFFIC-013',
    clauses: [
      'order.validation',
      'code.validation-failed',
      'err.param',
      'err.details',
      'err.details-entry',
      'create.type',
      'create.amount',
      'create.total',
      'create.creditor-reference',
      'create.reference',
      'create.particulars',
      'create.code',
      'create.redirect-url',
      'create.checkout-method',
      'create.description',
      'limit.total',
      'limit.reference',
      'limit.particulars',
      'limit.code',
      'limit.description',
    ],
    section: 'Validation',
    title:
      'a checkout session create is refused validation_failed, before any configuration code, exactly when the description refuses its body, naming the failing fields',
    async run(run) {
      // Each body validated once: an exploration's traffic holds thousands of creates.
      const refused = new Map<Observed, RefusedFields>();
      const creates = run.expect((o) => {
        if (!(o.entry.request.method === 'POST' && apiPath(o) === '/api/checkout-sessions')) return false;
        if (!(o.requestBodyRecorded && o.responseBodyRecorded)) return false;
        const fields = refusedCreateFields(jsonOf(o.entry.request.body));
        if (fields) refused.set(o, fields);
        return fields !== undefined;
      }, 'checkout session create with a JSON object body and its answer');
      firstWrong(
        creates,
        (o) => {
          const { fields: fails, modelled } = refused.get(o)!;
          const { status, body } = o.entry.response!;
          const code = errorCodeOf(o);
          // Fields the service may refuse or take: those of our modelling, and those whose rules need its knowledge.
          const may = [...modelled, ...CONTEXT_FIELDS].filter((f) => !fails.includes(f));
          if (fails.length > 0) {
            if (status >= 200 && status < 300)
              return `made a session of a body the description refuses (${fails.join(', ')}); the document: 400 validation_failed`;
            // A currency out of range differs from the settlement currency too (VAL-030 takes either).
            if (code === 'currency_mismatch' && fails.every((f) => f === 'amount.currency')) return undefined;
            if ((CONFIGURATION_CODES as readonly string[]).includes(code ?? ''))
              return `answered ${code} to a body that fails validation (${fails.join(', ')}); validation comes first`;
            return code === 'validation_failed' ? validationDetailsProblem(jsonOf(body), fails, may) : undefined;
          }
          if (code !== 'validation_failed') return undefined;
          const accepted = namedFields(jsonOf(body)).filter((n) => !may.some((f) => n === f || n.startsWith(`${f}.`)));
          return accepted.length > 0
            ? `refused validation_failed naming ${accepted.join(', ')}, which the description accepts in this body`
            : undefined;
        },
        'checkout session creates',
      );
    },
  },
  {
    id: 'TRAFFIC-014',
    clauses: ['ep.bearer', 'auth.bearer', 'status.401', 'code.unauthorized', 'code.invalid-token'],
    section: 'Authentication',
    title:
      'a request without Authorization: Bearer <token> is answered 401 unauthorized, one with a double-prefixed token 401 invalid_token',
    run: async (run) =>
      firstWrong(
        run.expect(
          (o) => !isTokenRequest(o) && malformedAuthorization(o) !== undefined,
          'request to the API without Authorization: Bearer <token>, or with a double-prefixed token',
        ),
        (o) => {
          const { expected, how } = malformedAuthorization(o)!;
          const status = o.entry.response!.status;
          // A failure of the service, or its throttling, says nothing of how it reads the header.
          if (status === 429 || status >= 500) return undefined;
          return status === 401 && errorCodeOf(o) === expected
            ? undefined
            : `answered ${status} ${errorCodeOf(o) ?? ''}`.trimEnd() +
                ` to a request ${how}; the document: 401 ${expected}`;
        },
        'requests without a well-formed bearer token',
      ),
  },
];

/** The expiresIn of a token answer, when it names a lifetime in plain units ("5m", "300 seconds"). */
export function lifetimeMs(o: Observed): number | undefined {
  const text = at(jsonOf(o.entry.response?.body), 'expiresIn');
  const match =
    typeof text === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(s|sec|seconds?|m|min|minutes?|h|hours?)\s*$/i.exec(text) : null;
  if (!match) return undefined;
  const unit = match[2]!.toLowerCase();
  const scale = unit.startsWith('h') ? 3_600_000 : unit.startsWith('m') ? 60_000 : 1000;
  return Number(match[1]) * scale;
}

/** How a token request breaks the endpoint's form, if it does: sent as JSON (or not as a form), or without a field. */
function malformedTokenRequest(o: Observed): string | undefined {
  const type = o.entry.request.headers['content-type'] ?? '';
  if (!/application\/x-www-form-urlencoded/i.test(type)) return `sent as ${type || 'a body of no type'}`;
  const form = new URLSearchParams(o.entry.request.body ?? '');
  const missing = ['clientId', 'clientSecret'].filter((name) => !form.get(name));
  return missing.length > 0 ? `without ${missing.join(' or ')}` : undefined;
}

/**
 * An answer with its id-like values (a request id, a time: a run of letters and digits with
 * a digit in it) made alike: a recording holds each answer once, so what changes with every
 * answer cannot be told from what tells a known client id from an unknown one.
 */
const idLike = (body: string) => body.replace(/[\w:.+-]*\d[\w:.+-]*/g, '#');

/**
 * How a request's Authorization breaks `Bearer <token>`, and the code the document gives it
 * (Errors: unauthorized, "no Authorization header, or not of the form Bearer <token>";
 * invalid_token, a token "double-prefixed"). A recording shows the token by a placeholder,
 * which keeps the form.
 */
function malformedAuthorization(o: Observed): { expected: string; how: string } | undefined {
  // Only where the description says a token is asked for: elsewhere a 404 may come first.
  if (!documentedOperation(o.entry.request.method, apiPath(o))) return undefined;
  const value = o.entry.request.headers.authorization;
  if (value === undefined) return { expected: 'unauthorized', how: 'without Authorization' };
  // An auth scheme is named in any case (RFC 9110, 11.1): only another scheme is not Bearer.
  const scheme = value.trim().split(/\s+/)[0]!;
  if (!/^bearer$/i.test(scheme)) return { expected: 'unauthorized', how: `with Authorization: ${scheme} …` };
  if (/^Bearer Bearer \S/.test(value)) return { expected: 'invalid_token', how: 'with a double-prefixed token' };
  return undefined;
}

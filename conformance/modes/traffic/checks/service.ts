/**
 * TRAFFIC checks of the service's side: each answer of the API against the description and
 * the error rules, the token endpoint's answers, isolation, and the idempotency of creates
 * as the recorded sequences show it. Each applies a shared rule (core/description.ts,
 * rules/) to what the traffic holds; a rule the traffic holds nothing for is not judged.
 */
import { CONTRACT_CLAUSES, type ContractProblem, contractProblems } from '../../../core/description.ts';
import { at, isObject } from '../../../core/json.ts';
import { CheckFailure, CheckSkipped } from '../../../core/outcome.ts';
import type { Check } from '../../../runner/check-definition.ts';
import { detailsPlacementProblem, docsUrlOf, docUrlProblem, plainErrorProblem } from '../../../rules/errors.ts';
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
 * Creates of one party under one Idempotency-Key, in order: the sequences idempotency is
 * judged on. A key is remembered 24 hours; a create later than that, or after the
 * organisation's clock was moved, starts a sequence of its own.
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
  return [...groups.values()]
    .map(([first, ...later]) => [
      first!,
      ...later.filter(
        (o) => o.entry.startedAt - first!.entry.startedAt < KEY_MEMORY_MS && !run.clockMovedBetween(first!, o),
      ),
    ])
    .filter((g) => g.length > 1);
}

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
          // A refusal replays as the same refusal; a create answered 500 may be made on a retry.
          if (was.status >= 500) return undefined;
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
    title: 'the same key with another body, after a create it made, is answered 400 idempotency_error',
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
          o.entry.response!.status === 400 && errorCodeOf(o) === 'idempotency_error'
            ? undefined
            : `answered ${o.entry.response!.status} ${errorCodeOf(o) ?? ''}`.trimEnd() +
              '; the document: 400 idempotency_error',
        'creates under a used key with another body',
      );
    },
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

/**
 * Response conformance of every answer the other checks received (service document:
 * General conventions; Resources; Errors: Envelope): each is judged against the bundled
 * description, and reported as checks of their own. They run after the others.
 */
import type { CheckContext, RunCheck } from '../context/check-context.ts';
import {
  CONTRACT_CLAUSES,
  contractProblems,
  webhookBodyProblems,
  type ContractProblem,
} from '../../../core/description.ts';
import type { Exchange } from '../../../core/exchange.ts';
import { at, isObject, type JsonObject } from '../../../core/json.ts';
import { detailsPlacementProblem, docsUrlOf, docUrlProblem } from '../../../rules/errors.ts';
import { CheckFailure, CheckSkipped } from '../../../core/outcome.ts';

const section = 'Responses and errors';

function problemsOf(
  ctx: CheckContext,
  kind: ContractProblem['kind'] | 'any',
  level: ContractProblem['level'],
): ContractProblem[] {
  const seen = ctx.run.exchanges.filter((e) => new URL(e.request.url).pathname.includes('/api/'));
  if (seen.length === 0) throw new CheckSkipped('no response of the public API was seen (run it with other checks)');
  return seen.flatMap(contractProblems).filter((p) => (kind === 'any' || p.kind === kind) && p.level === level);
}

/** Every error envelope the run saw, with its error object. */
function envelopes(ctx: CheckContext): Array<{ exchange: Exchange; error: JsonObject }> {
  const found = ctx.run.exchanges.flatMap((exchange) => {
    const error = at(exchange.json, 'error');
    return isObject(error) && typeof error.code === 'string' ? [{ exchange, error }] : [];
  });
  if (found.length === 0) throw new CheckSkipped('no error envelope was seen (run it with other checks)');
  return found;
}

function report(problems: ContractProblem[], total: number): void {
  if (problems.length === 0) return;
  const first = problems[0]!;
  const more =
    problems.length > 1
      ? ` (and ${problems.length - 1} more, first seen by ${[...new Set(problems.map((p) => p.exchange.checkId))].slice(0, 8).join(', ')})`
      : ` (seen by ${first.exchange.checkId})`;
  throw new CheckFailure(`${problems.length} of ${total} responses: ${first.message}${more}.`, {
    exchange: first.exchange,
  });
}

function responseCheck(
  id: string,
  kind: ContractProblem['kind'] | 'any',
  level: ContractProblem['level'],
  clauses: readonly string[],
  title: string,
): RunCheck {
  return {
    id,
    clauses,
    // Problems with a modelled (x-assumption) part are ours to hold, not the document's.
    ...(level === 'assumption'
      ? { assumption: 'the shapes the document does not show (payment links, legacy transactions) are our modelling' }
      : {}),
    section,
    title,
    phase: 'after',
    async run(ctx) {
      report(problemsOf(ctx, kind, level), ctx.run.exchanges.length);
    },
  };
}

export const responseChecks: RunCheck[] = [
  responseCheck(
    'RESP-001',
    'status',
    'must',
    CONTRACT_CLAUSES.status,
    'every response has a status documented for its operation (200 on success, creates included; 500 for a service failure)',
  ),
  responseCheck(
    'RESP-002',
    'content-type',
    'must',
    CONTRACT_CLAUSES['content-type'],
    'every response body is application/json',
  ),
  responseCheck(
    'RESP-003',
    'schema',
    'must',
    CONTRACT_CLAUSES.schema,
    'every response body matches its documented schema (fields, types, envelope)',
  ),
  responseCheck(
    'RESP-004',
    'any',
    'assumption',
    CONTRACT_CLAUSES.assumption,
    'responses match what is our modelling (x-assumption): statuses, content type and body of modelled operations (payment links, legacy transactions), and modelled parts of the other schemas',
  ),
  {
    id: 'RESP-005',
    clauses: ['err.doc-url'],
    section,
    title: 'every error.doc_url is {docs_url}/errors/#<code>, with one {docs_url} for the whole service',
    phase: 'after',
    async run(ctx) {
      const bases = new Map<string, string>();
      for (const { exchange: e, error } of envelopes(ctx)) {
        const code = String(error.code);
        const problem = docUrlProblem(error.doc_url, code);
        if (problem) throw new CheckFailure(`Seen by ${e.checkId}: ${problem}`, { exchange: e });
        bases.set(docsUrlOf(String(error.doc_url), code), e.checkId);
      }
      if (bases.size > 1)
        throw new CheckFailure(
          `error.doc_url uses ${bases.size} different {docs_url} bases: ${[...bases.keys()].join(', ')}.`,
        );
    },
  },
  {
    id: 'RESP-006',
    clauses: ['err.details'],
    section,
    title: 'details appears only on validation_failed',
    phase: 'after',
    async run(ctx) {
      for (const { exchange, error } of envelopes(ctx)) {
        const problem = detailsPlacementProblem(error);
        if (problem) throw new CheckFailure(`Seen by ${exchange.checkId}: ${problem}`, { exchange });
      }
    },
  },
  {
    id: 'RESP-007',
    clauses: ['payload.small', 'legacy.payload'],
    section,
    title: 'every webhook body the receiver got matches the documented payload (legacy bodies the legacy one)',
    // Deliveries come only from payments the adapter made.
    requires: ['attempt'],
    phase: 'after',
    async run(ctx) {
      const deliveries = ctx.run.receiver.all().filter((d) => d.body !== undefined || d.raw.length > 0);
      if (deliveries.length === 0)
        throw new CheckSkipped('no webhook delivery was received (run it with the webhook checks)');
      for (const d of deliveries) {
        const problem = webhookBodyProblems(d.body, d.path.includes('/legacy-'));
        if (problem)
          throw new CheckFailure(`The delivery to ${d.path} does not match the documented payload: ${problem}.`, {
            evidence: {
              request: `${d.method} ${d.path}\n\n${d.raw.toString('utf8')}`,
              response: '(the suite’s receiver)',
              curl: '',
            },
          });
      }
    },
  },
];

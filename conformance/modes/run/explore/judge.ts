/**
 * Judging a target's answer during exploration: the invariants every answer must keep
 * (General conventions; Errors: Envelope), and whether it is one of the answers the
 * model allows. A broken rule is a Divergence, naming the clauses it breaks.
 */
import type { Exchange } from '../../../core/exchange.ts';
import { at, isObject, show } from '../../../core/json.ts';
import { detailsPlacementProblem, docUrlProblem, plainErrorProblem } from '../../../rules/errors.ts';
import { isUtcTimestamp } from '../../../rules/values.ts';
import type { Received } from '../../../core/exchange.ts';
import type { Answer, Expectation } from './model.ts';

export class Divergence extends Error {
  override name = 'Divergence';
  constructor(
    message: string,
    readonly clauses: readonly string[],
    readonly exchange?: Exchange,
    readonly delivery?: Received,
  ) {
    super(message);
  }
}

/**
 * The target throttled the suite (429 after the waits Api.send allows): the document shows
 * no rate limits, so the case is left unjudged, never failed.
 */
export class Throttled extends Error {
  override name = 'Throttled';
}

const isTokenEndpoint = (e: Exchange) => new URL(e.request.url).pathname.endsWith('/api/token');

/** What every answer of the public API keeps, whatever was asked. */
export function invariants(e: Exchange): void {
  if (e.status === 429) throw new Throttled(`${e.request.method} ${new URL(e.request.url).pathname} answered 429`);
  const where = `${e.request.method} ${new URL(e.request.url).pathname}`;
  if (e.status >= 500) return; // judged by the command: the model says whether a 500 could be right
  if (!/^application\/json\b/i.test(e.headers['content-type'] ?? '') || e.json === undefined) {
    throw new Divergence(`${where} answered ${e.status} without a JSON body.`, ['conv.response-body'], e);
  }
  if (e.status === 200) {
    for (const field of ['createdAt', 'updatedAt', 'expiresAt']) {
      const value = at(e.json, field);
      if (value !== undefined && value !== null && !isUtcTimestamp(value))
        throw new Divergence(`${field} ${show(value)} is not an ISO 8601 UTC timestamp.`, ['conv.timestamps'], e);
    }
    return;
  }
  if (isTokenEndpoint(e)) {
    const problem = plainErrorProblem(e.json);
    if (problem)
      throw new Divergence(`POST /api/token answered ${e.status}: ${problem}`, ['err.token', 'token.plain-error'], e);
    return;
  }
  const error = at(e.json, 'error');
  const code = at(error, 'code');
  if (!isObject(error) || typeof code !== 'string' || typeof error.message !== 'string' || !('param' in error)) {
    throw new Divergence(
      `${where} answered ${e.status} without the error envelope { error: { code, message, param, doc_url } }.`,
      ['conv.error-body', 'err.code', 'err.message', 'err.param'],
      e,
    );
  }
  if (error.param !== null && typeof error.param !== 'string')
    throw new Divergence(`error.param is ${show(error.param)}: a string or null.`, ['err.param'], e);
  const docUrl = docUrlProblem(error.doc_url, code);
  if (docUrl) throw new Divergence(docUrl, ['err.doc-url', 'conv.error-body'], e);
  const details = detailsPlacementProblem(error);
  if (details) throw new Divergence(details, ['err.details'], e);
}

const describe = (a: Answer): string =>
  a.kind === 'error'
    ? `${a.status}${a.code ? ` ${a.code}` : ''}`
    : a.kind === 'new'
      ? '200 (new)'
      : a.kind === 'replay'
        ? `200 replaying payment ${a.payment + 1}`
        : a.kind === 'read'
          ? `200 (payment ${a.payment + 1})`
          : 'any documented answer';

export const describeAnswers = (answers: readonly Answer[]): string => answers.map(describe).join(' or ');

/**
 * The allowed answer the exchange is, by status and code (200 answers are told apart by
 * the command, which knows the ids); throws a Divergence when it is none of them.
 */
export function matchAnswer(e: Exchange, expected: Expectation): Answer {
  invariants(e);
  const code = at(e.json, 'error', 'code');
  for (const a of expected.answers) {
    if (a.kind === 'any') {
      if ([200, 400].includes(e.status)) return a;
      continue;
    }
    if (a.kind === 'error') {
      if (e.status === a.status && (a.code === '' || code === a.code)) return a;
      continue;
    }
    if (e.status === 200) return a;
  }
  throw new Divergence(
    `Expected ${describeAnswers(expected.answers)} (${expected.why}); the target answered ${e.status}${typeof code === 'string' ? ` ${code}` : ''}.`,
    expected.clauses,
    e,
  );
}

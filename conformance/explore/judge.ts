/**
 * Judging a target's answer during exploration: the invariants every answer must keep
 * (General conventions; Errors: Envelope), and whether it is one of the answers the
 * model allows. A broken rule is a Divergence, naming the clauses it breaks.
 */
import type { Exchange } from '../exchange.ts';
import { at, isObject, list, show } from '../json.ts';
import type { Received } from '../modes/run/capture-receiver.ts';
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

/** ISO 8601 with a UTC designator (Z or +00:00): what the document's timestamps are. */
const UTC_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]00:?00)$/;

export function isUtcTimestamp(value: unknown): boolean {
  return typeof value === 'string' && UTC_TIMESTAMP.test(value) && !Number.isNaN(Date.parse(value));
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
    if (typeof at(e.json, 'error') !== 'string')
      throw new Divergence(
        `POST /api/token answered ${e.status} with error ${show(at(e.json, 'error'))}, not a plain string.`,
        ['err.token', 'token.plain-error'],
        e,
      );
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
  const docUrl = error.doc_url;
  if (typeof docUrl !== 'string' || !URL.canParse(docUrl) || !docUrl.endsWith(`/errors/#${code}`))
    throw new Divergence(
      `error.doc_url ${show(docUrl)} is not {docs_url}/errors/#${code}.`,
      ['err.doc-url', 'conv.error-body'],
      e,
    );
  if ('details' in error && code !== 'validation_failed')
    throw new Divergence(`error.details on ${code}: it comes only on validation_failed.`, ['err.details'], e);
}

/** The fields a validation_failed answer names in details. */
export function namedFields(e: Exchange): string[] {
  return list(e.json, 'error', 'details').map((d) => String(at(d, 'field')));
}

/**
 * Does a validation_failed answer name exactly these fields, with param by the rule (the one
 * field when one fails, null when several do)? A missing or mistyped object may be named by
 * itself or by the fields it lacks.
 */
export function detailsProblem(
  e: Exchange,
  fields: readonly string[],
  may: readonly string[] = [],
): string | undefined {
  const details = list(e.json, 'error', 'details');
  if (!Array.isArray(at(e.json, 'error', 'details')))
    return 'validation_failed must carry details: one entry per failing field.';
  for (const d of details) {
    const constraints = at(d, 'constraints');
    if (
      typeof at(d, 'field') !== 'string' ||
      !isObject(constraints) ||
      Object.keys(constraints).length === 0 ||
      !Object.values(constraints).every((c) => typeof c === 'string')
    )
      return `details entry ${show(d)} must have field (a string) and constraints (a name mapped to a message).`;
  }
  const named = namedFields(e);
  const covers = (field: string, name: string) => name === field || name.startsWith(`${field}.`);
  const missing = fields.filter((f) => !named.some((n) => covers(f, n)));
  const extra = named.filter((n) => !fields.some((f) => covers(f, n)) && !may.some((f) => covers(f, n)));
  if (missing.length > 0 || extra.length > 0)
    return `details must name exactly ${fields.join(', ') || 'the failing fields'}${may.length > 0 ? ` (and may name ${may.join(', ')})` : ''}; they name ${named.join(', ') || 'nothing'}.`;
  const param = at(e.json, 'error', 'param');
  const distinct = [...new Set(named)];
  const wanted = distinct.length === 1 ? distinct[0] : null;
  if (param !== wanted)
    return distinct.length === 1
      ? `param must name the one failing field ${wanted}; it is ${show(param)}.`
      : `param must be null when several fields fail; it is ${show(param)}.`;
  return undefined;
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

/**
 * The input space of the public API: every class of input the document allows a request to
 * carry, operation by operation and place by place (the path, the query, the headers, the
 * media type, the body, the organisation and mode the request comes from, and the
 * organisation's configuration), each with the outcome the document gives it. The body's
 * classes are derived from the description (explore/boundary.ts: every enum member, character
 * class, length and number bound of the create schema); the rest follow the document's rules
 * for what it does not constrain: a media type is one whatever its parameters and letter case,
 * a header name one whatever its case, an id of any other form is an id that does not exist
 * (not_found), an unknown query parameter changes nothing.
 *
 * The INP-, ORG- and CFG- checks judge the classes; input coverage counts those a run
 * exercised out of those the model holds.
 */
import type { InputCoverage } from '../../core/input-coverage.ts';
import { cellName, configurationTable } from '../../rules/configuration.ts';
import { deriveVariants } from './explore/boundary.ts';

export const OPERATIONS = {
  token: 'POST /api/token',
  create: 'POST /api/checkout-sessions',
  read: 'GET /api/checkout-sessions/{id}',
  linkCreate: 'POST /api/payment-links',
  linkRead: 'GET /api/payment-links/{id}',
  legacyRead: 'GET /api/transaction/{id}',
} as const;

export type Place = 'path' | 'query' | 'header' | 'media type' | 'body' | 'organisation' | 'configuration';

/**
 * `accepted`: must be answered as the same request without the variation would be.
 * `refused`: must get the documented code. `open`: the document allows more than one
 * answer (each allowed one passes, and the check says so).
 */
export type Expected = 'accepted' | 'refused' | 'open';

export interface InputClass {
  /** Stable id: `<operation>.<place>.<name>`, e.g. `read.path.no-prefix`. */
  id: string;
  operation: string;
  place: Place;
  what: string;
  expected: Expected;
}

const T = OPERATIONS;

/** The classes judged by hand-written variations (INP-002 to INP-006, ORG-001 to ORG-004). */
const FIXED: InputClass[] = [
  // The media type: one whatever its parameters and the letter case of its names (RFC 9110 8.3.1).
  {
    id: 'token.media.charset',
    operation: T.token,
    place: 'media type',
    what: 'form media type with charset=UTF-8',
    expected: 'accepted',
  },
  {
    id: 'token.media.case',
    operation: T.token,
    place: 'media type',
    what: 'form media type in other letter cases',
    expected: 'accepted',
  },
  {
    id: 'create.media.charset',
    operation: T.create,
    place: 'media type',
    what: 'application/json; charset=utf-8',
    expected: 'accepted',
  },
  { id: 'create.media.case', operation: T.create, place: 'media type', what: 'Application/JSON', expected: 'accepted' },
  {
    id: 'create.media.spaces',
    operation: T.create,
    place: 'media type',
    what: 'application/json ; charset=utf-8 (spaces around the semicolon)',
    expected: 'accepted',
  },
  // Header names are case-insensitive (RFC 9110 5.1); the bearer scheme's case the document fixes as `Bearer`, RFC 9110 11.1 reads it in any case.
  {
    id: 'create.header.names-upper',
    operation: T.create,
    place: 'header',
    what: 'AUTHORIZATION, CONTENT-TYPE and IDEMPOTENCY-KEY in capitals',
    expected: 'accepted',
  },
  {
    id: 'read.header.names-mixed',
    operation: T.read,
    place: 'header',
    what: 'aUtHoRiZaTiOn in mixed case',
    expected: 'accepted',
  },
  {
    id: 'read.header.scheme-case',
    operation: T.read,
    place: 'header',
    what: 'the scheme written bearer',
    expected: 'open',
  },
  {
    id: 'create.header.key-uuid',
    operation: T.create,
    place: 'header',
    what: 'an Idempotency-Key that is a UUID, replayed',
    expected: 'accepted',
  },
  {
    id: 'create.header.key-one',
    operation: T.create,
    place: 'header',
    what: 'an Idempotency-Key of one character, replayed',
    expected: 'open',
  },
  {
    id: 'create.header.key-long',
    operation: T.create,
    place: 'header',
    what: 'an Idempotency-Key of 255 characters, replayed',
    expected: 'open',
  },
  {
    id: 'create.header.key-punctuation',
    operation: T.create,
    place: 'header',
    what: 'an Idempotency-Key with spaces and punctuation, replayed',
    expected: 'open',
  },
  // Lookups: an id of any other form is an id that does not exist (Errors: not_found).
  {
    id: 'read.path.no-prefix',
    operation: T.read,
    place: 'path',
    what: 'an id without the cs_ prefix',
    expected: 'refused',
  },
  { id: 'read.path.prefix-only', operation: T.read, place: 'path', what: 'the prefix cs_ alone', expected: 'refused' },
  { id: 'read.path.long', operation: T.read, place: 'path', what: 'an id of 500 characters', expected: 'refused' },
  {
    id: 'read.path.encoded',
    operation: T.read,
    place: 'path',
    what: 'an id with a percent-encoded space',
    expected: 'refused',
  },
  {
    id: 'read.path.non-ascii',
    operation: T.read,
    place: 'path',
    what: 'an id with a letter outside ASCII',
    expected: 'refused',
  },
  {
    id: 'read.path.uuid',
    operation: T.read,
    place: 'path',
    what: 'a transaction UUID instead of a session id',
    expected: 'refused',
  },
  {
    id: 'link.path.not-uuid',
    operation: T.linkRead,
    place: 'path',
    what: 'an id that is no UUID',
    expected: 'refused',
  },
  {
    id: 'link.path.session-id',
    operation: T.linkRead,
    place: 'path',
    what: 'a checkout session id',
    expected: 'refused',
  },
  {
    id: 'link.path.unknown-uuid',
    operation: T.linkRead,
    place: 'path',
    what: 'a UUID of no link',
    expected: 'refused',
  },
  {
    id: 'legacy.path.not-uuid',
    operation: T.legacyRead,
    place: 'path',
    what: 'an id that is no UUID',
    expected: 'refused',
  },
  {
    id: 'legacy.path.session-id',
    operation: T.legacyRead,
    place: 'path',
    what: 'a checkout session id',
    expected: 'refused',
  },
  // Query parameters the document does not name change nothing.
  {
    id: 'token.query.unknown',
    operation: T.token,
    place: 'query',
    what: 'an unknown query parameter',
    expected: 'accepted',
  },
  {
    id: 'create.query.unknown',
    operation: T.create,
    place: 'query',
    what: 'an unknown query parameter',
    expected: 'accepted',
  },
  {
    id: 'read.query.unknown',
    operation: T.read,
    place: 'query',
    what: 'an unknown query parameter',
    expected: 'accepted',
  },
  {
    id: 'link.query.unknown',
    operation: T.linkRead,
    place: 'query',
    what: 'an unknown query parameter',
    expected: 'accepted',
  },
  // Where the request comes from: another organisation, or the other mode of the same one.
  {
    id: 'read.organisation.other',
    operation: T.read,
    place: 'organisation',
    what: 'a session of another organisation',
    expected: 'refused',
  },
  {
    id: 'read.organisation.other-mode',
    operation: T.read,
    place: 'organisation',
    what: 'a test session read with a live key',
    expected: 'open',
  },
  {
    id: 'link.organisation.other',
    operation: T.linkRead,
    place: 'organisation',
    what: 'a link of another organisation',
    expected: 'refused',
  },
  {
    id: 'legacy.organisation.other',
    operation: T.legacyRead,
    place: 'organisation',
    what: 'a link’s transaction of another organisation',
    expected: 'refused',
  },
  {
    id: 'create.organisation.key-other',
    operation: T.create,
    place: 'organisation',
    what: 'another organisation’s Idempotency-Key with an identical body',
    // A session of its own, or idempotency_error where keys are kept across (the scope is open).
    expected: 'open',
  },
  {
    id: 'create.organisation.key-other-mode',
    operation: T.create,
    place: 'organisation',
    what: 'the test mode’s Idempotency-Key with an identical body, with a live key',
    // A session of its own, or idempotency_error where keys are kept across (the scope is open).
    expected: 'open',
  },
  {
    id: 'link.organisation.transaction',
    operation: T.linkRead,
    place: 'organisation',
    what: 'a paid session’s transactionId (from its redirect), by its organisation and another',
    expected: 'refused',
  },
  {
    id: 'legacy.organisation.transaction',
    operation: T.legacyRead,
    place: 'organisation',
    what: 'a paid session’s transactionId (from its redirect), by its organisation and another',
    expected: 'refused',
  },
];

/** The body's classes: each value the description's create schema gives, alone in a valid body (INP-001). */
export function bodyClasses(): Array<InputClass & { variant: ReturnType<typeof deriveVariants>[number] }> {
  return deriveVariants().map((variant) => ({
    id: `create.body.${variant.field}: ${variant.label}`,
    operation: T.create,
    place: 'body' as const,
    what: `${variant.field}: ${variant.label}`,
    expected: variant.verdict === 'valid' ? 'accepted' : variant.verdict === 'invalid' ? 'refused' : 'open',
    variant,
  }));
}

/** The configuration table's cells (CFG-011, CFG-012). */
export function cellClasses(): InputClass[] {
  return configurationTable().map((cell) => ({
    id: `create.configuration.${cellName(cell)}`,
    operation: T.create,
    place: 'configuration' as const,
    what: cellName(cell),
    expected: cell.codes.length === 0 ? 'accepted' : 'refused',
  }));
}

/** Every class the model holds. */
export function inputModel(): InputClass[] {
  return [...FIXED, ...bodyClasses().map(({ variant: _v, ...c }) => c), ...cellClasses()];
}

/** A fixed class by id (a typo in a check is a bug of the suite, caught by its tests). */
export function fixedClass(id: string): InputClass {
  const found = FIXED.find((c) => c.id === id);
  if (!found) throw new Error(`No input class ${id} in the model.`);
  return found;
}

export function inputCoverage(exercised: ReadonlySet<string>): InputCoverage {
  const model = inputModel();
  const done = model.filter((c) => exercised.has(c.id));
  const cells = model.filter((c) => c.place === 'configuration');
  const byOperation = Object.values(OPERATIONS).flatMap((operation) => {
    const mine = model.filter((c) => c.operation === operation);
    if (mine.length === 0) return [];
    return {
      operation,
      exercised: mine.filter((c) => exercised.has(c.id)).length,
      total: mine.length,
      notExercised: mine.filter((c) => !exercised.has(c.id) && c.place !== 'configuration').map((c) => c.id),
    };
  });
  return {
    percent: Math.floor((1000 * done.length) / Math.max(1, model.length)) / 10,
    exercised: done.length,
    total: model.length,
    cells: { exercised: cells.filter((c) => exercised.has(c.id)).length, total: cells.length },
    byOperation,
  };
}

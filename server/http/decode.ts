/**
 * The request body as the pipeline takes it: decoded by its content type (JSON and
 * form-encoded bodies become values; anything else stays a string, which the schemas
 * then refuse, and malformed JSON is reported by validation), with what the schemas cannot
 * see found on the way:
 *
 * - a body that cannot be taken at all (too large, compressed, not JSON where JSON is
 *   required, not UTF-8, nested absurdly deep): `problem`, answered at the validation step;
 * - fields JSON.parse would silently change (`findings`, listed with validation's own):
 *   a number with more digits than a double holds, a key repeated in one object (the last
 *   would win), a string holding a lone surrogate (not storable as UTF-8) or U+0000 (not
 *   storable as text).
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { readsExactly } from '@payment-service/client/decimal';
import { type AnyNode, parse as parseTree } from '@humanwhocodes/momoa';
import { isLosslessNumber, parse as parseLossless } from 'lossless-json';
import { DomainError, type ErrorDetail, validationFailed } from '../domain/errors.ts';
import { unreadableCoding } from './headers.ts';

/** The documented bodies are two levels deep; far deeper nesting is refused, not recursed into. */
const MAX_DEPTH = 32;

/**
 * Whether some value lies more than `limit` property or index steps below `value`. The
 * recursion stops at limit + 1 levels whatever the input, and allocates nothing.
 */
function deeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) {
    if (value.length > 0 && limit === 0) return true;
    for (let i = 0; i < value.length; i++) if (deeperThan(value[i], limit - 1)) return true;
    return false;
  }
  for (const key in value) {
    if (limit === 0) return true;
    if (deeperThan((value as Record<string, unknown>)[key], limit - 1)) return true;
  }
  return false;
}

/**
 * 16 digits in a row, a point allowed among them: only a number written like this can
 * hold more digits than a double (15 significant digits always read back as written).
 * Strings may match too; they only cost the exact reading below.
 */
const MANY_DIGITS = /(?:\d\.?){16}/;
const INEXACT = 'must be written with no more digits than a 64-bit float holds (15 significant digits always are)';

/**
 * Numbers written with more digits than a double holds, which JSON.parse would round
 * (10000.0000000000001 is read as 10000, 1.0000000000000001 as 1): one detail each, by
 * field path as validation names fields. `text` is valid JSON.
 */
export function inexactNumbers(text: string): ErrorDetail[] {
  if (!MANY_DIGITS.test(text)) return [];
  const details: ErrorDetail[] = [];
  const refuse = (field: string) => details.push({ field, constraints: { exact: INEXACT } });
  const visit = (value: unknown, path: string[]): void => {
    if (isLosslessNumber(value)) {
      if (!readsExactly(value.value)) refuse(path.join('.'));
    } else if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) visit(item, [...path, String(i)]);
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) visit(item, [...path, key]);
    }
  };
  const tree = parseLossless(text);
  visit(tree, []);
  return details;
}

/** Object members written in valid JSON `text`: its colons outside strings. */
function membersWritten(text: string): number {
  let members = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x3a) members++;
  }
  return members;
}

/** Object members in a parsed value. */
function membersParsed(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  let members = 0;
  if (Array.isArray(value)) {
    for (const item of value) members += membersParsed(item);
    return members;
  }
  for (const key in value) members += 1 + membersParsed((value as Record<string, unknown>)[key]);
  return members;
}

const REPEATED = 'must appear once in its object: JSON.parse keeps only the last of a repeated key';

/**
 * Keys written twice in one object, by field path. A repeat is found cheaply (JSON.parse
 * keeps fewer members than the text has); only then is the text read again, into a
 * syntax tree (momoa), to name the keys.
 */
function repeatedKeys(text: string, value: unknown): ErrorDetail[] {
  if (membersWritten(text) === membersParsed(value)) return [];
  const details: ErrorDetail[] = [];
  const visit = (node: AnyNode, path: string[]): void => {
    if (node.type === 'Object') {
      const seen = new Set<string>();
      for (const member of node.members) {
        const key = member.name.type === 'String' ? member.name.value : String(member.name.name);
        const field = [...path, key].join('.');
        if (seen.has(key) && !details.some((d) => d.field === field))
          details.push({ field, constraints: { unique: `${field} ${REPEATED}` } });
        seen.add(key);
        visit(member.value, [...path, key]);
      }
    } else if (node.type === 'Array') {
      for (const [i, element] of node.elements.entries()) visit(element.value, [...path, String(i)]);
    }
  };
  visit(parseTree(text).body, []);
  return details;
}

/**
 * Only an escape can write a lone surrogate or U+0000 into JSON text: UTF-8 cannot
 * encode a surrogate, and JSON allows no raw control character in a string.
 */
const UNSTORABLE_ESCAPE = /\\u(?:[dD][89a-fA-F]|0000)/;
/** A surrogate code unit not part of a pair (with the u flag, a pair is one code point). */
const LONE_SURROGATE = /\p{Cs}/u;

/** Why a string cannot be stored as text, or undefined. */
function unstorable(text: string): string | undefined {
  if (LONE_SURROGATE.test(text))
    return 'must be well-formed Unicode: a lone surrogate (\\ud800-\\udfff) is not a character';
  // PostgreSQL's text holds no NUL, and a C string ends at one: refused whatever the store.
  if (text.includes('\0')) return 'must not contain U+0000 (NUL)';
  return undefined;
}

/** Strings (keys too) that cannot be stored as text (`unstorable`), by field path. */
function unstorableStrings(text: string, value: unknown): ErrorDetail[] {
  if (!UNSTORABLE_ESCAPE.test(text)) return [];
  const details: ErrorDetail[] = [];
  const check = (item: string, path: string[]) => {
    const problem = unstorable(item);
    const field = path.join('.');
    if (problem) details.push({ field, constraints: { unicode: `${field || 'The request body'} ${problem}` } });
  };
  const visit = (item: unknown, path: string[]): void => {
    if (typeof item === 'string') check(item, path);
    else if (Array.isArray(item)) {
      for (const [i, element] of item.entries()) visit(element, [...path, String(i)]);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, element] of Object.entries(item)) {
        check(key, [...path, key]);
        visit(element, [...path, key]);
      }
    }
  };
  visit(value, []);
  return details;
}

/** What JSON.parse made of valid JSON `text` that differs from what was written. */
function changedByParsing(text: string, value: unknown): readonly ErrorDetail[] {
  const repeated = repeatedKeys(text, value);
  const found = [...repeated, ...unstorableStrings(text, value)];
  // lossless-json refuses a repeated key, which is refused already.
  if (repeated.length === 0) found.push(...inexactNumbers(text));
  return found.length > 0 ? found : NONE;
}

export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

export const isJson = (type: string) => type === 'application/json' || type.endsWith('+json');

export interface ParsedBody {
  value: unknown;
  /** What JSON.parse changed (see above): refused along with validation's findings. */
  findings: readonly ErrorDetail[];
}

const NONE: readonly ErrorDetail[] = [];

/** `type`: the request's media type, as mediaType() gives it. */
export function parseBody(raw: Buffer, type: string): ParsedBody {
  if (raw.length === 0) return { value: undefined, findings: NONE };
  if (isJson(type)) {
    // JSON is UTF-8 (RFC 8259; a charset parameter has no effect). Decoding other bytes
    // would store U+FFFD in place of what was sent.
    if (!isUtf8(raw))
      throw validationFailed([{ field: '', constraints: { utf8: 'The request body must be valid UTF-8' } }]);
    const text = raw.toString('utf8');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { value: text, findings: NONE };
    }
    if (deeperThan(value, MAX_DEPTH)) {
      throw validationFailed([
        {
          field: '',
          constraints: { maxDepth: `The request body must not be nested more than ${MAX_DEPTH} levels deep` },
        },
      ]);
    }
    // openapi-backend parses string bodies again, so a JSON string goes on as its JSON
    // text: parsed once more it is a string, which the schema refuses.
    return { value: typeof value === 'string' ? text : value, findings: changedByParsing(text, value) };
  }
  const text = raw.toString('utf8');
  if (type === 'application/x-www-form-urlencoded') {
    const form: Record<string, string | string[]> = {};
    for (const [key, value] of new URLSearchParams(text)) {
      const seen = form[key];
      // A repeated field becomes an array, which the schema (type string) refuses.
      form[key] = seen === undefined ? value : [seen].flat().concat(value);
    }
    return { value: form, findings: NONE };
  }
  return { value: text, findings: NONE };
}

export interface DecodedBody {
  value: unknown;
  /** Why the body cannot be taken at all: answered at the validation step, the body going on as missing. */
  problem?: DomainError;
  findings: readonly ErrorDetail[];
}

/**
 * `raw`: the body as received (empty when over the limit, `tooLarge` then set); `jsonOnly`:
 * the route takes JSON bodies only (every route but the form-encoded token endpoint).
 */
export function decodeBody(req: IncomingMessage, raw: Buffer, tooLarge: boolean, jsonOnly: boolean): DecodedBody {
  const refuse = (field: string, constraint: string, problem: string): DecodedBody => ({
    value: undefined,
    problem: validationFailed([{ field, constraints: { [constraint]: problem } }]),
    findings: NONE,
  });
  if (tooLarge) return refuse('', 'maxSize', 'The request body must be at most 1 MiB');
  const coding = raw.length > 0 ? unreadableCoding(req) : undefined;
  if (coding) return refuse(coding.field, 'coding', coding.problem);
  const type = mediaType(req.headers['content-type']);
  if (raw.length > 0 && jsonOnly && !isJson(type))
    return refuse('', 'contentType', 'Send the request body as application/json');
  try {
    return parseBody(raw, type);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return { value: undefined, problem: error, findings: NONE };
  }
}

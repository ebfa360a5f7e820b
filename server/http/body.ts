/**
 * Parses the raw request body by its content type for openapi-backend: JSON and
 * form-encoded bodies become values; anything else stays a string, which the
 * description's schemas then refuse (openapi-backend reports malformed JSON itself).
 */
import { isUtf8 } from 'node:buffer';
import { isLosslessNumber, parse as parseLossless } from 'lossless-json';
import { readsExactly } from '@payment-service/client/decimal';
import { validationFailed, type ErrorDetail } from './errors.ts';

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
  let tree: unknown;
  try {
    tree = parseLossless(text);
  } catch {
    // lossless-json refuses a key repeated with another value, which JSON.parse takes
    // (the last wins). The numbers are still checked, outside the strings, without paths.
    const numbers = text.replace(/"(?:[^"\\]|\\.)*"/g, '""').match(/-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?/g) ?? [];
    if (!numbers.every(readsExactly)) refuse('');
    return details;
  }
  visit(tree, []);
  return details;
}

export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

export const isJson = (type: string) => type === 'application/json' || type.endsWith('+json');

export interface ParsedBody {
  value: unknown;
  /** Numbers that JSON.parse rounded (inexactNumbers): refused along with validation's findings. */
  inexact: readonly ErrorDetail[];
}

const NONE: readonly ErrorDetail[] = [];

/** `type`: the request's media type, as mediaType() gives it. */
export function parseBody(raw: Buffer, type: string): ParsedBody {
  if (raw.length === 0) return { value: undefined, inexact: NONE };
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
      return { value: text, inexact: NONE };
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
    return { value: typeof value === 'string' ? text : value, inexact: inexactNumbers(text) };
  }
  const text = raw.toString('utf8');
  if (type === 'application/x-www-form-urlencoded') {
    const form: Record<string, string | string[]> = {};
    for (const [key, value] of new URLSearchParams(text)) {
      const seen = form[key];
      // A repeated field becomes an array, which the schema (type string) refuses.
      form[key] = seen === undefined ? value : [seen].flat().concat(value);
    }
    return { value: form, inexact: NONE };
  }
  return { value: text, inexact: NONE };
}

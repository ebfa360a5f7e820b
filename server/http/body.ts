/**
 * Parses the raw request body by its content type for openapi-backend: JSON and
 * form-encoded bodies become values; anything else stays a string, which the
 * description's schemas then refuse (openapi-backend reports malformed JSON itself).
 */
import { isUtf8 } from 'node:buffer';
import { validationFailed } from './errors.ts';

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

export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

export const isJson = (type: string) => type === 'application/json' || type.endsWith('+json');

/** `type`: the request's media type, as mediaType() gives it. */
export function parseBody(raw: Buffer, type: string): unknown {
  if (raw.length === 0) return undefined;
  if (isJson(type)) {
    // JSON is UTF-8 (RFC 8259; a charset parameter has no effect). Decoding other bytes
    // would store U+FFFD in place of what was sent.
    if (!isUtf8(raw)) throw validationFailed([{ field: '', constraints: { utf8: 'The request body must be valid UTF-8' } }]);
    const text = raw.toString('utf8');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return text;
    }
    if (deeperThan(value, MAX_DEPTH)) {
      throw validationFailed([{ field: '', constraints: { maxDepth: `The request body must not be nested more than ${MAX_DEPTH} levels deep` } }]);
    }
    // openapi-backend parses string bodies again, so a JSON string goes on as its JSON
    // text: parsed once more it is a string, which the schema refuses.
    return typeof value === 'string' ? text : value;
  }
  const text = raw.toString('utf8');
  if (type === 'application/x-www-form-urlencoded') {
    const form: Record<string, string | string[]> = {};
    for (const [key, value] of new URLSearchParams(text)) {
      const seen = form[key];
      // A repeated field becomes an array, which the schema (type string) refuses.
      form[key] = seen === undefined ? value : [seen].flat().concat(value);
    }
    return form;
  }
  return text;
}

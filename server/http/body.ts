/**
 * Parses the raw request body by its content type for openapi-backend: JSON and
 * form-encoded bodies become values; anything else stays a string, which the
 * description's schemas then refuse (openapi-backend reports malformed JSON itself).
 */
export function parseBody(raw: Buffer, contentType: string | undefined): unknown {
  if (raw.length === 0) return undefined;
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const text = raw.toString('utf8');
  if (type === 'application/json' || type.endsWith('+json')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
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

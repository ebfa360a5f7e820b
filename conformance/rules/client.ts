/**
 * Rules of the document for API clients, each a pure judge of what a client sent: the
 * `client` mode applies them to the traffic of its scripted scenarios, `traffic` to traffic
 * recorded anywhere (service document: General conventions, Idempotency rules, Errors).
 */

/** Less than this between tries, on average, is no backoff. */
export const MIN_BACKOFF_MS = 50;
/** Most attempts a client may make of one create that keeps failing before it is hammering the service. */
export const MOST_ATTEMPTS = 10;

/** Whether two bodies are the same JSON value (key order and spacing aside), or the same text when not JSON. */
export function sameJson(a: string, b: string): boolean {
  try {
    return JSON.stringify(sortKeys(JSON.parse(a))) === JSON.stringify(sortKeys(JSON.parse(b)));
  } catch {
    return a === b;
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, sortKeys(v)]),
    );
  return value;
}

/** A create sent again, judged against the first: it must carry the first's key and body (Idempotency rules). */
export function repeatProblem(
  first: { key: string | undefined; body: string },
  again: { key: string | undefined; body: string },
): string | undefined {
  if (!first.key || again.key !== first.key)
    return first.key
      ? `under another Idempotency-Key (${again.key ?? 'none'}): the target may make a second payment`
      : 'and the first carried no Idempotency-Key: the target may make a second payment';
  if (!sameJson(again.body, first.body))
    return 'with another body under the same key: the target answers idempotency_error';
  return undefined;
}

/**
 * Tries of one request that keeps failing, by when each was sent: too many ("11 times: it
 * does not stop"), or too close together in all. Backoff with jitter may draw any wait up to its ceiling, a short one
 * too, so single waits are not judged; waiting next to nothing in all is hammering.
 */
export function backoffProblem(sentAt: readonly number[]): string | undefined {
  if (sentAt.length > MOST_ATTEMPTS) return `${sentAt.length} times: it does not stop`;
  const waited = (sentAt.at(-1) ?? 0) - (sentAt[0] ?? 0);
  if (sentAt.length >= 2 && waited < MIN_BACKOFF_MS * (sentAt.length - 1))
    return `${sentAt.length} times within ${waited} ms: it retried without backing off`;
  return undefined;
}

/** Slack for the clocks of whoever recorded the two requests. */
const CLOCK_SLACK_MS = 50;

/**
 * The wait a Retry-After asks for, in ms: delay-seconds or an HTTP-date (RFC 9110, 10.2.3)
 * read against the time it was answered; undefined when it is neither.
 */
export function retryAfterMs(value: string | undefined, answeredAt: number): number | undefined {
  const text = value?.trim() ?? '';
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - answeredAt);
}

/**
 * A request sent again `waitedMs` after the one answered 429 with `retryAfter` (our
 * modelling of throttling: the document shows no rate limit): sooner than it asked is a problem.
 */
export function retryAfterProblem(
  waitedMs: number,
  retryAfter: string | undefined,
  answeredAt: number,
): string | undefined {
  const asked = retryAfterMs(retryAfter, answeredAt);
  if (asked === undefined || waitedMs >= asked - CLOCK_SLACK_MS) return undefined;
  return `${waitedMs} ms after a 429 whose Retry-After was ${retryAfter!.trim()}${/^\d+$/.test(retryAfter!.trim()) ? ' s' : ''}`;
}

/** Decimal places of a JSON number literal's value (2.5e1 has none, 1.005 three). */
export function decimals(literal: string): number {
  const [mantissa, exponent = '0'] = literal.toLowerCase().split('e');
  const fraction = (mantissa!.split('.')[1] ?? '').replace(/0+$/, '');
  return Math.max(0, fraction.length - Number(exponent));
}

/** The literal of amount.total in a create's body, as sent (a number, or a string in quotes). */
export const totalLiteral = (body: string): string | undefined =>
  /"total"\s*:\s*(-?[0-9.eE+-]+|"[^"]*")/.exec(body)?.[1];

/** What is wrong with how a create sends amount.total: missing, a string, or more than two decimals (Conventions: amounts). */
export function amountProblem(body: string): string | undefined {
  const literal = totalLiteral(body);
  if (literal === undefined) return 'has no amount.total';
  if (literal.startsWith('"')) return `sends amount.total as the string ${literal}, not a JSON number`;
  if (decimals(literal) > 2) return `sends amount.total as ${literal}: more than two decimal places`;
  return undefined;
}

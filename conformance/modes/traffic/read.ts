/**
 * Traffic recorded elsewhere, read into the suite's own traffic entries: HAR 1.2 as
 * browsers, Playwright, mitmproxy and this suite write it, or this suite's NDJSON (one HAR
 * entry a line). Each entry is sorted as an exchange of the API (a path under `/api/`), a
 * webhook delivery (a `Service-Signature` header, or a body naming an `event`), or other
 * traffic (pages, the sandbox API, assets), which no rule judges.
 */
import { readFileSync } from 'node:fs';
import { isObject } from '../../core/json.ts';
import { SetupError } from '../../core/outcome.ts';
import type { TrafficEntry, TrafficKind } from '../../core/traffic.ts';

/** One exchange read, with what the file could not say. */
export interface Observed {
  /** Its place in the file, from 1: how a verdict names it. */
  n: number;
  /** The clientId its credentials belong to, as the file says (`_client`, which this suite writes). */
  client?: string;
  /** A fingerprint of its token, as the file says (`_token`, which this suite writes beside a token it redacts). */
  tokenTag?: string;
  entry: TrafficEntry;
  /** api, delivery or other (pages, the sandbox API, assets: not judged). */
  role: 'api' | 'delivery' | 'other';
  /** The request's body was in the file (a HAR may leave bodies out). */
  requestBodyRecorded: boolean;
  /** The answer's body was in the file. */
  responseBodyRecorded: boolean;
  /**
   * Sent by this suite probing a target (`run` writes `_kind: api` with the check that made
   * it): the requests break clients' rules on purpose, so no rule for clients judges them.
   */
  suiteProbe: boolean;
  /**
   * Answered by the target itself. False for an answer this suite's `client` mode gave in
   * the target's place, or edited (`_answeredBy`): no rule for the service judges it.
   */
  answeredByTarget: boolean;
}

type NameValue = { name?: unknown; value?: unknown };

function headersOf(list: unknown): Record<string, string> {
  const headers: Record<string, string> = {};
  if (!Array.isArray(list)) return headers;
  for (const h of list as NameValue[]) {
    if (typeof h?.name !== 'string' || typeof h.value !== 'string') continue;
    // HTTP/2 pseudo-headers (:authority) are the connection's, not the request's.
    if (h.name.startsWith(':')) continue;
    const name = h.name.toLowerCase();
    headers[name] = headers[name] === undefined ? h.value : `${headers[name]}, ${h.value}`;
  }
  return headers;
}

/**
 * A HAR content's text, decoded when the recorder kept it as base64 (Chromium does for some
 * bodies); undefined when the file holds none, or only its start (`_cut`, which this suite's
 * writer sets beside a body kept to a limit, such as the proxy's --max-body): a rule must not
 * judge a cut body as the one sent. The sizes cannot tell it: a redacted text is shorter too.
 */
function textOf(content: unknown): string | undefined {
  if (!isObject(content) || typeof content.text !== 'string' || content._cut === true) return undefined;
  return content.encoding === 'base64' ? Buffer.from(content.text, 'base64').toString('utf8') : content.text;
}

const EVENT_BODY = /^\s*\{[\s\S]*"(event|transactionId)"\s*:/;

export function roleOf(
  kind: unknown,
  url: URL,
  headers: Record<string, string>,
  body: string | undefined,
): Observed['role'] {
  if (kind === 'delivery') return 'delivery';
  if (kind === 'api' || kind === 'client') return url.pathname.includes('/api/') ? 'api' : 'other';
  if (url.pathname.includes('/api/')) return 'api';
  if (headers['service-signature'] !== undefined) return 'delivery';
  // A legacy delivery has no signature: a POST whose JSON names the event or transaction.
  if (body !== undefined && EVENT_BODY.test(body) && !url.pathname.startsWith('/sandbox/')) return 'delivery';
  return 'other';
}

function observedOf(raw: unknown, n: number): Observed | undefined {
  if (!isObject(raw) || !isObject(raw.request) || typeof raw.request.url !== 'string') return undefined;
  let url: URL;
  try {
    url = new URL(raw.request.url);
  } catch {
    return undefined;
  }
  const requestHeaders = headersOf(raw.request.headers);
  const postData = isObject(raw.request.postData) ? raw.request.postData : undefined;
  const requestBody = postData ? textOf(postData) : undefined;
  const response = isObject(raw.response) ? raw.response : undefined;
  const status = typeof response?.status === 'number' && response.status > 0 ? response.status : undefined;
  const responseBody = response ? textOf(response.content) : undefined;
  const started = typeof raw.startedDateTime === 'string' ? Date.parse(raw.startedDateTime) : Number.NaN;
  const method = typeof raw.request.method === 'string' ? raw.request.method.toUpperCase() : 'GET';
  const kind = raw._kind;
  const entry: TrafficEntry = {
    kind: (kind === 'delivery' || kind === 'client' ? kind : 'api') as TrafficKind,
    checkId: typeof raw._checkId === 'string' ? raw._checkId : '',
    startedAt: Number.isFinite(started) ? started : 0,
    durationMs: typeof raw.time === 'number' && raw.time >= 0 ? raw.time : undefined,
    request: { method, url: url.href, headers: requestHeaders, body: requestBody },
    response:
      status === undefined ? undefined : { status, headers: headersOf(response?.headers), body: responseBody ?? '' },
    ...(typeof raw._error === 'string' ? { error: raw._error } : {}),
    ...(typeof raw._answeredBy === 'string' ? { answeredBy: raw._answeredBy } : {}),
  };
  return {
    n,
    ...(typeof raw._client === 'string' ? { client: raw._client } : {}),
    ...(typeof raw._token === 'string' ? { tokenTag: raw._token } : {}),
    entry,
    role: roleOf(kind, url, requestHeaders, requestBody),
    // A request without a body has nothing to record: only a method that carries one can lack it.
    requestBodyRecorded: requestBody !== undefined || !['POST', 'PUT', 'PATCH'].includes(method),
    responseBodyRecorded: status === undefined || responseBody !== undefined,
    suiteProbe: kind === 'api' && entry.checkId !== '' && entry.checkId !== 'adapter',
    answeredByTarget: typeof raw._answeredBy !== 'string' || raw._answeredBy === 'the target',
  };
}

/** The exchanges of a HAR file, in the order they began (a HAR lists them so, but not always). */
export function readHar(file: string): Observed[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new SetupError(`--har ${file}: cannot read it as JSON (${(error as Error).message}).`);
  }
  const entries = isObject(parsed) && isObject(parsed.log) ? parsed.log.entries : undefined;
  if (!Array.isArray(entries)) throw new SetupError(`--har ${file}: not a HAR file (no log.entries).`);
  return ordered(entries.map((e, i) => observedOf(e, i + 1)));
}

/** The exchanges of an NDJSON file of HAR entries, one a line (`--reporter ndjson` writes one). */
export function readNdjson(file: string): Observed[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new SetupError(`--ndjson ${file}: cannot read it (${(error as Error).message}).`);
  }
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  return ordered(
    lines.map((line, i) => {
      try {
        return observedOf(JSON.parse(line), i + 1);
      } catch {
        throw new SetupError(`--ndjson ${file}: line ${i + 1} is not JSON.`);
      }
    }),
  );
}

function ordered(read: Array<Observed | undefined>): Observed[] {
  return read
    .filter((o): o is Observed => o !== undefined)
    .sort((a, b) => a.entry.startedAt - b.entry.startedAt || a.n - b.n);
}

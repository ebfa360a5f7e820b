/**
 * What the fuzzing of the reference server (fuzz.test.ts) holds each answer to, whatever was
 * sent: the server it fuzzes and what it has seen so far, how a request is sent and its
 * answer judged against the document's general rules (no 5xx, JSON, the envelope or the
 * token endpoint's plain errors, the description for documented statuses), and the model
 * of a near-valid create's answer.
 */
import { createValidator, loadDescription } from '../support/description.ts';
import {
  contractProblems,
  SANDBOX_TOKEN,
  startTestServer,
  type Answer,
  type Org,
  type TestServer,
} from '../support/server.ts';
import { AUTH_CODE, type Auth, VALID_AUTH } from './fuzz-inputs.ts';

// ---------------------------------------------------------------------------------------
// Shared state
// ---------------------------------------------------------------------------------------

export let t: TestServer;
/** The organisation whose creates are counted (NZD, every rail enabled). */
export let org: Org;
/** Another organisation: its token must never see `org`'s sessions. */
export let other: Org;

/** Starts the server the properties fuzz, with its two organisations. */
export async function startFuzzTarget(): Promise<void> {
  t = await startTestServer();
  [org, other] = await Promise.all([t.organisation(), t.organisation()]);
}

export const stats = { sent: 0, byProperty: {} as Record<string, number> };
/** Session ids of fresh (not replayed) 200 answers to creates by `org`, with the mode that created each. */
export const created = new Map<string, 'test' | 'live'>();
export const createdTestIds: string[] = [];
export let fresh200 = 0;
/** Ids answered by idempotent replays; each must also be a fresh create. */
export const replayedIds = new Set<string>();
/** `mode\0key` of every Idempotency-Key sent with valid credentials (a later reuse may be refused). */
export const keysSent = new Set<string>();

export const requestSchema = createValidator(
  loadDescription('openapi'),
  'fuzz-openapi.json',
)('/components/schemas/CheckoutSessionCreateRequest');
export const REQUEST_FIELDS = new Set(
  Object.keys(loadDescription('openapi').components.schemas.CheckoutSessionCreateRequest.properties as object),
);

export const TOKEN_MALFORMED = 'Invalid credentials - missing or malformed clientId/clientSecret';
/** The description's limits, in characters (code points, as ajv counts them). */
export const TOKEN_FIELD_MAX: number =
  loadDescription('openapi').components.schemas.TokenRequest.properties.clientId.maxLength;
export const IDEMPOTENCY_KEY_MAX: number =
  loadDescription('openapi').components.parameters.IdempotencyKey.schema.maxLength;
export const characters = (text: string) => [...text].length;
export const TOKEN_INVALID = 'Invalid credentials';
export const TOKEN_TOO_MANY = 'Too many requests - retry after the time in Retry-After';
export const FORM = 'application/x-www-form-urlencoded';

/** The described operations, for "is this a documented operation". */
export const OPERATIONS: Array<{ method: string; pattern: RegExp }> = Object.entries(
  loadDescription('openapi').paths as Record<string, Record<string, unknown>>,
).flatMap(([template, item]) =>
  Object.keys(item).map((method) => ({
    method: method.toUpperCase(),
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  })),
);
export const isDescribedOperation = (method: string, path: string) =>
  OPERATIONS.some((op) => op.method === method && op.pattern.test(path));

// ---------------------------------------------------------------------------------------
// Sending and checking
// ---------------------------------------------------------------------------------------

export interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface Exchange extends Sent {
  answer: Answer;
}

export const clip = (s: string, n = 400) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

export function describeExchange(ex: Exchange, problems: string[]): string {
  const headers = Object.fromEntries(Object.entries(ex.headers).map(([k, v]) => [k, clip(v, 120)]));
  return [
    `${ex.method} ${clip(ex.path, 300)}`,
    `  headers: ${JSON.stringify(headers)}`,
    ex.body === undefined ? '  (no body)' : `  body: ${clip(ex.body)}`,
    `→ ${ex.answer.status} ${ex.answer.headers.get('content-type') ?? '(no content-type)'} ${clip(ex.answer.text)}`,
    ...problems.map((p) => `  ✗ ${p}`),
  ].join('\n');
}

export async function send(property: string, sent: Sent): Promise<Exchange> {
  stats.sent++;
  stats.byProperty[property] = (stats.byProperty[property] ?? 0) + 1;
  const answer = await t.request(sent.method, sent.path, {
    headers: sent.headers,
    rawBody: sent.body,
    undocumented: true,
  });
  return { ...sent, answer };
}

export const isObject = (v: unknown): v is Record<string, any> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Problems with an error envelope; empty when it is one. */
export function envelopeProblems(body: unknown): string[] {
  if (!isObject(body) || !isObject(body.error)) return ['the body is not the envelope { error: { … } }'];
  const problems: string[] = [];
  if (Object.keys(body).length !== 1)
    problems.push(`the envelope has keys besides error: ${Object.keys(body).join(', ')}`);
  const e = body.error;
  if (typeof e.code !== 'string' || !/^[a-z0-9_]+$/.test(e.code))
    problems.push(`error.code ${JSON.stringify(e.code)} is not a code`);
  if (typeof e.message !== 'string' || e.message === '') problems.push('error.message is not a non-empty string');
  if (!('param' in e)) problems.push('error.param is missing (the key must always be present)');
  else if (e.param !== null && typeof e.param !== 'string') problems.push('error.param is neither a string nor null');
  if (typeof e.doc_url !== 'string' || e.doc_url !== `${t.server.docsUrl}/errors/#${e.code}`) {
    problems.push(`error.doc_url ${JSON.stringify(e.doc_url)} is not ${t.server.docsUrl}/errors/#${e.code}`);
  }
  if (e.code === 'validation_failed') {
    if (!Array.isArray(e.details) || e.details.length === 0)
      problems.push('validation_failed without a non-empty details list');
    else {
      for (const d of e.details) {
        const ok =
          isObject(d) &&
          typeof d.field === 'string' &&
          isObject(d.constraints) &&
          Object.keys(d.constraints).length > 0 &&
          Object.values(d.constraints).every((m) => typeof m === 'string');
        if (!ok) problems.push(`details entry ${JSON.stringify(d)} is not { field, constraints }`);
      }
      if (typeof e.param === 'string' && !e.details.some((d: any) => d?.field === e.param))
        problems.push(`param ${e.param} names no details entry`);
    }
  } else if ('details' in e) problems.push(`details on ${e.code} (only validation_failed has details)`);
  return problems;
}

/** The rules every answer keeps, whatever was sent. */
export function generalProblems(ex: Exchange): string[] {
  const { method, answer } = ex;
  const path = ex.path.split('?')[0]!;
  const problems: string[] = [];
  if (answer.status >= 500) problems.push(`status ${answer.status}: the server failed on client input`);
  if (method === 'HEAD') return problems;
  const contentType = answer.headers.get('content-type') ?? '';
  // The landing page (GET /) and the docs are pages for people: HTML.
  const docsPage =
    (path.startsWith('/docs') || path === '/') && answer.status < 400 && contentType.startsWith('text/html');
  // The hosted payment page is for a payer's browser: HTML, including its not-found page.
  const payerPage = path.startsWith('/pay/') && contentType.startsWith('text/html');
  if (payerPage) return problems;
  if (!docsPage) {
    if (!contentType.startsWith('application/json'))
      problems.push(`content-type ${contentType || '(none)'} is not application/json`);
    if (typeof answer.body === 'string' || answer.text === '') problems.push('the body is not JSON');
  }
  if (path === '/healthz') {
    if (method !== 'GET') {
      if (answer.status !== 405) problems.push(`${method} /healthz is not 405`);
    } else if (answer.status !== 200 || !isObject(answer.body) || answer.body.ok !== true)
      problems.push('/healthz is not 200 { ok: true }');
  }
  if (path === '/') {
    if (method !== 'GET') {
      if (answer.status !== 405) problems.push(`${method} / is not 405`);
    } else if (answer.status !== 200 || !docsPage) problems.push('/ is not the 200 HTML landing page');
  }
  if (answer.status >= 400 && answer.status < 500) {
    if (path === '/api/token' && method === 'POST') {
      const b = answer.body;
      if (!isObject(b) || typeof b.error !== 'string' || Object.keys(b).length !== 1)
        problems.push('a POST /api/token failure is not { error: <string> }');
    } else {
      problems.push(...envelopeProblems(answer.body));
    }
  }
  // A described operation answering a documented status must match the description.
  if (isDescribedOperation(method, path)) problems.push(...contractProblems(method, ex.path, answer));
  return problems;
}

export function fail(ex: Exchange, problems: string[]): never {
  throw new Error(`Answer breaks the contract:\n${describeExchange(ex, problems)}`);
}

/** Runs a batch concurrently, then checks each exchange with `check` (general rules first). */
export async function runBatch<S>(
  property: string,
  specs: S[],
  build: (spec: S, index: number) => Sent,
  check: (spec: S, ex: Exchange, index: number) => string[] = () => [],
): Promise<Exchange[]> {
  const exchanges = await Promise.all(specs.map((spec, i) => send(property, build(spec, i))));
  exchanges.forEach((ex, i) => {
    const problems = [...generalProblems(ex), ...check(specs[i]!, ex, i)];
    if (problems.length > 0) fail(ex, problems);
  });
  return exchanges;
}

export function authHeader(a: Auth): string | undefined {
  const tok = org.testToken;
  switch (a.kind) {
    case 'test':
      return `Bearer ${tok}`;
    case 'test-lowercase-scheme':
      return `bearer ${tok}`;
    case 'test-extra-spaces':
      return `Bearer    ${tok}`;
    case 'live':
      return `Bearer ${org.liveToken}`;
    case 'other':
      return `Bearer ${other.testToken}`;
    case 'none':
      return undefined;
    case 'empty':
      return '';
    case 'scheme-only':
      return 'Bearer';
    case 'basic':
      return `Basic ${Buffer.from('user:pass').toString('base64')}`;
    case 'no-scheme':
      return tok;
    case 'double-prefix':
      return `Bearer Bearer ${tok}`;
    case 'truncated':
      return `Bearer ${tok.slice(0, -10)}`;
    case 'mangled': {
      // Change one character of the payload (a changed last signature character can decode to the same bytes).
      const [h, p, s] = tok.split('.');
      const i = Math.floor(p!.length / 2);
      return `Bearer ${h}.${p!.slice(0, i)}${p![i] === 'A' ? 'B' : 'A'}${p!.slice(i + 1)}.${s}`;
    }
    case 'garbage':
      // "Bearer <random>" or a random header: never a valid token.
      return a.garbage!.length % 2 === 0 ? `Bearer ${a.garbage}` : a.garbage;
    case 'sandbox':
      return `Bearer ${SANDBOX_TOKEN}`;
  }
}

export function modeOf(a: Auth): 'test' | 'live' {
  return a.kind === 'live' ? 'live' : 'test';
}

export function headersFor(
  a: Auth,
  extra: Record<string, string>,
  key: string | undefined,
  contentType?: string,
): Record<string, string> {
  const headers: Record<string, string> = { ...extra };
  const authorization = authHeader(a);
  if (authorization !== undefined) headers.authorization = authorization;
  if (key !== undefined) headers['idempotency-key'] = key;
  if (contentType !== undefined) headers['content-type'] = contentType;
  return headers;
}

/** What HTTP makes of a header value: surrounding spaces and tabs are not part of it. */
export const headerValue = (v: string) => v.replace(/^[ \t]+|[ \t]+$/g, '');

// ---------------------------------------------------------------------------------------
// The model of a create's answer
// ---------------------------------------------------------------------------------------

export function errorCode(answer: Answer): string | undefined {
  return isObject(answer.body) && isObject(answer.body.error) ? String(answer.body.error.code) : undefined;
}

export function recordCreate(ex: Exchange, mode: 'test' | 'live', viaOrg: boolean): string[] {
  if (ex.answer.status !== 200) return [];
  const id = (ex.answer.body as { id: string }).id;
  if (ex.answer.headers.get('idempotent-replayed') === 'true') {
    replayedIds.add(id);
    return [];
  }
  if (!viaOrg) return ['a create with another organisation’s token in this property'];
  if (created.has(id)) return [`session id ${id} was answered as new twice`];
  created.set(id, mode);
  if (mode === 'test') createdTestIds.push(id);
  fresh200++;
  return [];
}

/** The first path segment of each problem the description's schema finds. */
export function schemaProblemFields(value: unknown): Set<string> {
  const fields = new Set<string>();
  if (requestSchema(value)) return fields;
  for (const e of requestSchema.errors ?? []) {
    const first = e.instancePath.split('/')[1] ?? (e.keyword === 'required' ? String(e.params.missingProperty) : '');
    fields.add(first);
  }
  return fields;
}

/**
 * Checks a create sent as `application/json` with the JSON text of `value` against what
 * the document's rules predict.
 */
export function createProblems(
  a: Auth,
  value: unknown,
  key: string | undefined,
  ex: Exchange,
  keyReused: boolean,
): string[] {
  const { status } = ex.answer;
  const code = errorCode(ex.answer);
  const param = isObject(ex.answer.body) && isObject(ex.answer.body.error) ? ex.answer.body.error.param : undefined;
  if (!VALID_AUTH.has(a.kind)) {
    const codes = AUTH_CODE[a.kind]!;
    return status === 401 && codes.includes(code!)
      ? []
      : [`expected 401 ${codes.join(' or ')} for credentials "${a.kind}"`];
  }
  if (a.kind === 'other') return [];
  const mode = modeOf(a);
  const invalidFields = schemaProblemFields(value);
  const keyInvalid =
    key !== undefined && (headerValue(key) === '' || characters(headerValue(key)) > IDEMPOTENCY_KEY_MAX);
  if (invalidFields.size > 0 || keyInvalid) {
    if (status !== 400 || code !== 'validation_failed')
      return [
        `expected 400 validation_failed (schema problems in: ${[...invalidFields].join(', ') || 'Idempotency-Key'})`,
      ];
    const details = (ex.answer.body as any).error.details as Array<{ field: string }>;
    const reported = new Set(details.map((d) => d.field.split('.')[0]!));
    const missing = [...invalidFields].filter((f) => !reported.has(f));
    if (keyInvalid && !reported.has('Idempotency-Key')) missing.push('Idempotency-Key');
    const strange = [...reported].filter((f) => f !== '' && f !== 'Idempotency-Key' && !REQUEST_FIELDS.has(f));
    return [
      ...(missing.length ? [`details do not list every failing field: missing ${missing.join(', ')}`] : []),
      ...(strange.length ? [`details name fields the request does not have: ${strange.join(', ')}`] : []),
    ];
  }
  const body = value as { amount: { currency?: string }; webhookUrl?: string };
  // The webhook target may be refused for the key's mode (live refuses loopback and private addresses).
  if (body.webhookUrl !== undefined && status === 400 && code === 'validation_failed' && param === 'webhookUrl')
    return [];
  if (body.amount.currency === 'AUD')
    return status === 400 && code === 'currency_mismatch'
      ? []
      : ['expected 400 currency_mismatch (the organisation settles in NZD)'];
  if (status === 200) {
    const problems = recordCreate(ex, mode, true);
    if (ex.answer.headers.get('idempotent-replayed') === 'true' && !keyReused)
      problems.push('a replay for a key never sent before');
    const b = ex.answer.body as Record<string, any>;
    const sent = value as Record<string, any>;
    if (ex.answer.headers.get('idempotent-replayed') !== 'true') {
      if (b.amount.total !== sent.amount.total)
        problems.push(`amount.total ${b.amount.total} is not the ${sent.amount.total} sent`);
      if (b.amount.currency !== 'NZD') problems.push('amount.currency is not the settlement currency');
      if (b.reference !== sent.creditorReference.reference) problems.push('reference is not the one sent');
      if (b.checkoutMethod !== sent.checkoutMethod) problems.push('checkoutMethod is not the one sent');
      if (b.status !== 'created') problems.push('status is not created');
      if (b.testMode !== (mode === 'test')) problems.push(`testMode is not ${mode === 'test'}`);
      if (sent.creditorReference.code && b.code !== sent.creditorReference.code)
        problems.push('code is not the one sent');
    }
    return problems;
  }
  if (keyReused && status === 400 && code === 'idempotency_error') return [];
  return [`expected 200${keyReused ? ' or 400 idempotency_error' : ''} for a valid body`];
}

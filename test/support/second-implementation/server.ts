/**
 * A second, independent implementation of the payment service, written from SERVICE.md
 * alone (never from server/): small, in-memory, node:http only. It is the conformance
 * suite's false-alarm guard: wherever the document is silent it chooses differently from
 * the obvious default (ids, token text, timestamps, signature part order, request shapes
 * of payment links and legacy transactions, order of configuration codes), and the whole
 * suite must still pass it. Comments name the clause (SERVICE.md#<id>) a line follows, or
 * say "ours" where the document leaves the choice open.
 *
 * Test controls live under /__control/ behind the `Control-Token` header; the adapter
 * (./adapter.ts) reaches the implementation through them and the public API only.
 */
import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { type AddressInfo, isIP } from 'node:net';
import { rootCertificates } from 'node:tls';

export interface SecondImplementationOptions {
  /** CA file the webhook sender trusts besides the public roots (the suite's receiver CA). */
  trustCaFile: string;
  /** Hosts this test deployment may deliver to although they are not public (its allowlist). */
  testHosts: string[];
  /** Secret of the /__control/ endpoints. */
  controlToken: string;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const TOKEN_LIFETIME = 5 * MINUTE; // auth.lifetime, limit.token
const SESSION_LIFETIME = 24 * HOUR; // res.create.expires, limit.session
const IDEMPOTENCY_MEMORY = 24 * HOUR; // create.idempotency-key, limit.idempotency
const WEBHOOK_WAIT = 5 * SECOND; // retry.wait, limit.webhook-wait
const CARD_ATTEMPTS = 3; // retry.card, limit.card-attempts
const CARD_RETRY_DELAYS = [1 * MINUTE, 10 * MINUTE]; // ours: the document states no spacing
const COMPLETION_DELAY_MS = 300; // ours: a succeeded charge is `pending` this long (state.pending)
const QUEUE_TICK_MS = 50; // ours: how often the card queue looks for due retries
const BODY_LIMIT = 1 << 20; // ours

type Mode = 'test' | 'live';
type Rail = 'card' | 'open_banking';
type Method = Rail | 'both';
type Currency = 'NZD' | 'AUD';
type Stored = 'created' | 'pending' | 'completed' | 'failed';

interface Organisation {
  id: string;
  settlementCurrency: Currency;
  cardEnabled: boolean;
  openBankingApproved: boolean;
  settlementAccount: boolean;
  signingSecret: string;
  clockOffsetMs: number;
  faults: { afterCommit: number; unsigned: number };
}

interface ApiKey {
  clientId: string;
  secretDigest: Buffer;
  orgId: string;
  mode: Mode;
}

interface Token {
  clientId: string;
  orgId: string;
  mode: Mode;
  expiresAt: number;
}

/** What every payment has, whichever way it was created (svc.uuid, res.transaction). */
interface Payable {
  transactionId: string;
  orgId: string;
  testMode: boolean;
  status: Stored;
  paidWith: Rail | null;
  notifyUrl: string | null;
  foreignTransactionId: string | null;
  createdAt: number;
  updatedAt: number;
}

interface Session extends Payable {
  kind: 'session';
  id: string;
  total: number;
  currency: Currency;
  checkoutMethod: Method;
  reference: string;
  particulars: string;
  code: string;
  redirectUrl: string;
  description: string | null;
  expiresAt: number;
}

interface Link extends Payable {
  kind: 'link';
  amountDue: number;
  currency: Currency;
  label: string;
}

interface LegacyTransaction extends Payable {
  kind: 'legacy';
  total: number;
  currency: Currency;
  reference: string;
}

type Payment = Session | Link | LegacyTransaction;

interface Delivery {
  transactionId: string;
  url: string;
  attempt: number;
  at: string;
  signed: boolean;
  responseStatus: number | null;
  error: string | null;
  final: boolean;
}

interface Job {
  payment: Payment;
  url: string;
  body: string;
  /** Event bodies are signed; the legacy two-field body never is (legacy.payload). */
  signable: boolean;
  rail: Rail;
  attempts: number;
  dueAt: number;
  inFlight: boolean;
}

interface Detail {
  field: string;
  constraints: Record<string, string>;
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly details?: Detail[],
  ) {
    super(message);
  }
}

/** Every failing field at once (code.validation-failed), merged per field. */
class Problems {
  private readonly fields = new Map<string, Record<string, string>>();
  add(field: string, constraints: Record<string, string>): void {
    this.fields.set(field, { ...this.fields.get(field), ...constraints });
  }
  get any(): boolean {
    return this.fields.size > 0;
  }
  error(): ApiError {
    const details = [...this.fields].map(([field, constraints]) => ({ field, constraints }));
    const message = details.flatMap((d) => Object.values(d.constraints)).join('; ');
    // err.param: the field when exactly one is to blame, else null.
    return new ApiError(400, 'validation_failed', message, details.length === 1 ? details[0]!.field : null, details);
  }
}

// ---------------------------------------------------------------------------------------
// Small pure helpers.

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whole-second ISO 8601 UTC (conv.timestamps); ours: no milliseconds. */
const iso = (ms: number) => new Date(Math.floor(ms / SECOND) * SECOND).toISOString().replace('.000Z', 'Z');
const wholeSecond = (ms: number) => Math.floor(ms / SECOND) * SECOND;

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** "Identical body" means the same JSON value: key order and whitespace do not matter (ours). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isObject(value))
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/** Decimal places of a number's value, counted exactly from its shortest decimal form. */
function decimalPlaces(n: number): number {
  const [mantissa = '', exponent = '0'] = String(n).split('e');
  const fraction = mantissa.split('.')[1] ?? '';
  return Math.max(0, fraction.length - Number(exponent));
}

/** Valid absolute URL: RFC 3986 characters and syntax, and parseable as the URL Standard does. */
function absoluteUrl(text: string): URL | null {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/.test(text)) return null;
  if (/%(?![0-9A-Fa-f]{2})/.test(text)) return null;
  try {
    const url = new URL(text);
    if (['http:', 'https:', 'ws:', 'wss:', 'ftp:'].includes(url.protocol) && !url.hostname) return null;
    return url;
  } catch {
    return null;
  }
}

function ipv4Number(text: string): number {
  return text.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

/** Special-purpose IPv4 ranges (IANA registry): none is reachable from the public internet. */
const NON_PUBLIC_V4: Array<[string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

function publicV4(address: string): boolean {
  const n = ipv4Number(address);
  return !NON_PUBLIC_V4.some(
    ([base, bits]) => Math.floor(n / 2 ** (32 - bits)) === Math.floor(ipv4Number(base) / 2 ** (32 - bits)),
  );
}

function ipv6Groups(address: string): number[] {
  let text = address;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const n = ipv4Number(v4[1]!);
    text = `${text.slice(0, v4.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const middle = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  return [...left, ...middle, ...right].map((g) => Number.parseInt(g, 16));
}

/** Only global unicast (2000::/3) is public, less documentation, 6to4 and Teredo/IETF blocks. */
function publicV6(address: string): boolean {
  const [a = 0, b = 0] = ipv6Groups(address);
  if ((a & 0xe000) !== 0x2000) return false;
  if (a === 0x2001 && (b === 0x0db8 || b < 0x0200)) return false;
  return a !== 0x2002;
}

// ---------------------------------------------------------------------------------------

export async function startSecondImplementation(
  options: SecondImplementationOptions,
): Promise<{ url: string; close(): Promise<void> }> {
  const orgs = new Map<string, Organisation>();
  const keys = new Map<string, ApiKey>();
  const tokens = new Map<string, Token>();
  const sessions = new Map<string, Session>();
  const payments = new Map<string, Payment>(); // by transaction id
  const idempotency = new Map<string, { request: string; storedAt: number; response: unknown }>();
  const deliveries: Delivery[] = [];
  const queue = new Set<Job>();
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Set<http.ClientRequest>();
  let baseUrl = '';
  const docsUrl = () => `${baseUrl}/docs`;

  /** Each organisation's clock: real time plus what advanceClock added (ours). */
  const now = (org: Organisation) => Date.now() + org.clockOffsetMs;
  const orgOf = (p: Payable) => orgs.get(p.orgId)!;

  /** A session unpaid 24 hours after creation reads `expired` (state.expired, limit.session). */
  function statusOf(p: Payment): Stored | 'expired' {
    if (p.kind === 'session' && (p.status === 'created' || p.status === 'failed') && now(orgOf(p)) >= p.expiresAt)
      return 'expired';
    return p.status;
  }

  // ---- Responses -----------------------------------------------------------------------

  function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    // conv.response-body: every answer is JSON, errors included.
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
    res.end(JSON.stringify(body));
  }

  function sendError(res: ServerResponse, e: ApiError): void {
    // conv.error-body, err.doc-url; details only on validation_failed (err.details).
    const error = {
      code: e.code,
      message: e.message,
      param: e.param,
      doc_url: `${docsUrl()}/errors/#${e.code}`,
      ...(e.details ? { details: e.details } : {}),
    };
    // RFC 6750 3: the scheme to use, and error="invalid_token" when a token was sent and refused.
    const challenge =
      e.code === 'unauthorized' ? 'Bearer realm="payments"' : 'Bearer realm="payments", error="invalid_token"';
    const headers: Record<string, string> = e.status === 401 ? { 'www-authenticate': challenge } : {};
    send(res, e.status, { error }, headers);
  }

  const notFound = (what: string) => new ApiError(404, 'not_found', `No ${what} with that id.`);
  const noRoute = () => new ApiError(404, 'not_found', 'No such route.');

  // ---- Organisations, keys, tokens -------------------------------------------------------

  function newSigningSecret(): string {
    return `whsec_${randomBytes(24).toString('hex')}`; // secret.scope: prefix whsec_
  }

  function newKey(orgId: string, mode: Mode): { clientId: string; clientSecret: string } {
    const clientId = `ck-${mode}-${randomBytes(9).toString('base64url')}`;
    const clientSecret = `sk-${randomBytes(24).toString('base64url')}`;
    keys.set(clientId, { clientId, secretDigest: digest(clientSecret), orgId, mode });
    return { clientId, clientSecret };
  }

  const TOKEN_400 = 'Invalid credentials - missing or malformed clientId/clientSecret'; // token.400
  const TOKEN_401 = 'Invalid credentials'; // token.401
  const DUMMY_DIGEST = digest('no such key');

  function issueToken(body: Buffer, contentType: string | undefined, requestId: string): [number, unknown] {
    // token.form, conv.request-body: form-encoded only; JSON (or anything else) is a 400.
    const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') return [400, { error: TOKEN_400 }];
    const form = new URLSearchParams(body.toString('utf8'));
    const ids = form.getAll('clientId');
    const secrets = form.getAll('clientSecret');
    if (ids.length !== 1 || secrets.length !== 1 || !ids[0] || !secrets[0]) return [400, { error: TOKEN_400 }];
    const key = keys.get(ids[0]);
    // token.identical: one comparison whether or not the id exists, and one answer for both;
    // only the per-request id differs (in the message too, ours), as it does between two
    // identical requests.
    const match = timingSafeEqual(digest(secrets[0]), key?.secretDigest ?? DUMMY_DIGEST);
    if (!key || !match) return [401, { error: `${TOKEN_401} (request ${requestId})`, requestId }];
    const org = orgs.get(key.orgId)!;
    const accessToken = `tk.${randomBytes(30).toString('base64url')}`; // ours: opaque, stored
    tokens.set(accessToken, {
      clientId: key.clientId,
      orgId: org.id,
      mode: key.mode,
      expiresAt: now(org) + TOKEN_LIFETIME,
    });
    return [200, { accessToken, tokenType: 'Bearer', expiresIn: 'PT5M' }]; // res.token.*; ours: ISO 8601 duration
  }

  /** auth.bearer and the four 401 codes. */
  function authenticate(req: IncomingMessage): { org: Organisation; mode: Mode } {
    const header = req.headers.authorization;
    if (!header) throw new ApiError(401, 'unauthorized', 'An Authorization header is required.');
    const m = /^Bearer +(.+)$/i.exec(header);
    const presented = m?.[1]?.trim();
    if (!presented) throw new ApiError(401, 'unauthorized', 'Authorization must be of the form Bearer <token>.');
    // code.invalid-token: truncated, mangled or double-prefixed tokens match nothing stored.
    const token = tokens.get(presented);
    if (!token) throw new ApiError(401, 'invalid_token', 'The token could not be verified.');
    // auth.removed: the key is gone; a new token will not help.
    if (!keys.has(token.clientId))
      throw new ApiError(401, 'unknown_api_key', 'The API key of this token no longer exists.');
    const org = orgs.get(token.orgId)!;
    if (now(org) >= token.expiresAt) throw new ApiError(401, 'token_expired', 'The token has expired.'); // auth.expired
    return { org, mode: token.mode }; // auth.mode
  }

  // ---- Field validation ------------------------------------------------------------------

  interface TextRule {
    required?: boolean;
    min?: number;
    max?: number;
    chars?: RegExp;
    charsText?: string;
  }

  function text(
    o: Record<string, unknown>,
    key: string,
    field: string,
    p: Problems,
    rule: TextRule,
  ): string | undefined {
    if (!Object.hasOwn(o, key)) {
      if (rule.required) p.add(field, { required: `${field} is required` });
      return undefined;
    }
    const v = o[key];
    if (typeof v !== 'string') {
      p.add(field, { isString: `${field} must be a string` });
      return undefined;
    }
    const length = [...v].length;
    const c: Record<string, string> = {};
    if (rule.min !== undefined && length < rule.min) c.minLength = `${field} must be at least ${rule.min} characters`;
    if (rule.max !== undefined && length > rule.max) c.maxLength = `${field} must be at most ${rule.max} characters`;
    if (rule.chars && !rule.chars.test(v)) c.matches = `${field} may only contain ${rule.charsText}`;
    if (Object.keys(c).length > 0) {
      p.add(field, c);
      return undefined;
    }
    return v;
  }

  /** create.total, limit.total, conv.amounts: a JSON number > 0, <= 10000, two decimals at most. */
  function money(v: unknown, present: boolean, field: string, p: Problems): number | undefined {
    if (!present) {
      p.add(field, { required: `${field} is required` });
      return undefined;
    }
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      p.add(field, { isNumber: `${field} must be a JSON number` });
      return undefined;
    }
    const c: Record<string, string> = {};
    if (v <= 0) c.positive = `${field} must be greater than 0`;
    if (v > 10000) c.max = `${field} must not be greater than 10000`;
    if (decimalPlaces(v) > 2) c.decimals = `${field} must have at most 2 decimal places`;
    if (Object.keys(c).length > 0) {
      p.add(field, c);
      return undefined;
    }
    return v;
  }

  /** target.https, create.webhook-url: HTTPS and publicly reachable, or a host of this test deployment. */
  function webhookTarget(o: Record<string, unknown>, key: string, p: Problems): string | null | undefined {
    const v = text(o, key, key, p, {});
    if (v === undefined) return Object.hasOwn(o, key) ? undefined : null;
    const url = absoluteUrl(v);
    if (!url) {
      p.add(key, { isUrl: `${key} must be a valid absolute URL` });
      return undefined;
    }
    if (url.protocol !== 'https:') {
      p.add(key, { https: `${key} must use https` });
      return undefined;
    }
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    if (!options.testHosts.includes(host) && !publiclyReachable(host)) {
      p.add(key, { publiclyReachable: `${key} must be reachable from the public internet` });
      return undefined;
    }
    return v;
  }

  function publiclyReachable(host: string): boolean {
    const family = isIP(host);
    if (family === 4) return publicV4(host);
    if (family === 6) return publicV6(host);
    // ours: names that can never resolve publicly (single labels, reserved and local TLDs).
    if (!host.includes('.')) return false;
    return !/(^|\.)(localhost|local|internal|home\.arpa|invalid|test)$/.test(host);
  }

  const REFERENCE_CHARS = /^[0-9A-Za-z '.,@_-]*$/; // create.reference
  const PARTICULARS_CHARS = /^[a-zA-Z0-9\- ]*$/; // create.particulars, create.code

  interface SessionInput {
    total: number;
    currency: Currency | null;
    reference: string;
    particulars: string;
    code: string | null;
    redirectUrl: string;
    checkoutMethod: Method;
    webhookUrl: string | null;
    foreignTransactionId: string | null;
    description: string | null;
  }

  /** POST /api/checkout-sessions body, every rule of its parameter table. */
  function validateSession(b: Record<string, unknown>, p: Problems): SessionInput | null {
    if (!Object.hasOwn(b, 'type')) p.add('type', { required: 'type is required' });
    else if (b.type !== 'single') p.add('type', { equals: 'type must be single' }); // create.type

    let total: number | undefined;
    let currency: Currency | null = null;
    if (!Object.hasOwn(b, 'amount')) p.add('amount', { required: 'amount is required' });
    else if (!isObject(b.amount)) p.add('amount', { isObject: 'amount must be an object' });
    else {
      total = money(b.amount.total, Object.hasOwn(b.amount, 'total'), 'amount.total', p);
      if (Object.hasOwn(b.amount, 'currency')) {
        const c = b.amount.currency;
        if (c === 'NZD' || c === 'AUD') currency = c;
        else p.add('amount.currency', { isIn: 'amount.currency must be NZD or AUD' }); // create.currency
      }
    }

    let reference: string | undefined;
    let particulars: string | undefined;
    let code: string | undefined;
    const ref = b.creditorReference;
    if (!Object.hasOwn(b, 'creditorReference'))
      p.add('creditorReference', { required: 'creditorReference is required' });
    else if (!isObject(ref)) p.add('creditorReference', { isObject: 'creditorReference must be an object' });
    else {
      reference = text(ref, 'reference', 'creditorReference.reference', p, {
        required: true,
        min: 1,
        max: 12,
        chars: REFERENCE_CHARS,
        charsText: "0-9 A-Z a-z space ' . , @ _ -",
      });
      particulars = text(ref, 'particulars', 'creditorReference.particulars', p, {
        max: 12,
        chars: PARTICULARS_CHARS,
        charsText: 'a-z A-Z 0-9 - and space',
      });
      code = text(ref, 'code', 'creditorReference.code', p, {
        max: 12,
        chars: PARTICULARS_CHARS,
        charsText: 'a-z A-Z 0-9 - and space',
      });
    }

    const redirectUrl = text(b, 'redirectUrl', 'redirectUrl', p, { required: true });
    if (redirectUrl !== undefined && !absoluteUrl(redirectUrl))
      p.add('redirectUrl', { isUrl: 'redirectUrl must be a valid absolute URL' }); // create.redirect-url

    const method = b.checkoutMethod;
    if (!Object.hasOwn(b, 'checkoutMethod')) p.add('checkoutMethod', { required: 'checkoutMethod is required' });
    else if (method !== 'open_banking' && method !== 'card' && method !== 'both')
      p.add('checkoutMethod', { isIn: 'checkoutMethod must be open_banking, card or both' });

    const webhookUrl = webhookTarget(b, 'webhookUrl', p);
    const foreignTransactionId = text(b, 'foreignTransactionId', 'foreignTransactionId', p, {});
    const description = text(b, 'description', 'description', p, { max: 255 }); // create.description

    if (p.any) return null;
    return {
      total: total!,
      currency,
      reference: reference!,
      particulars: particulars ?? '',
      code: code ?? null, // ours: an empty code given is kept as given
      redirectUrl: redirectUrl!,
      checkoutMethod: method as Method,
      webhookUrl: webhookUrl ?? null,
      foreignTransactionId: foreignTransactionId ?? null,
      description: description ?? null,
    };
  }

  /**
   * Configuration codes, after validation. The document fixes only that
   * open_banking_currency_unsupported precedes open_banking_not_enabled and
   * settlement_account_missing (order.aud-first); the rest of this order is ours.
   */
  function configuration(input: SessionInput, org: Organisation): ApiError | null {
    const card = input.checkoutMethod !== 'open_banking';
    const bank = input.checkoutMethod !== 'card';
    if (card && !org.cardEnabled) return new ApiError(400, 'card_not_enabled', 'Card payments are not configured.');
    if (bank && org.settlementCurrency === 'AUD')
      return new ApiError(400, 'open_banking_currency_unsupported', 'The bank rail moves NZD only.');
    if (bank && !org.settlementAccount)
      return new ApiError(400, 'settlement_account_missing', 'The organisation has no settlement account.');
    if (bank && !org.openBankingApproved)
      return new ApiError(400, 'open_banking_not_enabled', 'The open-banking application is not approved.');
    if (input.currency && input.currency !== org.settlementCurrency)
      return new ApiError(
        400,
        'currency_mismatch',
        'amount.currency differs from the settlement currency.',
        'amount.currency',
      );
    return null;
  }

  // ---- Creates: validation, idempotency, configuration, commit ---------------------------

  interface Create<T> {
    endpoint: string;
    validate(body: Record<string, unknown>, p: Problems): T | null;
    configure(input: T, org: Organisation): ApiError | null;
    commit(input: T, org: Organisation, mode: Mode): unknown;
  }

  /**
   * Synchronous from here on, so concurrent identical requests cannot both create
   * (idem.replay): the first commits and stores its answer, the others replay it.
   */
  function create<T>(spec: Create<T>, req: IncomingMessage, raw: Buffer, org: Organisation, mode: Mode): unknown {
    const p = new Problems();
    const keyHeader = req.headers['idempotency-key'];
    const key = Array.isArray(keyHeader) ? keyHeader.join(',') : keyHeader;
    if (key !== undefined && key.trim() === '')
      p.add('Idempotency-Key', { minLength: 'Idempotency-Key must not be empty' });
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      p.add('body', { json: 'the body must be valid JSON' });
    }
    let input: T | null = null;
    if (body !== undefined && !isObject(body)) p.add('body', { isObject: 'the body must be a JSON object' });
    else if (isObject(body)) input = spec.validate(body, p);
    if (p.any || input === null) throw p.error(); // order.validation: validation first

    // Keys are scoped to organisation, mode and endpoint (ours) and remembered 24 hours on the
    // organisation's clock (limit.idempotency).
    const slot = key === undefined ? null : [org.id, mode, spec.endpoint, key].join('\u0000');
    const request = canonical(body);
    if (slot) {
      const held = idempotency.get(slot);
      if (held && now(org) - held.storedAt < IDEMPOTENCY_MEMORY) {
        if (held.request === request) return held.response; // idem.replay
        throw new ApiError(400, 'idempotency_error', 'This Idempotency-Key was used with a different body.'); // idem.conflict
      }
    }
    // Replay comes before configuration: a repeat must not depend on today's settings. A
    // request refused here stores no key, so the same key works once the portal is fixed.
    const refused = spec.configure(input, org);
    if (refused) throw refused;
    const response = spec.commit(input, org, mode);
    if (slot) idempotency.set(slot, { request, storedAt: now(org), response });
    if (org.faults.afterCommit > 0) {
      // injectFault internal_error_after_commit: committed (key included), then a 500.
      org.faults.afterCommit -= 1;
      throw new ApiError(500, 'internal_error', 'Internal error.');
    }
    return response;
  }

  const sessionCreate: Create<SessionInput> = {
    endpoint: 'checkout-sessions',
    validate: validateSession,
    configure: configuration,
    commit(input, org, mode) {
      const at = wholeSecond(now(org));
      const id = `cs_${randomBytes(15).toString('base64url')}`; // res.create.id; ours after the prefix
      const session: Session = {
        kind: 'session',
        id,
        transactionId: randomUUID(), // svc.uuid
        orgId: org.id,
        testMode: mode === 'test', // res.create.test-mode
        status: 'created',
        paidWith: null,
        notifyUrl: input.webhookUrl,
        foreignTransactionId: input.foreignTransactionId,
        createdAt: at,
        updatedAt: at,
        total: input.total,
        currency: input.currency ?? org.settlementCurrency, // create.currency: filled in when omitted
        checkoutMethod: input.checkoutMethod,
        reference: input.reference,
        particulars: input.particulars,
        code: input.code ?? `G${randomBytes(4).toString('hex').toUpperCase()}`, // create.code: generated
        redirectUrl: input.redirectUrl,
        description: input.description,
        expiresAt: at + SESSION_LIFETIME,
      };
      sessions.set(id, session);
      payments.set(session.transactionId, session);
      return {
        id,
        status: 'created',
        url: `${baseUrl}/pay/${id}`,
        code: session.code,
        amount: { total: session.total, currency: session.currency },
        checkoutMethod: session.checkoutMethod,
        reference: session.reference,
        testMode: session.testMode,
        expiresAt: iso(session.expiresAt),
      };
    },
  };

  function sessionView(s: Session) {
    const status = statusOf(s);
    return {
      id: s.id,
      status,
      code: s.code,
      amount: { total: s.total, currency: s.currency },
      checkoutMethod: s.checkoutMethod,
      reference: s.reference,
      particulars: s.particulars,
      // res.read.transaction-type: the rail once completed, open_banking before.
      transactionType: s.status === 'completed' ? s.paidWith : 'open_banking',
      testMode: s.testMode,
      foreignTransactionId: s.foreignTransactionId ?? '', // ours: the read types it as a string
      expiresAt: iso(s.expiresAt),
      createdAt: iso(s.createdAt),
      updatedAt: iso(status === 'expired' ? Math.max(s.updatedAt, s.expiresAt) : s.updatedAt),
    };
  }

  // Payment links: the document shows no request shape (link.endpoints); ours is
  // { amountDue, label, webhookUrl?, foreignTransactionId? }.
  interface LinkInput {
    amountDue: number;
    label: string;
    webhookUrl: string | null;
    foreignTransactionId: string | null;
  }

  const linkCreate: Create<LinkInput> = {
    endpoint: 'payment-links',
    validate(b, p) {
      const amountDue = money(b.amountDue, Object.hasOwn(b, 'amountDue'), 'amountDue', p);
      const label = text(b, 'label', 'label', p, { required: true, min: 1, max: 60 });
      const webhookUrl = webhookTarget(b, 'webhookUrl', p); // res.link: accepts a webhookUrl
      const foreignTransactionId = text(b, 'foreignTransactionId', 'foreignTransactionId', p, {});
      if (p.any) return null;
      return {
        amountDue: amountDue!,
        label: label!,
        webhookUrl: webhookUrl ?? null,
        foreignTransactionId: foreignTransactionId ?? null,
      };
    },
    configure: () => null,
    commit(input, org, mode) {
      const at = wholeSecond(now(org));
      const link: Link = {
        kind: 'link',
        transactionId: randomUUID(), // res.link-id: the link's id is its transaction id
        orgId: org.id,
        testMode: mode === 'test',
        status: 'created',
        paidWith: null,
        notifyUrl: input.webhookUrl,
        foreignTransactionId: input.foreignTransactionId,
        createdAt: at,
        updatedAt: at,
        amountDue: input.amountDue,
        currency: org.settlementCurrency,
        label: input.label,
      };
      payments.set(link.transactionId, link);
      return linkView(link);
    },
  };

  function linkView(l: Link) {
    return {
      id: l.transactionId,
      status: l.status,
      amountDue: l.amountDue,
      currency: l.currency,
      label: l.label,
      payUrl: `${baseUrl}/pay/${l.transactionId}`,
      paidWith: l.status === 'completed' ? l.paidWith : null,
      testMode: l.testMode,
      foreignTransactionId: l.foreignTransactionId,
      createdAt: iso(l.createdAt),
      updatedAt: iso(l.updatedAt),
    };
  }

  // Legacy transactions: no shape shown; ours is { total, reference, notificationUrl?, foreignTransactionId? }.
  interface LegacyInput {
    total: number;
    reference: string;
    notificationUrl: string | null;
    foreignTransactionId: string | null;
  }

  const legacyCreate: Create<LegacyInput> = {
    endpoint: 'transaction',
    validate(b, p) {
      const total = money(b.total, Object.hasOwn(b, 'total'), 'total', p);
      const reference = text(b, 'reference', 'reference', p, {
        required: true,
        min: 1,
        max: 12,
        chars: REFERENCE_CHARS,
        charsText: "0-9 A-Z a-z space ' . , @ _ -",
      });
      const notificationUrl = webhookTarget(b, 'notificationUrl', p);
      const foreignTransactionId = text(b, 'foreignTransactionId', 'foreignTransactionId', p, {});
      if (p.any) return null;
      return {
        total: total!,
        reference: reference!,
        notificationUrl: notificationUrl ?? null,
        foreignTransactionId: foreignTransactionId ?? null,
      };
    },
    configure: () => null,
    commit(input, org, mode) {
      const at = wholeSecond(now(org));
      const tx: LegacyTransaction = {
        kind: 'legacy',
        transactionId: randomUUID(),
        orgId: org.id,
        testMode: mode === 'test',
        status: 'created',
        paidWith: null,
        notifyUrl: input.notificationUrl,
        foreignTransactionId: input.foreignTransactionId,
        createdAt: at,
        updatedAt: at,
        total: input.total,
        currency: org.settlementCurrency,
        reference: input.reference,
      };
      payments.set(tx.transactionId, tx);
      return transactionView(tx);
    },
  };

  function transactionView(t: Link | LegacyTransaction) {
    return {
      transactionId: t.transactionId,
      status: t.status,
      total: t.kind === 'link' ? t.amountDue : t.total,
      currency: t.currency,
      reference: t.kind === 'link' ? t.label : t.reference,
      payUrl: `${baseUrl}/pay/${t.transactionId}`,
      testMode: t.testMode,
      foreignTransactionId: t.foreignTransactionId,
      createdAt: iso(t.createdAt),
      updatedAt: iso(t.updatedAt),
    };
  }

  // ---- Payment attempts and completion ---------------------------------------------------

  function railsOf(p: Payment): Rail[] {
    if (p.kind === 'session')
      return p.checkoutMethod === 'both' ? ['card', 'open_banking'] : [p.checkoutMethod as Rail];
    // Links and legacy transactions (ours): whatever rails the organisation can take.
    const org = orgOf(p);
    const rails: Rail[] = [];
    if (org.cardEnabled) rails.push('card');
    if (org.openBankingApproved && org.settlementAccount && org.settlementCurrency === 'NZD')
      rails.push('open_banking');
    return rails;
  }

  /** redirect.params: ids appended, the merchant's own query kept byte for byte. */
  function redirectFor(s: Session): string {
    const hash = s.redirectUrl.indexOf('#');
    const base = hash < 0 ? s.redirectUrl : s.redirectUrl.slice(0, hash);
    const fragment = hash < 0 ? '' : s.redirectUrl.slice(hash);
    const joiner = !base.includes('?') ? '?' : /[?&]$/.test(base) ? '' : '&';
    const ids = `checkoutSessionId=${encodeURIComponent(s.id)}&transactionId=${s.transactionId}`;
    return `${base}${joiner}${ids}${fragment}`;
  }

  function attempt(p: Payment, rail: Rail, outcome: string): { redirectTo: string | null } {
    if (outcome !== 'succeeded' && outcome !== 'declined' && outcome !== 'pending')
      throw new ApiError(400, 'bad_outcome', 'outcome must be succeeded, declined or pending');
    const status = statusOf(p);
    if (status !== 'created' && status !== 'failed')
      throw new ApiError(409, 'not_payable', `The payment is ${status}; it cannot be paid now.`);
    if (!railsOf(p).includes(rail))
      throw new ApiError(400, 'rail_not_offered', `${rail} is not offered for this payment.`);
    p.updatedAt = wholeSecond(now(orgOf(p)));
    p.status = 'pending'; // state.pending: in flight; an outcome `pending` leaves it there
    if (outcome === 'pending') return { redirectTo: null };
    // Asynchronous outcome (ours): the charge settles or is declined a moment later.
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (outcome === 'succeeded') complete(p, rail);
      else decline(p);
    }, COMPLETION_DELAY_MS);
    timers.add(timer);
    return { redirectTo: outcome === 'succeeded' && p.kind === 'session' ? redirectFor(p) : null };
  }

  /** state.declined: not final, the session stays live and the payer may try again; no event (event.none). */
  function decline(p: Payment): void {
    if (p.status !== 'pending') return;
    p.status = 'failed';
    p.updatedAt = wholeSecond(now(orgOf(p)));
  }

  function complete(p: Payment, rail: Rail): void {
    if (p.status !== 'pending') return;
    const org = orgOf(p);
    p.status = 'completed'; // state.completed
    p.paidWith = rail;
    p.updatedAt = wholeSecond(now(org));
    // target.none: without a webhook address nobody is notified.
    if (!p.notifyUrl) return;
    // payload.created: when the event happened, fixed once, so every attempt carries the same body.
    const body =
      p.kind === 'legacy'
        ? JSON.stringify({ transactionId: p.transactionId, foreignTransactionId: p.foreignTransactionId }) // legacy.payload
        : JSON.stringify({
            transactionId: p.transactionId, // payload.transaction
            checkoutSessionId: p.kind === 'session' ? p.id : null, // payload.session
            foreignTransactionId: p.foreignTransactionId, // payload.foreign-id
            event: 'checkout_session.completed', // event.completed
            createdAt: iso(p.updatedAt), // payload.created
          });
    const job: Job = {
      payment: p,
      url: p.notifyUrl,
      body,
      signable: p.kind !== 'legacy',
      rail,
      attempts: 0,
      dueAt: now(org),
      inFlight: false,
    };
    // retry.card: from a queue; retry.open-banking: inline, one attempt.
    if (rail === 'card') queue.add(job);
    else void deliver(job);
  }

  // ---- Webhook delivery ------------------------------------------------------------------

  function post(
    url: string,
    body: string,
    headers: Record<string, string>,
  ): Promise<{ status: number | null; error: string | null }> {
    return new Promise((resolve) => {
      let ca: string;
      try {
        ca = readFileSync(options.trustCaFile, 'utf8'); // read at sending time: the test CA may be remade
      } catch (e) {
        resolve({ status: null, error: `cannot read the trusted CA: ${(e as Error).message}` });
        return;
      }
      let settled = false;
      const req = https.request(url, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        ca: [...rootCertificates, ca],
        agent: false,
      });
      const finish = (status: number | null, error: string | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        inFlight.delete(req);
        resolve({ status, error });
      };
      // retry.wait: five seconds for an answer, then it is a failed delivery.
      const timer = setTimeout(() => {
        finish(null, 'no answer within 5 s');
        req.destroy();
      }, WEBHOOK_WAIT);
      inFlight.add(req);
      req.on('response', (res) => {
        res.resume();
        finish(res.statusCode ?? null, null);
      });
      req.on('error', (e) => finish(null, e.message));
      req.end(body);
    });
  }

  async function deliver(job: Job): Promise<void> {
    const org = orgOf(job.payment);
    job.inFlight = true;
    job.attempts += 1;
    const at = iso(now(org));
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'second-impl-hooks/1' };
    let signed = false;
    if (job.signable) {
      if (org.faults.unsigned > 0) {
        org.faults.unsigned -= 1; // sig.unsigned: secret unresolvable, sent with no header at all
      } else {
        // sig.digest with the secret current at sending time (secret.rotation); t is real
        // unix seconds of signing; ours: parts in the order v1, t (read by name, sig.versions).
        const t = Math.floor(Date.now() / SECOND);
        const v1 = createHmac('sha256', Buffer.from(org.signingSecret, 'utf8'))
          .update(`${t}.${job.body}`)
          .digest('hex');
        headers['service-signature'] = `v1=${v1},t=${t}`;
        signed = true;
      }
    }
    const { status, error } = await post(job.url, job.body, headers);
    if (!queue.has(job) && job.rail === 'card') return; // closed meanwhile
    const delivered = status !== null && status >= 200 && status < 300; // retry.success
    const finalStatus = status !== null && status >= 400 && status < 500 && status !== 408 && status !== 429; // retry.final
    const again = !delivered && !finalStatus && job.rail === 'card' && job.attempts < CARD_ATTEMPTS;
    deliveries.push({
      transactionId: job.payment.transactionId,
      url: job.url,
      attempt: job.attempts,
      at,
      signed,
      responseStatus: status,
      error,
      final: !again, // ours: no further attempt follows this one
    });
    job.inFlight = false;
    if (again) job.dueAt = now(org) + CARD_RETRY_DELAYS[job.attempts - 1]!;
    else queue.delete(job); // delivered, final, or set aside for the service's team
  }

  // The card queue, on the organisations' clocks: a clock move brings due retries on.
  const pump = setInterval(() => {
    for (const job of queue) if (!job.inFlight && now(orgOf(job.payment)) >= job.dueAt) void deliver(job);
  }, QUEUE_TICK_MS);

  // ---- HTTP ------------------------------------------------------------------------------

  function readBody(req: IncomingMessage): Promise<Buffer | null> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= BODY_LIMIT) chunks.push(c);
      });
      req.on('end', () => resolve(size <= BODY_LIMIT ? Buffer.concat(chunks) : null));
      req.on('error', reject);
    });
  }

  /**
   * auth.isolation: another organisation's resource is not found. Ours: so is the same
   * organisation's resource of the other mode; a test key sees test payments only (auth.mode).
   */
  const visible = (p: Payable, org: Organisation, mode: Mode) => p.orgId === org.id && p.testMode === (mode === 'test');

  async function api(req: IncomingMessage, res: ServerResponse, path: string, raw: Buffer): Promise<void> {
    const method = req.method ?? 'GET';
    const segments = path.split('/').map((s) => decodeURIComponent(s));
    const [, root, resource, id, ...rest] = segments;
    if (root !== 'api' || rest.length > 0 || id === '') throw noRoute();

    if (resource === 'token' && id === undefined && method === 'POST') {
      const requestId = res.getHeader('request-id') as string;
      const [status, body] = issueToken(raw, req.headers['content-type'], requestId);
      return send(res, status, body);
    }
    const known = resource === 'checkout-sessions' || resource === 'payment-links' || resource === 'transaction';
    if (!known || (id === undefined ? method !== 'POST' : method !== 'GET')) throw noRoute();

    const { org, mode } = authenticate(req);
    if (id === undefined) {
      // conv.success: 200 on creates too.
      if (resource === 'checkout-sessions') return send(res, 200, create(sessionCreate, req, raw, org, mode));
      if (resource === 'payment-links') return send(res, 200, create(linkCreate, req, raw, org, mode));
      return send(res, 200, create(legacyCreate, req, raw, org, mode));
    }

    if (resource === 'checkout-sessions') {
      const s = sessions.get(id);
      if (!s || !visible(s, org, mode)) throw notFound('checkout session'); // read.isolation
      return send(res, 200, sessionView(s));
    }
    const found = payments.get(id);
    const p = found && visible(found, org, mode) ? found : undefined;
    if (resource === 'payment-links') {
      if (p?.kind !== 'link') throw notFound('payment link');
      return send(res, 200, linkView(p));
    }
    // GET /api/transaction/{id}: retired for sessions (legacy.retired); a link answers while
    // payable and is gone once it settles (legacy.link); a legacy transaction always answers (ours).
    if (!p || p.kind === 'session' || (p.kind === 'link' && p.status === 'completed')) throw notFound('transaction');
    return send(res, 200, transactionView(p));
  }

  /** The hosted payment page's address answers with what the payer would see (no auth). */
  function payPage(res: ServerResponse, id: string): void {
    const p = sessions.get(id) ?? payments.get(id);
    if (!p) throw notFound('payment');
    const amount = p.kind === 'link' ? p.amountDue : p.total;
    send(res, 200, { payment: id, status: statusOf(p), amount, currency: p.currency, rails: railsOf(p) });
  }

  // ---- Test controls ---------------------------------------------------------------------

  const controlDigest = digest(options.controlToken);

  async function control(req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer): Promise<void> {
    const given = req.headers['control-token'];
    if (typeof given !== 'string' || !timingSafeEqual(digest(given), controlDigest))
      throw new ApiError(401, 'unauthorized', 'The Control-Token header is missing or wrong.');
    let body: Record<string, unknown> = {};
    if (raw.length > 0) {
      const parsed: unknown = JSON.parse(raw.toString('utf8'));
      if (isObject(parsed)) body = parsed;
    }
    const method = req.method ?? 'GET';
    const parts = url.pathname
      .split('/')
      .slice(2)
      .map((s) => decodeURIComponent(s));
    const route = `${method} ${parts.map((s, i) => (i % 2 === 1 && parts[0] !== 'webhook-deliveries' ? ':id' : s)).join('/')}`;
    const org = () => {
      const found = orgs.get(parts[1] ?? '');
      if (!found) throw notFound('organisation');
      return found;
    };

    switch (route) {
      case 'POST organisations': {
        const currency = body.settlementCurrency === 'AUD' ? 'AUD' : 'NZD';
        const created: Organisation = {
          id: `org-${randomBytes(6).toString('hex')}`,
          settlementCurrency: currency,
          cardEnabled: body.cardEnabled !== false,
          openBankingApproved: body.openBankingApproved !== false,
          settlementAccount: body.settlementAccount !== false,
          signingSecret: newSigningSecret(),
          clockOffsetMs: 0,
          faults: { afterCommit: 0, unsigned: 0 },
        };
        orgs.set(created.id, created);
        return send(res, 200, {
          id: created.id,
          webhookSigningSecret: created.signingSecret,
          apiKeys: { test: newKey(created.id, 'test'), live: newKey(created.id, 'live') },
        });
      }
      case 'POST organisations/:id/api-keys':
        return send(res, 200, newKey(org().id, body.mode === 'live' ? 'live' : 'test'));
      case 'DELETE api-keys/:id':
        if (!keys.delete(parts[1] ?? '')) throw notFound('API key');
        return send(res, 200, { deleted: parts[1] });
      case 'POST organisations/:id/webhook-secret': {
        const o = org();
        o.signingSecret = newSigningSecret(); // secret.rotation: replaced outright, no overlap
        return send(res, 200, { webhookSigningSecret: o.signingSecret });
      }
      case 'POST organisations/:id/clock': {
        const o = org();
        const seconds = Number(body.seconds);
        if (!Number.isFinite(seconds) || seconds < 0) throw new ApiError(400, 'bad_seconds', 'seconds must be >= 0');
        o.clockOffsetMs += seconds * SECOND;
        return send(res, 200, { now: iso(now(o)) });
      }
      case 'POST organisations/:id/faults': {
        const o = org();
        const times = body.times === undefined ? 1 : Number(body.times);
        if (body.kind === 'internal_error_after_commit') o.faults.afterCommit += times;
        else if (body.kind === 'signing_secret_unavailable') o.faults.unsigned += times;
        else throw new ApiError(400, 'bad_fault', 'unknown fault kind');
        return send(res, 200, { kind: body.kind, times });
      }
      case 'POST attempts': {
        const target = isObject(body.target) ? body.target : {};
        const id = String(target.id ?? '');
        const kinds: Record<string, Payment['kind']> = {
          'checkout-session': 'session',
          'payment-link': 'link',
          transaction: 'legacy',
        };
        const p = target.kind === 'checkout-session' ? sessions.get(id) : payments.get(id);
        if (!p || p.kind !== kinds[String(target.kind)]) throw notFound('payment');
        if (body.rail !== 'card' && body.rail !== 'open_banking') throw new ApiError(400, 'bad_rail', 'unknown rail');
        return send(res, 200, attempt(p, body.rail, String(body.outcome)));
      }
      case 'GET webhook-deliveries': {
        const byTx = url.searchParams.get('transactionId');
        const bySession = url.searchParams.get('checkoutSessionId');
        const tx = bySession === null ? byTx : (sessions.get(bySession)?.transactionId ?? '');
        return send(res, 200, { deliveries: deliveries.filter((d) => tx === null || d.transactionId === tx) });
      }
      default:
        throw noRoute();
    }
  }

  // ---- Server ----------------------------------------------------------------------------

  const server = http.createServer((req, res) => {
    const requestId = `req-${randomBytes(8).toString('hex')}`;
    res.setHeader('request-id', requestId);
    const url = new URL(req.url ?? '/', 'http://service.invalid');
    const onToken = url.pathname === '/api/token';
    void (async () => {
      try {
        const raw = await readBody(req);
        if (raw === null) {
          if (onToken) return send(res, 400, { error: TOKEN_400 });
          throw new ApiError(400, 'validation_failed', 'The body is too large.', 'body', [
            { field: 'body', constraints: { maxSize: 'the body must be at most 1 MiB' } },
          ]);
        }
        if (url.pathname.startsWith('/__control/')) return await control(req, res, url, raw);
        const pay = /^\/pay\/([^/]+)$/.exec(url.pathname);
        if (pay && req.method === 'GET') return payPage(res, decodeURIComponent(pay[1]!));
        if (/^\/docs\/errors\/?$/.test(url.pathname) && req.method === 'GET')
          return send(res, 200, { errors: 'Each code is explained under its own anchor.' });
        return await api(req, res, url.pathname, raw);
      } catch (e) {
        if (res.headersSent) return;
        if (e instanceof ApiError) return sendError(res, e);
        if (e instanceof URIError) return sendError(res, noRoute());
        // token.500 keeps the token endpoint's plain-string form; elsewhere the envelope (code.internal).
        if (onToken) return send(res, 500, { error: 'internal_error' });
        return sendError(res, new ApiError(500, 'internal_error', 'Internal error.'));
      }
    })();
  });
  // A request too malformed to parse still gets a JSON answer (conv.response-body).
  server.on('clientError', (e: NodeJS.ErrnoException, socket) => {
    if (e.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const error = {
      code: 'validation_failed',
      message: 'Malformed HTTP request.',
      param: 'request',
      doc_url: `${docsUrl()}/errors/#validation_failed`,
      details: [{ field: 'request', constraints: { http: 'the request must be well-formed HTTP/1.1' } }],
    };
    const body = JSON.stringify({ error });
    socket.end(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: baseUrl,
    async close() {
      clearInterval(pump);
      for (const t of timers) clearTimeout(t);
      queue.clear();
      for (const r of inFlight) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

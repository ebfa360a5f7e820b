/**
 * A check's way to the target's public API: every request recorded (for its evidence and
 * for the response conformance checks), tokens issued and reused per organisation, and
 * the requests most checks make (a token, a session, a read).
 */
import { expect, expectStatus } from '../assert.ts';
import type { Credentials } from '../../../core/adapter.ts';
import type { Exchange } from '../../../core/exchange.ts';
import { type RequestOptions, send } from '../../../core/http.ts';
import { at, isObject, type JsonObject, text } from '../../../core/json.ts';
import { CheckFailure, CheckSkipped, NoVerdict } from '../../../core/outcome.ts';
import { poll } from '../../../core/poll.ts';
import { skipWhenReceiverRefused } from './hooks.ts';
import type { Mode, Org } from './organisations.ts';
import type { RunContext } from './run-context.ts';

/** A valid checkout session request (Endpoints: POST /api/checkout-sessions); patch any part, `undefined` removes it. */
export function sessionBody(patch: Record<string, unknown> = {}): JsonObject {
  const body: JsonObject = {
    type: 'single',
    amount: { total: 25.5 },
    creditorReference: { reference: 'INV-1001' },
    redirectUrl: 'https://shop.example.com/done?order=1001',
    checkoutMethod: 'both',
  };
  for (const [key, value] of Object.entries(patch)) {
    const current = body[key];
    if (value === undefined) delete body[key];
    else if (isObject(value) && isObject(current)) {
      const merged: JsonObject = { ...current };
      for (const [inner, v] of Object.entries(value)) {
        if (v === undefined) delete merged[inner];
        else merged[inner] = v;
      }
      body[key] = merged;
    } else body[key] = value;
  }
  return body;
}

/**
 * Request bodies of our modelling (the document does not show them): a payment link, and a
 * legacy transaction (POST /api/transaction). A target may refuse them; the checks that
 * need one are then skipped.
 */
export const paymentLinkBody = (patch: Record<string, unknown> = {}): JsonObject => ({
  amount: { total: 15 },
  creditorReference: { reference: 'LINK-1' },
  redirectUrl: 'https://shop.example.com/paid',
  checkoutMethod: 'card',
  ...patch,
});
export const legacyTransactionBody = (patch: Record<string, unknown> = {}): JsonObject => ({
  amount: { total: 42 },
  creditorReference: { reference: 'LEGACY-1' },
  redirectUrl: 'https://shop.example.com/paid',
  checkoutMethod: 'card',
  foreignTransactionId: 'legacy-1',
  ...patch,
});

/**
 * A token spoilt as the document's invalid_token says ("truncated, mangled or
 * double-prefixed"): what follows `Bearer ` in the Authorization header. Mangled changes one
 * character in the middle, keeping the token's length and alphabet.
 */
export function spoilt(token: string, how: 'mangled' | 'truncated' | 'double'): string {
  if (how === 'truncated') return token.slice(0, Math.max(1, token.length - 6));
  if (how === 'double') return `Bearer ${token}`;
  const i = Math.floor(token.length / 2);
  const c = token[i]!;
  const replacement = c === 'A' ? 'B' : c === 'a' ? 'b' : /[0-9]/.test(c) ? String((Number(c) + 1) % 10) : 'A';
  return token.slice(0, i) + replacement + token.slice(i + 1);
}

export interface CreateOptions {
  idempotencyKey?: string;
  mode?: Mode;
  token?: string;
}

/** How often a request answered 429 is sent again, and the longest wait before it. */
const RATE_LIMIT_TRIES = 6;
/** The longest single wait a Retry-After is honoured for, and the longest waited in all for one request. */
const MAX_RATE_LIMIT_WAIT_MS = 60_000;
const RATE_LIMIT_BUDGET_MS = 90_000;

export class Api {
  constructor(
    private readonly run: RunContext,
    private readonly checkId: string,
    private readonly signal: AbortSignal,
    /** The check's own exchanges, newest last. */
    readonly exchanges: Exchange[],
    /** How often a request answered 429 is sent in all (1: the 429 is answered at once). */
    private readonly tries = RATE_LIMIT_TRIES,
  ) {}

  /**
   * A request to the target's public API, recorded. The document has request rate limits
   * it does not show: a 429 is waited out (its Retry-After, within bounds) and the request
   * sent again, a few times; a target still throttling after that leaves the check without
   * a verdict (NoVerdict), so throttling never becomes one.
   */
  async send(method: string, path: string, options: RequestOptions = {}): Promise<Exchange> {
    let exchange: Exchange;
    let waited = 0;
    for (let tries = 1; ; tries += 1) {
      exchange = await send(
        this.run.settings.baseUrl,
        method,
        path,
        { ...options, signal: this.signal },
        this.checkId,
        this.run.redactor,
      );
      if (exchange.status !== 429 || tries >= this.tries) break;
      const after = Number(exchange.headers['retry-after']);
      // At least what Retry-After asks (an earlier try is throttled again), spread a little.
      const asked = Math.min(Number.isFinite(after) && after > 0 ? after * 1000 : 500, MAX_RATE_LIMIT_WAIT_MS);
      const waitMs = asked * (1 + 0.2 * Math.random());
      if (waited + waitMs > RATE_LIMIT_BUDGET_MS) break;
      waited += waitMs;
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
    this.exchanges.push(exchange);
    this.run.exchanges.push(exchange);
    if (exchange.status === 429 && this.tries > 1)
      throw new NoVerdict(
        `${method} ${path} was answered 429 after ${Math.round(waited / 1000)} s of waiting as its Retry-After asked: the target is throttling the suite, and nothing can be judged.`,
      );
    return exchange;
  }

  /** POST /api/token with the key pair, form-encoded. */
  tokenRequest(pair: Credentials): Promise<Exchange> {
    return this.send('POST', '/api/token', { form: { clientId: pair.clientId, clientSecret: pair.clientSecret } });
  }

  /** A bearer token of the organisation's key, reused until its clock moves. */
  async token(org: Org, mode: Mode = 'test'): Promise<string> {
    const cached = org.tokens.get(mode);
    if (cached) return cached;
    const pair = org.keys[mode];
    if (!pair) {
      throw new CheckSkipped(
        `needs a ${mode}-mode API key: createOrganisation returning one, or liveClientId and liveClientSecret in the --config profile`,
        ['createOrganisation'],
      );
    }
    const exchange = await this.tokenRequest(pair);
    const token = text(exchange.json, 'accessToken');
    if (exchange.status !== 200 || token === undefined) {
      throw new CheckFailure(`Could not get an access token for a valid key pair (status ${exchange.status}).`, {
        exchange,
      });
    }
    org.tokens.set(mode, token);
    return token;
  }

  /** POST /api/checkout-sessions. */
  async createSession(org: Org, body: unknown, options: CreateOptions = {}): Promise<Exchange> {
    const token = options.token ?? (await this.token(org, options.mode));
    const exchange = await this.send('POST', '/api/checkout-sessions', {
      token,
      json: body,
      headers: options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {},
    });
    this.remember(org, exchange);
    return exchange;
  }

  /** A session that must be created (200), for checks about something else; its create response. */
  async session(org: Org, patch: Record<string, unknown> = {}): Promise<JsonObject & { id: string }> {
    const exchange = await this.createSession(org, sessionBody(patch));
    skipWhenReceiverRefused(this.run, exchange, patch.webhookUrl);
    expectStatus(exchange, 200, 'creating a valid checkout session');
    const id = text(exchange.json, 'id');
    expect(id !== undefined && isObject(exchange.json), 'A created session must have an id.', exchange);
    return { ...exchange.json, id };
  }

  /**
   * A payment link through the request shape we modelled (the document shows none): when
   * the target refuses it, the situation cannot be reached and the check is skipped with
   * that reason, never judged on our modelling; an adapter offering paymentLinks would
   * reach it (Target.paymentLink).
   */
  async paymentLink(org: Org, patch: Record<string, unknown> = {}): Promise<string> {
    const exchange = await this.send('POST', '/api/payment-links', {
      token: await this.token(org),
      json: paymentLinkBody(patch),
    });
    skipWhenReceiverRefused(this.run, exchange, patch.webhookUrl);
    const id = text(exchange.json, 'id');
    if (exchange.status !== 200 || id === undefined) {
      throw new CheckSkipped(
        `POST /api/payment-links refused the modelled request (status ${exchange.status}); the document does not show its shape, so no payment link can be made: an adapter offering paymentLinks makes them in the target's own shape`,
        ['paymentLinks'],
      );
    }
    this.remember(org, exchange);
    return id;
  }

  async readSession(org: Org, id: string, token?: string): Promise<Exchange> {
    return this.send('GET', `/api/checkout-sessions/${encodeURIComponent(id)}`, {
      token: token ?? (await this.token(org)),
    });
  }

  /**
   * Reads a session until it reads `status` (or answers other than 200), for up to
   * --settle-timeout: a target may move sessions on in a sweep of its own (expiry after
   * 24 hours) rather than at the moment they are read.
   */
  readSessionUntil(org: Org, id: string, status: string): Promise<Exchange> {
    return poll(
      () => this.readSession(org, id),
      (read) => read.status !== 200 || at(read.json, 'status') === status,
      this.run.settings.settleTimeoutMs,
    );
  }

  /** Notes whose payment a create answered, and its hosted page, for read-backs and manual attempts. */
  remember(org: Org, exchange: Exchange, idField = 'id'): void {
    const id = text(exchange.json, idField);
    if (exchange.status === 200 && id !== undefined) {
      this.run.payments.set(id, { org, url: text(exchange.json, 'url') });
    }
  }
}

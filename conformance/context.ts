/**
 * What a check works with: the target's public API (every exchange recorded for the
 * response conformance checks and for evidence), organisations (provisioned through the
 * sandbox API, or read from --config profiles), the sandbox clock and faults, and the
 * suite's webhook receiver.
 */
import { randomUUID } from 'node:crypto';
import { evidenceOf, rememberSandboxToken, send, type Exchange, type RequestOptions } from './http.ts';
import type { Behaviour, CaptureReceiver, Delivery } from './receiver.ts';
import { CheckFailure, CheckSkipped, type Check } from './types.ts';

export interface OrgSettings {
  settlementCurrency: 'NZD' | 'AUD';
  cardEnabled: boolean;
  openBankingApproved: boolean;
  settlementAccount: boolean;
}

export const DEFAULT_SETTINGS: OrgSettings = {
  settlementCurrency: 'NZD',
  cardEnabled: true,
  openBankingApproved: true,
  settlementAccount: true,
};

export interface KeyPair {
  clientId: string;
  clientSecret: string;
}

/** One organisation profile of --config (for targets without a sandbox API). */
export interface Profile extends Partial<OrgSettings> {
  name?: string;
  clientId: string;
  clientSecret: string;
  liveClientId?: string;
  liveClientSecret?: string;
  webhookSigningSecret?: string;
}

export interface Org {
  /** The sandbox organisation id; undefined for a --config profile. */
  id: string | undefined;
  webhookSigningSecret: string | undefined;
  keys: { test: KeyPair; live: KeyPair | undefined };
  settings: Partial<OrgSettings>;
  tokens: Map<string, string>;
}

export interface RunSettings {
  baseUrl: string;
  sandboxToken: string | undefined;
  profiles: Profile[];
  receiver: CaptureReceiver;
  /**
   * How long to wait for a delivery attempt after each sandbox clock step, and to be sure
   * nothing (more) arrives: waits end as soon as an attempt arrives. The document states
   * no delivery timing, so this is generous (default 3 s; --config `deliveryWaitMs`).
   */
  settleMs: number;
}

/** Does a --config profile fit these settings? Declared settings must match; undeclared ones are taken to fit the defaults only. */
function fits(p: Profile, wanted: Partial<OrgSettings>): boolean {
  for (const key of Object.keys(DEFAULT_SETTINGS) as (keyof OrgSettings)[]) {
    const declared = p[key];
    if (key in wanted) {
      if (declared !== wanted[key]) return false;
    } else if (declared !== undefined && declared !== DEFAULT_SETTINGS[key]) return false;
  }
  return true;
}

const DEFAULTS_TEXT = 'settlementCurrency NZD, cardEnabled, openBankingApproved, settlementAccount';

/** A valid checkout session request (Endpoints: POST /api/checkout-sessions); patch any part. */
export function sessionBody(patch: Record<string, unknown> = {}): Record<string, any> {
  const body: Record<string, any> = {
    type: 'single',
    amount: { total: 25.5 },
    creditorReference: { reference: 'INV-1001' },
    redirectUrl: 'https://shop.example.com/done?order=1001',
    checkoutMethod: 'both',
  };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) delete body[key];
    else if (
      value &&
      typeof value === 'object' &&
      !Array.isArray(value) &&
      body[key] &&
      typeof body[key] === 'object'
    ) {
      body[key] = { ...body[key] };
      for (const [inner, v] of Object.entries(value)) {
        if (v === undefined) delete body[key][inner];
        else body[key][inner] = v;
      }
    } else body[key] = value;
  }
  return body;
}

export class RunContext {
  readonly exchanges: Exchange[] = [];
  private shared: Promise<Org> | undefined;
  private hookCounter = 0;

  constructor(readonly settings: RunSettings) {
    rememberSandboxToken(settings.sandboxToken);
  }

  get hasSandbox(): boolean {
    return this.settings.sandboxToken !== undefined;
  }

  get receiver(): CaptureReceiver {
    return this.settings.receiver;
  }

  /** Why a check cannot run against this target, or undefined when it can. */
  missing(check: Check): string | undefined {
    for (const need of check.needs ?? []) {
      if (need === 'sandbox' && !this.hasSandbox) return 'needs the sandbox API (give --sandbox-token)';
      if (need === 'secondOrganisation' && !this.hasSandbox && this.settings.profiles.length < 2)
        return 'needs a second organisation (give --sandbox-token, or two profiles in --config)';
    }
    if (!this.hasSandbox && this.settings.profiles.length === 0)
      return 'needs credentials (give --sandbox-token, or a --config file with profiles)';
    return undefined;
  }

  /** Raw sandbox call; setup problems are thrown as they are. */
  async sandboxCall(
    method: string,
    path: string,
    body: unknown,
    checkId: string,
    signal?: AbortSignal,
  ): Promise<Exchange> {
    if (!this.settings.sandboxToken) throw new CheckSkipped('needs the sandbox API (give --sandbox-token)');
    return send(
      this.settings.baseUrl,
      method,
      path,
      {
        token: this.settings.sandboxToken,
        ...(body !== undefined ? { json: body } : {}),
        ...(signal ? { signal } : {}),
      },
      checkId,
    );
  }

  async provision(settings: Partial<OrgSettings>, checkId: string, signal?: AbortSignal): Promise<Org> {
    if (this.hasSandbox) {
      const full = { ...DEFAULT_SETTINGS, ...settings };
      const ex = await this.sandboxCall(
        'POST',
        '/sandbox/organisations',
        { name: `conformance ${checkId}`, ...full },
        checkId,
        signal,
      );
      if (ex.status !== 200)
        throw new CheckFailure(`The sandbox refused to create an organisation (${ex.status}).`, evidenceOf(ex));
      return {
        id: ex.json.id,
        webhookSigningSecret: ex.json.webhookSigningSecret,
        keys: { test: ex.json.apiKeys.test, live: ex.json.apiKeys.live },
        settings: full,
        tokens: new Map(),
      };
    }
    const profile = this.settings.profiles.find((p) => fits(p, settings));
    if (!profile) {
      const what =
        Object.keys(settings).length === 0
          ? `the default settings (${DEFAULTS_TEXT}; a setting a profile does not declare is taken to fit)`
          : `${JSON.stringify(settings)}, the rest as the defaults`;
      throw new CheckSkipped(
        `needs an organisation with ${what} (give --sandbox-token, or such a profile in --config)`,
      );
    }
    return profileOrg(profile);
  }

  /** The --config profile used as the shared organisation: the first whose declared settings fit the defaults. */
  sharedProfile(): Profile | undefined {
    return this.settings.profiles.find((p) => fits(p, {}));
  }

  sharedOrganisation(checkId: string, signal?: AbortSignal): Promise<Org> {
    this.shared ??= this.provision({}, checkId, signal);
    return this.shared;
  }

  nextHookPath(checkId: string, label: string): string {
    return `/hooks/${checkId}/${label}-${++this.hookCounter}`;
  }
}

const orgOfProfile = new WeakMap<Profile, Org>();

function profileOrg(p: Profile): Org {
  const known = orgOfProfile.get(p);
  if (known) return known;
  const org = newProfileOrg(p);
  orgOfProfile.set(p, org);
  return org;
}

function newProfileOrg(p: Profile): Org {
  return {
    id: undefined,
    webhookSigningSecret: p.webhookSigningSecret,
    keys: {
      test: { clientId: p.clientId, clientSecret: p.clientSecret },
      live:
        p.liveClientId && p.liveClientSecret
          ? { clientId: p.liveClientId, clientSecret: p.liveClientSecret }
          : undefined,
    },
    settings: p,
    tokens: new Map(),
  };
}

export interface Hook {
  path: string;
  url: string;
}

/** The per-check view: everything is recorded under the check's id. */
export class CheckContext {
  readonly exchanges: Exchange[] = [];

  constructor(
    readonly run: RunContext,
    readonly check: Check,
    /** Aborted when the check is abandoned (its time ran out): its requests and waits stop. */
    readonly signal: AbortSignal = new AbortController().signal,
  ) {}

  get id(): string {
    return this.check.id;
  }

  /** A request to the target's public API, recorded. */
  async api(method: string, path: string, options: RequestOptions = {}): Promise<Exchange> {
    const exchange = await send(this.run.settings.baseUrl, method, path, { ...options, signal: this.signal }, this.id);
    this.exchanges.push(exchange);
    this.run.exchanges.push(exchange);
    return exchange;
  }

  /** A sandbox API call that must succeed (a refusal fails the check, with the exchange). */
  async sandbox(method: string, path: string, body?: unknown): Promise<any> {
    const exchange = await this.run.sandboxCall(method, path, body, this.id, this.signal);
    if (exchange.status !== 200)
      throw new CheckFailure(
        `The sandbox API answered ${method} ${path} with ${exchange.status}.`,
        evidenceOf(exchange),
      );
    return exchange.json;
  }

  /** A fresh organisation of its own (sandbox), or the matching --config profile. */
  organisation(settings: Partial<OrgSettings> = {}): Promise<Org> {
    return this.run.provision(settings, this.id, this.signal);
  }

  /** An organisation shared by checks that change nothing about it (no clock, faults or keys). */
  sharedOrganisation(): Promise<Org> {
    return this.run.sharedOrganisation(this.id, this.signal);
  }

  /** An organisation other than the shared one (a --config profile other than the shared one, fitting the defaults). */
  async secondOrganisation(): Promise<Org> {
    if (this.run.hasSandbox) return this.run.provision({}, this.id, this.signal);
    const shared = this.run.sharedProfile();
    const profile = this.run.settings.profiles.find((p) => p !== shared && fits(p, {}));
    if (!profile)
      throw new CheckSkipped(
        `needs a second organisation (give --sandbox-token, or two profiles in --config whose declared settings fit the defaults: ${DEFAULTS_TEXT})`,
      );
    return profileOrg(profile);
  }

  /** POST /api/token with the key pair, form-encoded. */
  tokenRequest(pair: KeyPair): Promise<Exchange> {
    return this.api('POST', '/api/token', { form: { clientId: pair.clientId, clientSecret: pair.clientSecret } });
  }

  /** A bearer token of the organisation's key (reused until the clock moves). */
  async token(org: Org, mode: 'test' | 'live' = 'test'): Promise<string> {
    const cached = org.tokens.get(mode);
    if (cached) return cached;
    const pair = org.keys[mode];
    if (!pair)
      throw new CheckSkipped(
        `needs a ${mode}-mode API key (give --sandbox-token, or liveClientId/liveClientSecret in the --config profile)`,
      );
    const exchange = await this.tokenRequest(pair);
    if (exchange.status !== 200 || typeof exchange.json?.accessToken !== 'string')
      throw new CheckFailure(
        `Could not get an access token for a valid key pair (status ${exchange.status}).`,
        evidenceOf(exchange),
      );
    org.tokens.set(mode, exchange.json.accessToken);
    return exchange.json.accessToken;
  }

  /** POST /api/checkout-sessions. */
  async createSession(
    org: Org,
    body: unknown,
    options: { idempotencyKey?: string; mode?: 'test' | 'live'; token?: string } = {},
  ): Promise<Exchange> {
    const token = options.token ?? (await this.token(org, options.mode));
    return this.api('POST', '/api/checkout-sessions', {
      token,
      json: body,
      headers: options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {},
    });
  }

  /** A session that must be created (200), for checks about something else. */
  async session(org: Org, patch: Record<string, unknown> = {}): Promise<any> {
    const exchange = await this.createSession(org, sessionBody(patch));
    this.skipWhenReceiverRefused(exchange, patch.webhookUrl);
    this.expectStatus(exchange, 200, 'creating a valid checkout session');
    return exchange.json;
  }

  /**
   * The document requires webhookUrl to be HTTPS and publicly reachable, so a target may
   * refuse the suite's plain-http receiver address (400 validation_failed, param
   * webhookUrl): the check cannot run then, and the user is told how to make it run.
   */
  skipWhenReceiverRefused(exchange: Exchange, webhookUrl: unknown): void {
    if (
      typeof webhookUrl !== 'string' ||
      !webhookUrl.startsWith(this.run.receiver.publicUrl) ||
      webhookUrl.startsWith('https://')
    )
      return;
    const error = exchange.json?.error;
    const named =
      error?.param === 'webhookUrl' ||
      (Array.isArray(error?.details) && error.details.some((d: any) => d?.field === 'webhookUrl'));
    if (exchange.status === 400 && error?.code === 'validation_failed' && named) {
      throw new CheckSkipped(
        `the target refused the suite's receiver address ${this.run.receiver.publicUrl} as webhookUrl (the document requires HTTPS and a publicly reachable address): pass --receiver-public-url https://... (an HTTPS tunnel to the receiver)`,
      );
    }
  }

  async readSession(org: Org, id: string, token?: string): Promise<Exchange> {
    return this.api('GET', `/api/checkout-sessions/${encodeURIComponent(id)}`, {
      token: token ?? (await this.token(org)),
    });
  }

  /** Moves the organisation's clock (sandbox); tokens issued before may now be expired. */
  async advanceClock(org: Org, seconds: number): Promise<string | undefined> {
    if (!org.id) throw new CheckSkipped('needs the sandbox clock (give --sandbox-token)');
    const answer = await this.sandbox('POST', `/sandbox/organisations/${org.id}/clock`, { advanceSeconds: seconds });
    org.tokens.clear();
    return typeof answer?.now === 'string' ? answer.now : undefined;
  }

  /** A payment attempt through the sandbox. */
  pay(
    sessionId: string,
    rail: 'card' | 'open_banking',
    outcome: 'succeeded' | 'declined' | 'pending' = 'succeeded',
  ): Promise<any> {
    return this.sandbox('POST', `/sandbox/checkout-sessions/${encodeURIComponent(sessionId)}/attempts`, {
      rail,
      outcome,
    });
  }

  /** A receiver path of this check's own, answering as told (default 200). */
  hook(label: string, behaviour?: Behaviour): Hook {
    const path = this.run.nextHookPath(this.id, label);
    if (behaviour) this.run.receiver.behave(path, behaviour);
    return { path, url: `${this.run.receiver.publicUrl}${path}` };
  }

  waitForDeliveries(hook: Hook, count: number, timeoutMs = 10_000): Promise<Delivery[]> {
    return this.run.receiver.waitFor(hook.path, count, timeoutMs, this.signal);
  }

  /** The target's own delivery records for a session (sandbox API). */
  async deliveryRecords(query: { checkoutSessionId: string } | { transactionId: string }): Promise<any[]> {
    const [name, value] = Object.entries(query)[0]!;
    const answer = await this.sandbox('GET', `/sandbox/webhook-deliveries?${name}=${encodeURIComponent(value)}`);
    return Array.isArray(answer?.deliveries) ? answer.deliveries : [];
  }

  received(hook: Hook): Delivery[] {
    return this.run.receiver.received(hook.path);
  }

  /** Waits long enough to be sure nothing (more) is coming. */
  settle(ms = this.run.settings.settleMs): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.signal.aborted) return reject(this.signal.reason);
      const onAbort = () => {
        clearTimeout(timer);
        reject(this.signal.reason);
      };
      const timer = setTimeout(() => {
        this.signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      this.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  newKey(): string {
    return `conf-${this.id}-${randomUUID()}`;
  }

  // ---- assertions: each failure carries the exchange it is about ----

  fail(message: string, exchange?: Exchange): never {
    throw new CheckFailure(message, exchange ? evidenceOf(exchange) : undefined);
  }

  expect(condition: unknown, message: string, exchange?: Exchange): void {
    if (!condition) this.fail(message, exchange);
  }

  expectStatus(exchange: Exchange, status: number, what: string): void {
    this.expect(
      exchange.status === status,
      `${what}: expected status ${status}, received ${exchange.status}.`,
      exchange,
    );
  }

  /** A 4xx/5xx in the envelope with one of the codes (Errors: Envelope). */
  expectError(exchange: Exchange, status: number, codes: string | string[], what: string): any {
    const allowed = [codes].flat();
    const code = exchange.json?.error?.code;
    this.expect(
      exchange.status === status && allowed.includes(code),
      `${what}: expected ${status} ${allowed.join(' or ')}, received ${exchange.status}${code !== undefined ? ` ${JSON.stringify(code)}` : ''}.`,
      exchange,
    );
    return exchange.json.error;
  }
}

/**
 * A check's way to the target's controls: the adapter, and nothing else. Each call is of a
 * capability the check declared; a call that throws, or whose effect the public API does
 * not show where it can, ends the check as `error` (AdapterError), never as a verdict on
 * the target. Organisations come from the adapter, or from --config profiles without it.
 */
import {
  AdapterError,
  type AttemptTarget,
  type Capability,
  type Credentials,
  type Delivery,
  type FaultKind,
  type OrganisationSettings,
  type Outcome,
  type Rail,
} from '../adapter.ts';
import { at, show, text } from '../json.ts';
import { CheckSkipped } from '../outcome.ts';
import type { Api } from './api.ts';
import { DEFAULT_SETTINGS, DEFAULTS_TEXT, describeSettings, fits, type Mode, type Org } from './organisations.ts';
import type { RunContext } from './run.ts';

/** A path no session has: what a token is tried on to see whether it is still accepted. */
const PROBE_PATH = '/api/checkout-sessions/cs_conformance_clock_probe';
/** Tokens live five minutes (Authentication 4): a move of at least this long must expire one. */
const TOKEN_LIFETIME_S = 300;

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class Target {
  constructor(
    private readonly run: RunContext,
    private readonly api: Api,
    /** The capabilities the check declared: the only ones it may call. */
    private readonly declared: readonly Capability[],
  ) {}

  has(capability: Capability): boolean {
    return this.run.has(capability);
  }

  /** Calls the adapter, after checking the capability is the check's to call; a throw becomes an AdapterError. */
  private async call<T>(capability: Capability, what: string, call: () => Promise<T> | undefined): Promise<T> {
    if (!this.has(capability)) {
      throw new AdapterError(`${what}: the adapter does not offer ${capability}, and the check did not declare it`);
    }
    if (!this.declared.includes(capability) && capability !== 'createOrganisation') {
      throw new AdapterError(`${what}: the check calls ${capability} without declaring it`);
    }
    try {
      const promise = call();
      if (promise === undefined) throw new AdapterError(`the adapter declares ${capability} but has no such method`);
      return await promise;
    } catch (error) {
      // A built-in adapter may say that a check cannot run (the manual one, for a legacy transaction).
      if (error instanceof CheckSkipped) throw error;
      throw new AdapterError(`${what} failed: ${message(error)}`);
    }
  }

  /**
   * An organisation of the check's own (adapter), or the --config profile that fits the
   * settings. A made organisation is confirmed through the public API: its test key must
   * get a token.
   */
  async organisation(settings: Partial<OrganisationSettings> = {}): Promise<Org> {
    if (this.has('createOrganisation')) {
      const full = { ...DEFAULT_SETTINGS, ...settings };
      const made = await this.call('createOrganisation', `createOrganisation(${JSON.stringify(full)})`, () =>
        this.run.adapter.createOrganisation?.(full),
      );
      const org: Org = {
        id: made?.id,
        webhookSigningSecret: made?.webhookSigningSecret,
        keys: { test: made?.apiKeys?.test, live: made?.apiKeys?.live },
        settings: full,
        tokens: new Map(),
      };
      const { redactor } = this.run;
      redactor.remember(org.webhookSigningSecret, '$WEBHOOK_SECRET');
      redactor.remember(org.keys.test?.clientSecret, '$CLIENT_SECRET');
      redactor.remember(org.keys.live?.clientSecret, '$CLIENT_SECRET');
      if (typeof org.id !== 'string' || typeof org.keys.test?.clientId !== 'string') {
        throw new AdapterError('createOrganisation returned no id or no test API key');
      }
      await this.confirmKey(org, 'test', org.keys.test, 'createOrganisation');
      return org;
    }
    const profile = this.run.settings.profiles.find((p) => fits(p, settings));
    if (!profile) {
      throw new CheckSkipped(
        `needs an organisation with ${describeSettings(settings)}: createOrganisation, or such a --config profile (a setting a profile does not declare is taken to fit the defaults)`,
        ['createOrganisation'],
      );
    }
    return this.run.profileOrg(profile);
  }

  /** An organisation shared by checks that change nothing about it (no clock, faults or keys). */
  sharedOrganisation(): Promise<Org> {
    this.run.shared ??= this.organisation({});
    return this.run.shared;
  }

  /** An organisation other than the shared one, with the default settings. */
  async secondOrganisation(): Promise<Org> {
    if (this.has('createOrganisation')) return this.organisation({});
    const shared = this.run.settings.profiles.find((p) => fits(p, {}));
    const profile = this.run.settings.profiles.find((p) => p !== shared && fits(p, {}));
    if (!profile) {
      throw new CheckSkipped(
        `needs a second organisation: createOrganisation, or two --config profiles whose declared settings fit the defaults (${DEFAULTS_TEXT})`,
        ['createOrganisation'],
      );
    }
    return this.run.profileOrg(profile);
  }

  /** The key pair must get a token: otherwise the adapter handed out credentials the target does not know. */
  private async confirmKey(org: Org, mode: Mode, pair: Credentials, what: string): Promise<void> {
    const exchange = await this.api.tokenRequest(pair);
    const token = text(exchange.json, 'accessToken');
    if (exchange.status !== 200 || token === undefined) {
      throw new AdapterError(
        `${what} did not take effect: the token endpoint refuses the ${mode} key it returned (status ${exchange.status})`,
      );
    }
    if (org.keys[mode]?.clientId === pair.clientId) org.tokens.set(mode, token);
  }

  private idOf(org: Org, what: string): string {
    if (org.id === undefined) {
      throw new AdapterError(`${what} needs an organisation made by createOrganisation, not a --config profile`);
    }
    return org.id;
  }

  /**
   * Moves the organisation's clock. A move of five minutes or more is confirmed: a token
   * issued before it must then be refused (401, whatever the code; which code is the
   * checks' business).
   */
  async advanceClock(org: Org, seconds: number): Promise<void> {
    const id = this.idOf(org, 'advanceClock');
    const before = seconds >= TOKEN_LIFETIME_S ? await this.api.token(org) : undefined;
    await this.call('advanceClock', `advanceClock(${id}, ${seconds})`, () =>
      this.run.adapter.advanceClock?.(id, seconds),
    );
    org.tokens.clear();
    if (before === undefined) return;
    const probe = await this.api.send('GET', PROBE_PATH, { token: before });
    if (probe.status !== 401) {
      throw new AdapterError(
        `advanceClock(${id}, ${seconds}) did not take effect: a token issued before the move still answers ${probe.status}, not 401`,
      );
    }
  }

  /**
   * A payment attempt. After `succeeded`, a checkout session must read `completed`
   * through the public API: if it does not, either the adapter did not pay it or the
   * target did not complete it, and the suite cannot tell which.
   */
  async attempt(org: Org, target: AttemptTarget, rail: Rail, outcome: Outcome): Promise<{ redirectTo: string | null }> {
    const what = `attempt(${target.kind} ${target.id}, ${rail}, ${outcome})`;
    const done = await this.call('attempt', what, () => this.run.adapter.attempt?.(target, rail, outcome));
    const redirectTo = at(done, 'redirectTo');
    if (outcome === 'succeeded' && target.kind === 'checkout-session') {
      const read = await this.api.readSession(org, target.id);
      const status = at(read.json, 'status');
      if (read.status === 200 && status !== 'completed') {
        throw new AdapterError(
          `${what} did not take effect: the session reads ${show(status)}, not "completed" (either the adapter did not pay it or the target did not complete it)`,
        );
      }
    }
    return { redirectTo: typeof redirectTo === 'string' ? redirectTo : null };
  }

  /** A payment attempt on a checkout session. */
  pay(org: Org, sessionId: string, rail: Rail, outcome: Outcome = 'succeeded'): Promise<{ redirectTo: string | null }> {
    return this.attempt(org, { kind: 'checkout-session', id: sessionId }, rail, outcome);
  }

  /** The target's own records of finished delivery attempts. */
  async deliveries(query: { checkoutSessionId: string } | { transactionId: string }): Promise<Delivery[]> {
    const found = await this.call('webhookDeliveries', `webhookDeliveries(${JSON.stringify(query)})`, () =>
      this.run.adapter.webhookDeliveries?.(query),
    );
    if (!Array.isArray(found)) throw new AdapterError('webhookDeliveries returned no list');
    return found;
  }

  async injectFault(org: Org, kind: FaultKind, times?: number): Promise<void> {
    const id = this.idOf(org, 'injectFault');
    await this.call('injectFault', `injectFault(${kind}, ${id})`, () =>
      this.run.adapter.injectFault?.(kind, id, times),
    );
  }

  /** Replaces the organisation's signing secret; the new one must differ from the old. */
  async rotateWebhookSecret(org: Org): Promise<string> {
    const id = this.idOf(org, 'rotateWebhookSecret');
    const secret = await this.call('rotateWebhookSecret', `rotateWebhookSecret(${id})`, () =>
      this.run.adapter.rotateWebhookSecret?.(id),
    );
    if (typeof secret !== 'string' || secret === org.webhookSigningSecret) {
      throw new AdapterError(
        `rotateWebhookSecret(${id}) returned ${typeof secret === 'string' ? 'the old secret' : 'no secret'}`,
      );
    }
    this.run.redactor.remember(secret, '$WEBHOOK_SECRET');
    return secret;
  }

  /** A new API key of the organisation, confirmed: it must get a token. */
  async createApiKey(org: Org, mode: Mode): Promise<Credentials> {
    const id = this.idOf(org, 'createApiKey');
    const pair = await this.call('createApiKey', `createApiKey(${id}, ${mode})`, () =>
      this.run.adapter.createApiKey?.(id, mode),
    );
    this.run.redactor.remember(pair?.clientSecret, '$CLIENT_SECRET');
    if (typeof pair?.clientId !== 'string' || typeof pair.clientSecret !== 'string') {
      throw new AdapterError(`createApiKey(${id}, ${mode}) returned no key pair`);
    }
    await this.confirmKey(org, mode, pair, `createApiKey(${id}, ${mode})`);
    return pair;
  }

  async deleteApiKey(clientId: string): Promise<void> {
    await this.call('deleteApiKey', `deleteApiKey(${clientId})`, () => this.run.adapter.deleteApiKey?.(clientId));
  }
}

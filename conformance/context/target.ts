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
import { at, text } from '../json.ts';
import { CheckSkipped } from '../outcome.ts';
import { type Api, sessionBody } from './api.ts';
import { DEFAULT_SETTINGS, DEFAULTS_TEXT, describeSettings, fits, type Mode, type Org } from './organisations.ts';
import type { RunContext } from './run.ts';

/** Whole-second timestamps and the time between two creates: how far short of the move a reading may fall. */
const CLOCK_SLACK_S = 2;
/** Statuses a payment passes through before an attempt's outcome shows (States and transitions). */
const UNSETTLED = new Set(['created', 'pending']);

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
        clockMovedS: 0,
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
   * The organisation's time as the target shows it: the createdAt of a session made now
   * (Resources: createdAt, ISO 8601 UTC). Undefined when the organisation can take no
   * session (no rail configured) or the target answers without a readable createdAt.
   */
  private async clockReading(org: Org): Promise<number | undefined> {
    const { cardEnabled, openBankingApproved, settlementAccount, settlementCurrency } = org.settings;
    const method = cardEnabled
      ? 'card'
      : openBankingApproved && settlementAccount && settlementCurrency !== 'AUD'
        ? 'open_banking'
        : undefined;
    if (method === undefined) return undefined;
    const created = await this.api.createSession(
      org,
      sessionBody({ checkoutMethod: method, creditorReference: { reference: 'CLOCK' } }),
    );
    const id = text(created.json, 'id');
    if (created.status !== 200 || id === undefined) return undefined;
    const read = await this.api.readSession(org, id);
    const createdAt = Date.parse(String(at(read.json, 'createdAt')));
    return Number.isNaN(createdAt) ? undefined : createdAt;
  }

  /**
   * Moves the organisation's clock, confirmed by an effect no check is about: a session
   * created after the move must read a createdAt at least that much later than one
   * created before it. (Token expiry would be the rule AUTH-006 tests: a target whose
   * tokens outlive five minutes must fail that check, not blame the adapter.)
   */
  async advanceClock(org: Org, seconds: number): Promise<void> {
    const id = this.idOf(org, 'advanceClock');
    const before = await this.clockReading(org);
    await this.call('advanceClock', `advanceClock(${id}, ${seconds})`, () =>
      this.run.adapter.advanceClock?.(id, seconds),
    );
    org.tokens.clear();
    org.clockMovedS += seconds;
    if (before === undefined) return;
    const after = await this.clockReading(org);
    if (after === undefined) return;
    const moved = (after - before) / 1000;
    if (moved < seconds - CLOCK_SLACK_S) {
      throw new AdapterError(
        `advanceClock(${id}, ${seconds}) did not take effect: a session created after the move reads createdAt ${Math.round(moved)} s after one created before it`,
      );
    }
  }

  /**
   * Reads a checkout session until it leaves `created` and `pending`, or --settle-timeout
   * passes: a target may complete an attempt asynchronously, so `pending` on the way is
   * never a verdict. Returns the last status read.
   */
  async settled(org: Org, sessionId: string): Promise<unknown> {
    const deadline = Date.now() + this.run.settings.settleTimeoutMs;
    for (let pause = 50; ; pause = Math.min(pause * 2, 500)) {
      const read = await this.api.readSession(org, sessionId);
      const status = at(read.json, 'status');
      if (read.status !== 200 || typeof status !== 'string' || !UNSETTLED.has(status)) return status;
      if (Date.now() + pause > deadline) return status;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /**
   * A payment attempt. On a checkout session the suite then waits for the outcome to
   * show (see settled). A session still reading `created` after a succeeded attempt shows
   * no attempt at all: either the adapter did not reach the target or the target ignored
   * it, and the suite cannot tell which. Any other status is the checks' to judge.
   */
  async attempt(
    org: Org,
    target: AttemptTarget,
    rail: Rail,
    outcome: Outcome,
  ): Promise<{ redirectTo: string | null; status?: unknown }> {
    const what = `attempt(${target.kind} ${target.id}, ${rail}, ${outcome})`;
    const done = await this.call('attempt', what, () => this.run.adapter.attempt?.(target, rail, outcome));
    const redirectTo = typeof at(done, 'redirectTo') === 'string' ? (at(done, 'redirectTo') as string) : null;
    if (target.kind !== 'checkout-session' || outcome === 'pending') return { redirectTo };
    const status = await this.settled(org, target.id);
    if (outcome === 'succeeded' && status === 'created') {
      throw new AdapterError(
        `${what} did not take effect: the session still reads "created" after ${this.run.settings.settleTimeoutMs / 1000} s (either the adapter did not pay it or the target did not record the attempt)`,
      );
    }
    return { redirectTo, status };
  }

  /** A payment attempt on a checkout session. */
  pay(
    org: Org,
    sessionId: string,
    rail: Rail,
    outcome: Outcome = 'succeeded',
  ): Promise<{ redirectTo: string | null; status?: unknown }> {
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

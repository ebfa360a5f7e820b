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
  type Merchant,
  type OrganisationSettings,
  type Outcome,
  type PaymentLinkState,
  type Rail,
} from '../../../core/adapter.ts';
import { clause } from '../../../core/clauses.ts';
import { at, isObject, show, text } from '../../../core/json.ts';
import { evidenceOf } from '../../../core/http.ts';
import { CheckFailure, CheckSkipped } from '../../../core/outcome.ts';
import { poll } from '../../../core/poll.ts';
import { type Api, sessionBody } from './api.ts';
import { DEFAULT_SETTINGS, DEFAULTS_TEXT, describeSettings, fits, type Mode, type Org } from './organisations.ts';
import type { RunContext } from './run-context.ts';

/** Whole-second timestamps and the time between two creates: how far short of the move a reading may fall. */
const CLOCK_SLACK_S = 2;
/** The statuses the document names (States and transitions); the list is open. */
const KNOWN_STATUSES = new Set(['created', 'pending', 'completed', 'failed', 'expired']);

/** The status an attempt's outcome must leave a checkout session in (States and transitions). */
const EXPECTED: Record<Outcome, string> = { succeeded: 'completed', declined: 'failed', pending: 'pending' };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether a status read after an attempt ends the wait for its outcome: the outcome's own
 * status, or another the document names but `created`, `pending` and the status from
 * before. The status list is open: a status the document does not name may come on the way.
 */
function outcomeShows(outcome: Outcome, before: unknown): (status: unknown) => boolean {
  const expected = EXPECTED[outcome];
  return (status) =>
    status === expected || (KNOWN_STATUSES.has(status as string) && !['created', 'pending', before].includes(status));
}

/**
 * Sections of the register about the token endpoint: a check citing one judges the very
 * exchange that confirms an adapter's key pair, so for it a refused pair is a verdict.
 */
const TOKEN_SECTIONS = new Set(['Endpoints: POST /api/token', 'Resources: access token response']);

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class Target {
  constructor(
    private readonly run: RunContext,
    private readonly api: Api,
    /** The capabilities the check declared: the only ones it may call. */
    private readonly declared: readonly Capability[],
    /** The clauses the check enforces: no confirmation of an adapter call may rest on them. */
    private readonly clauses: readonly string[] = [],
  ) {}

  /** Does the check judge the token endpoint (so a refused key pair is its verdict, not the adapter's)? */
  private get judgesTokenEndpoint(): boolean {
    return this.clauses.some((id) => TOKEN_SECTIONS.has(clause(id).section) || id.startsWith('auth.'));
  }

  /** An organisation whose key pair the token endpoint refused is the adapter's fault, unless that is what the check judges. */
  private confirmed(org: Org): Org {
    if (org.refused !== undefined && !this.judgesTokenEndpoint) throw new AdapterError(org.refused);
    return org;
  }

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
   * settings. A made organisation is confirmed through the public API (see confirmKey).
   */
  async organisation(settings: Partial<OrganisationSettings> = {}): Promise<Org> {
    return this.confirmed(await this.makeOrganisation(settings));
  }

  private async makeOrganisation(settings: Partial<OrganisationSettings>): Promise<Org> {
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
      const { token, refused } = await this.confirmKey(org.keys.test, 'test', 'createOrganisation');
      if (token !== undefined) org.tokens.set('test', token);
      if (refused !== undefined) org.refused = refused;
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
  async sharedOrganisation(): Promise<Org> {
    // Made once; whether its refused key is a verdict or the adapter's fault, each check decides.
    this.run.shared ??= this.makeOrganisation({});
    return this.confirmed(await this.run.shared);
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

  /**
   * Confirms a key pair the adapter returned: the token endpoint must not answer it 401
   * ("the pair matches no key"), or the adapter handed out credentials the target does
   * not know. Any other failure of the token endpoint is the target's, for the checks to
   * judge. Gives the token issued, for reuse, or why the pair counts as refused.
   */
  private async confirmKey(
    pair: Credentials,
    mode: Mode,
    what: string,
  ): Promise<{ token?: string | undefined; refused?: string }> {
    const exchange = await this.api.tokenRequest(pair);
    if (exchange.status === 401) {
      return {
        refused: `${what} did not take effect: the token endpoint answers the ${mode} key it returned 401 (a pair that matches no key)`,
      };
    }
    return { token: exchange.status === 200 ? text(exchange.json, 'accessToken') : undefined };
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
   *
   * Given `since` (a Date.now() reading), it moves the clock so that `seconds` will have
   * passed on it since then: the real time already gone is taken off just before the move.
   * Gives the seconds moved.
   */
  async advanceClock(org: Org, seconds: number, since?: number): Promise<number> {
    const id = this.idOf(org, 'advanceClock');
    const before = await this.clockReading(org);
    const step = since === undefined ? seconds : Math.max(0, seconds - Math.floor((Date.now() - since) / 1000));
    const done = await this.call('advanceClock', `advanceClock(${id}, ${step})`, () =>
      this.run.adapter.advanceClock?.(id, step),
    );
    org.tokens.clear();
    org.clockMovedS += step;
    // The target's harness said the clock moved: what follows (expiry, retries) is the checks' to judge.
    if (before === undefined || typeof at(done, 'now') === 'string') return step;
    const after = await this.clockReading(org);
    if (after === undefined) return step;
    const moved = (after - before) / 1000;
    if (moved < step - CLOCK_SLACK_S) {
      throw new AdapterError(
        `advanceClock(${id}, ${step}) did not take effect: a session created after the move reads createdAt ${Math.round(moved)} s after one created before it`,
      );
    }
    return step;
  }

  /**
   * Reads a checkout session until the attempt's outcome shows (completed, failed or
   * pending), or --settle-timeout passes: a target may record an attempt asynchronously,
   * so `created`, `pending`, the status from before the attempt, or a status the document
   * does not name (the list is open) are never a verdict on the way. Any other status ends
   * the wait at once, for the checks to judge. Gives the last status read.
   */
  async settled(org: Org, sessionId: string, outcome: Outcome, before?: unknown): Promise<unknown> {
    const ends = outcomeShows(outcome, before);
    const read = await poll(
      () => this.api.readSession(org, sessionId),
      (r) => r.status !== 200 || ends(at(r.json, 'status')),
      this.run.settings.settleTimeoutMs,
    );
    return at(read.json, 'status');
  }

  /**
   * Whether the target shows it took a succeeded attempt on the session (or link), by
   * something other than the status: the payer sent on with its checkoutSessionId (the
   * Redirect rule; a link's transactionId), or a delivery the target recorded for it.
   */
  private async attemptShown(target: AttemptTarget, redirectTo: string | null): Promise<boolean> {
    const session = target.kind === 'checkout-session';
    const param = session ? 'checkoutSessionId' : 'transactionId';
    if (redirectTo !== null && URL.canParse(redirectTo)) {
      if (new URL(redirectTo).searchParams.get(param) === target.id) return true;
    }
    if (!this.has('webhookDeliveries') || !this.declared.includes('webhookDeliveries')) return false;
    const query = session ? { checkoutSessionId: target.id } : { transactionId: target.id };
    return (await this.deliveries(query)).length > 0;
  }

  /**
   * A payment attempt. On a checkout session, and on a payment link the adapter reads, the
   * suite then waits for the outcome to show (see settled). When a succeeded attempt leaves
   * the status as it was, the suite asks
   * whether the target took the attempt at all (attemptShown): if it did, the status is
   * the checks' to judge; if nothing shows it, the adapter may not have reached the
   * target, and the suite cannot tell, so no verdict is drawn.
   */
  async attempt(
    org: Org,
    target: AttemptTarget,
    rail: Rail,
    outcome: Outcome,
  ): Promise<{ redirectTo: string | null; status?: unknown }> {
    const what = `attempt(${target.kind} ${target.id}, ${rail}, ${outcome})`;
    const session = target.kind === 'checkout-session';
    // A link is followed when the adapter reads links in the target's shape (the modelled
    // read is not the document's) and its read gives a status; else the attempt is taken
    // at its word, as the checks judge what follows it through the public API.
    const link = target.kind === 'payment-link' && this.readsLinks;
    const before = session
      ? at((await this.api.readSession(org, target.id)).json, 'status')
      : link
        ? await this.linkStatus(org, target.id)
        : undefined;
    const done = await this.call('attempt', what, () => this.run.adapter.attempt?.(target, rail, outcome));
    const redirectTo = typeof at(done, 'redirectTo') === 'string' ? (at(done, 'redirectTo') as string) : null;
    if (!session && before === undefined) return { redirectTo };
    const status = session
      ? await this.settled(org, target.id, outcome, before)
      : await this.settledLink(org, target.id, outcome, before);
    const unmoved = status === 'created' || status === before;
    if (outcome === 'succeeded' && unmoved && !(await this.attemptShown(target, redirectTo))) {
      const reads = session ? 'the session still reads' : 'readPaymentLink still says';
      const waited = `${this.run.settings.settleTimeoutMs / 1000} s`;
      // The target's own harness said the payment completed: its reads contradict it, a verdict.
      const said = at(done, session ? 'session' : 'paymentLink', 'status');
      if (said === 'completed') {
        const read = session ? await this.api.readSession(org, target.id) : undefined;
        const evidence = read ? evidenceOf(read, this.run.redactor) : undefined;
        throw new CheckFailure(
          `The target's harness answered ${what} with the payment completed, yet ${waited} later ${reads} ${JSON.stringify(status)}${before === 'failed' ? ': a declined attempt is not final, and the status reports the last attempt' : ''}. A read returns where the payment stands now.`,
          evidence
            ? {
                evidence: {
                  ...evidence,
                  request: `the harness's answer to ${what}: ${show(session ? at(done, 'session') : at(done, 'paymentLink'))}\n\nthen the read:\n${evidence.request}`,
                },
              }
            : undefined,
          ['svc.read', 'res.read.status', 'state.completed', ...(before === 'failed' ? ['state.declined'] : [])],
        );
      }
      throw new AdapterError(
        `${what} did not take effect: ${reads} ${JSON.stringify(status)} after ${waited}, and neither a redirect, a delivery record nor the adapter's answer shows the target took the attempt (either the adapter did not pay it or the target did not record it; an adapter that returns the harness's answer, { session } or { paymentLink }, lets the suite tell them apart)`,
      );
    }
    return { redirectTo, status };
  }

  /** Does the check reach payment links through the adapter (paymentLinks, offered and declared)? */
  private get readsLinks(): boolean {
    return this.has('paymentLinks') && this.declared.includes('paymentLinks');
  }

  /** The merchant of the organisation's key of that mode, with a token for it. */
  private async merchant(org: Org, mode: Mode = 'test'): Promise<Merchant> {
    const accessToken = await this.api.token(org, mode);
    return { orgId: org.id, mode, credentials: org.keys[mode]!, accessToken };
  }

  /**
   * A payment link of the organisation (test mode), sending its event to `webhookUrl` when
   * given: in the target's own shape when the adapter offers paymentLinks, else through the
   * request we modelled (`reference` labels that one), which a target may refuse: the
   * check is then skipped, naming paymentLinks. Gives the link's id.
   */
  async paymentLink(org: Org, link: { webhookUrl?: string; reference?: string } = {}): Promise<string> {
    const { webhookUrl, reference } = link;
    if (!this.readsLinks) {
      return this.api.paymentLink(org, {
        ...(webhookUrl === undefined ? {} : { webhookUrl }),
        ...(reference === undefined ? {} : { creditorReference: { reference } }),
      });
    }
    const merchant = await this.merchant(org);
    const request = webhookUrl === undefined ? {} : { webhookUrl };
    const made = await this.call('paymentLinks', `createPaymentLink(${JSON.stringify(request)})`, () =>
      this.run.adapter.createPaymentLink?.(merchant, request),
    );
    const id = at(made, 'id');
    if (typeof id !== 'string' || id === '')
      throw new AdapterError(`createPaymentLink returned ${show(made)}; expected { id } (the link's transaction id)`);
    return id;
  }

  /**
   * A link's status as the adapter reads it (paymentLinks), or undefined when its read has
   * none, or fails: the read may be the public GET /api/payment-links/{id}, whose failures
   * are the checks' to judge (READ-008), so a failing read only stops the suite following
   * the link. A read the suite cannot take (not { status?, testMode? }) is the adapter's
   * fault, and so is a testMode against the key the link was made with: no check judges a
   * link's testMode, so that confirms the adapter and blames no one else.
   */
  private async linkStatus(org: Org, id: string, mode: Mode = 'test'): Promise<string | undefined> {
    const merchant = await this.merchant(org, mode);
    const what = `readPaymentLink(${id})`;
    let read: PaymentLinkState;
    try {
      read = await this.call('paymentLinks', what, () => this.run.adapter.readPaymentLink?.(merchant, id));
    } catch (error) {
      if (error instanceof AdapterError) return undefined;
      throw error;
    }
    const status = at(read, 'status');
    const testMode = at(read, 'testMode');
    if (
      !isObject(read) ||
      (status !== undefined && typeof status !== 'string') ||
      (testMode !== undefined && typeof testMode !== 'boolean')
    )
      throw new AdapterError(`${what} returned ${show(read)}; expected { status?: string, testMode?: boolean }`);
    if (testMode !== undefined && testMode !== (mode === 'test'))
      throw new AdapterError(`${what} says testMode ${testMode} for a link made with a ${mode}-mode key`);
    return status;
  }

  /** As settled, for a payment link read through the adapter; its last status, or undefined once a read fails. */
  private async settledLink(org: Org, id: string, outcome: Outcome, before: unknown): Promise<unknown> {
    const ends = outcomeShows(outcome, before);
    return poll(
      () => this.linkStatus(org, id),
      (status) => status === undefined || ends(status),
      this.run.settings.settleTimeoutMs,
    );
  }

  /**
   * A legacy transaction of the organisation (test mode) whose body goes to `webhookUrl`:
   * made by the adapter when it offers legacyTransactions, else undefined (the check sends
   * the modelled request itself). Gives its transaction id, a UUID (What the service does).
   */
  async legacyTransaction(org: Org, webhookUrl: string, foreignTransactionId: string): Promise<string | undefined> {
    if (!this.has('legacyTransactions') || !this.declared.includes('legacyTransactions')) return undefined;
    const merchant = await this.merchant(org);
    const request = { webhookUrl, foreignTransactionId };
    const made = await this.call('legacyTransactions', `createLegacyTransaction(${JSON.stringify(request)})`, () =>
      this.run.adapter.createLegacyTransaction?.(merchant, request),
    );
    const id = at(made, 'transactionId');
    if (typeof id !== 'string' || !UUID.test(id))
      throw new AdapterError(
        `createLegacyTransaction returned ${show(made)}; expected { transactionId } (the transaction's UUID)`,
      );
    return id;
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

  /**
   * The target's records once `enough` holds of them, or as they are when --settle-timeout
   * passes: a target may write down an attempt a little after making it.
   */
  async deliveriesOnce(
    query: { checkoutSessionId: string } | { transactionId: string },
    enough: (found: Delivery[]) => boolean,
  ): Promise<Delivery[]> {
    return poll(() => this.deliveries(query), enough, this.run.settings.settleTimeoutMs);
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
    const { refused } = await this.confirmKey(pair, mode, `createApiKey(${id}, ${mode})`);
    if (refused !== undefined && !this.judgesTokenEndpoint) throw new AdapterError(refused);
    return pair;
  }

  async deleteApiKey(clientId: string): Promise<void> {
    await this.call('deleteApiKey', `deleteApiKey(${clientId})`, () => this.run.adapter.deleteApiKey?.(clientId));
  }
}

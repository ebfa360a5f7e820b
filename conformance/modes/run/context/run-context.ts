/**
 * What every check of one run shares: the target's address, the adapter that reaches its
 * controls, the --config profiles, the suite's webhook receiver, the run's secrets, and
 * every exchange seen (for the response conformance checks). Nothing of a run lives at
 * module level, so runs in one process stay apart.
 */
import type { Capability, TargetAdapter } from '../../../core/adapter.ts';
import type { Exchange } from '../../../core/exchange.ts';
import type { CaptureReceiver } from '../capture-receiver.ts';
import { Redactor } from '../../../core/redact.ts';
import { type Org, type Profile, profileOrg } from './organisations.ts';

/**
 * What the exploration checks may spend: seconds of searching (--explore; 0 turns them
 * off), or a number of cases per lane (--explore-cases), which draws the same cases from
 * a seed on any machine, however fast, and bounds their shrinking by runs, not seconds.
 */
export type ExploreBudget = { ms: number } | { cases: number };

/** Whether a budget lets the exploration run at all. */
export const exploring = (budget: ExploreBudget): boolean => 'cases' in budget || budget.ms > 0;

/** What the delivery preflight found: whether webhook checks can run at all, judged once a run. */
export type Preflight = { ok: true } | { ok: false; status: 'skipped' | 'error'; reason: string };

export interface RunSettings {
  baseUrl: string;
  adapter: TargetAdapter;
  /** How reports name the adapter: sandbox, config, manual, or the module given. */
  adapterName: string;
  profiles: Profile[];
  receiver: CaptureReceiver;
  /**
   * How long to wait for a delivery attempt after each clock step, and to be sure nothing
   * (more) arrives: waits end as soon as an attempt arrives. The document states no
   * delivery timing, so this is generous (default 3 s; --config `deliveryWaitMs`).
   */
  deliveryWaitMs: number;
  /**
   * How long a payment is awaited to settle after an attempt (reads polled until it leaves
   * `created` and `pending`) and a delivery to arrive (--settle-timeout, default 30 s): a
   * target may complete payments and send webhooks asynchronously.
   */
  settleTimeoutMs: number;
  /** The sandbox API's bearer token, when the sandbox adapter is used (shown as $SANDBOX_TOKEN). */
  sandboxToken?: string;
  /** --explore or --explore-cases, and --seed: what the exploration checks may spend, and from which seed. */
  explore: { budget: ExploreBudget; seed: number };
  /** --strict-assumptions: the exploration holds the target to our rules where the document is silent. */
  strictAssumptions: boolean;
  /** --concurrency: checks at once, and the exploration's lanes. */
  concurrency: number;
}

/** A payment the run created: whose it is and where its hosted page is (for read-backs and manual attempts). */
export interface KnownPayment {
  org: Org;
  url: string | undefined;
}

export class RunContext {
  readonly exchanges: Exchange[] = [];
  readonly redactor: Redactor;
  readonly capabilities: ReadonlySet<Capability>;
  readonly payments = new Map<string, KnownPayment>();
  /** The input classes (input-space.ts) the checks exercised: sent, and answered. */
  readonly inputs = new Set<string>();
  /** Whether deliveries reach the suite's receiver, once the delivery preflight ran. */
  preflight: Preflight | undefined;
  /** The organisation of checks that change nothing about theirs; made once. */
  shared: Promise<Org> | undefined;
  private readonly profileOrgs = new Map<Profile, Org>();
  private hookCounter = 0;

  constructor(readonly settings: RunSettings) {
    this.redactor = new Redactor(settings.sandboxToken);
    this.capabilities = new Set(settings.adapter.capabilities);
  }

  get adapter(): TargetAdapter {
    return this.settings.adapter;
  }

  get receiver(): CaptureReceiver {
    return this.settings.receiver;
  }

  has(capability: Capability): boolean {
    return this.capabilities.has(capability);
  }

  /** The organisation of a profile: one per profile for the whole run, so its tokens are shared. */
  profileOrg(profile: Profile): Org {
    let org = this.profileOrgs.get(profile);
    if (!org) {
      org = profileOrg(profile);
      this.profileOrgs.set(profile, org);
      this.redactor.remember(profile.clientSecret, '$CLIENT_SECRET');
      this.redactor.remember(profile.liveClientSecret, '$CLIENT_SECRET');
      this.redactor.remember(profile.webhookSigningSecret, '$WEBHOOK_SECRET');
    }
    return org;
  }

  nextHookPath(checkId: string, label: string): string {
    this.hookCounter += 1;
    return `/hooks/${checkId}/${label}-${this.hookCounter}`;
  }
}

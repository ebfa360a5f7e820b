/**
 * The real side of one explored sequence: two organisations of its own on the target,
 * the tokens, keys, payments and secrets the sequence made, and every step written down
 * (the exchanges it sent, the adapter calls it made) so that a failing sequence can be
 * shown as numbered curl lines.
 */
import type { Capability, Credentials, OrganisationSettings } from '../../../core/adapter.ts';
import { Api } from '../context/api.ts';
import { DEFAULT_SETTINGS, type Org } from '../context/organisations.ts';
import type { RunContext } from '../context/run-context.ts';
import { Target } from '../context/target.ts';
import type { Exchange } from '../../../core/exchange.ts';
import { curlOf } from '../../../core/http.ts';
import type { JsonObject } from '../../../core/json.ts';
import type { Received } from '../../../core/exchange.ts';
import { BODIES, type BodySpec, redirectUrlOf } from './inputs.ts';

export const ORG_NAMES = ['A', 'B'] as const;

/** An organisation of a sequence by its name in the report (A or B). */
export const orgName = (org: number): string => ORG_NAMES[org]!;

export interface Step {
  label: string;
  /** Where its exchanges start in the sequence's list. */
  from: number;
  /** What the step did outside the public API (adapter calls), as shell comments. */
  notes: string[];
  exchanges: Exchange[];
}

export interface RealPayment {
  id: string;
  /** The create answer, for replays to be compared with. */
  created: JsonObject;
  /** Where its deliveries arrive (a receiver path), when it was given a webhookUrl. */
  hookPath: string | undefined;
}

export class World {
  readonly exchanges: Exchange[] = [];
  readonly steps: Step[] = [];
  readonly api: Api;
  readonly target: Target;
  readonly orgs: Org[] = [];
  /** Real bearer tokens, by the model's token index. */
  readonly tokens: string[] = [];
  /** Key pairs per organisation, by the model's key index. */
  readonly keys: Credentials[][] = [];
  readonly payments: RealPayment[] = [];
  /** Each organisation's signing secrets, and since when each signs (ms). */
  readonly secrets: Array<Array<{ secret: string; since: number }>> = [];
  /** Deliveries judged already (each is judged once). */
  readonly judged = new Set<Received>();

  constructor(
    readonly run: RunContext,
    signal: AbortSignal,
    /** Unique within the run: names the sequence's receiver paths. */
    readonly name: string,
    declared: readonly Capability[],
    clauses: readonly string[],
  ) {
    // A throttled step leaves its sequence unjudged (judge.ts, Throttled): no use waiting it out.
    this.api = new Api(run, 'EXPL-001', signal, this.exchanges, 1);
    this.target = new Target(run, this.api, declared, clauses);
  }

  /**
   * Takes the two organisations (A with the default settings, B with `settingsB`) and gets
   * a token of each key: the test one first for both, then the live ones. Says which
   * organisations have a live key.
   *
   * Organisations come from the lane's pool, made the first time: no two sequences use one
   * at once, and one left by an earlier sequence is as good as new to the model, which
   * counts time from the start of the sequence and knows only what it made (sessions and
   * Idempotency-Keys are named after the sequence). Making organisations is the slowest
   * thing a target does (hashing their secrets); reusing them leaves the time to the steps.
   */
  async setup(settingsB: OrganisationSettings, pool: Map<string, Org>): Promise<[boolean, boolean]> {
    this.begin(`organisations A (${describe(DEFAULT_SETTINGS)}) and B (${describe(settingsB)}), a token of each key`);
    for (const [name, settings] of [
      ['A', DEFAULT_SETTINGS],
      [`B ${JSON.stringify(settingsB)}`, settingsB],
    ] as const) {
      let org = pool.get(name);
      if (!org) {
        org = await this.target.organisation(settings);
        pool.set(name, org);
      }
      org.tokens.clear();
      this.orgs.push(org);
      this.tokens.push(await this.api.token(org));
      this.keys.push([org.keys.test, ...(org.keys.live ? [org.keys.live] : [])]);
      this.secrets.push(org.webhookSigningSecret ? [{ secret: org.webhookSigningSecret, since: 0 }] : []);
    }
    for (const org of this.orgs) if (org.keys.live) this.tokens.push(await this.api.token(org, 'live'));
    this.note('the suite keeps each organisation’s test key pair, live key pair and signing secret');
    return [this.orgs[0]!.keys.live !== undefined, this.orgs[1]!.keys.live !== undefined];
  }

  /** Starts writing down a step. */
  begin(label: string): void {
    this.steps.push({ label, from: this.exchanges.length, notes: [], exchanges: [] });
  }

  note(text: string): void {
    this.steps.at(-1)?.notes.push(text);
  }

  /** Ends the step: the exchanges sent since it began are its own. */
  end(): void {
    const step = this.steps.at(-1);
    if (step) step.exchanges = this.exchanges.slice(step.from);
  }

  /** The receiver path of a body of the pool: one per body and sequence, so that identical bodies stay identical. */
  hookPath(bodyIndex: number): string {
    return `/hooks/EXPL-001/${this.name}/body-${bodyIndex + 1}`;
  }

  hookUrl(path: string): string {
    return `${this.run.receiver.publicUrl}${path}`;
  }

  /** A create body of the pool as JSON. */
  body(bodyIndex: number): JsonObject {
    const spec: BodySpec = BODIES[bodyIndex]!;
    return {
      type: 'single',
      amount: { total: spec.total, ...(spec.currency ? { currency: spec.currency } : {}) },
      creditorReference: {
        reference: spec.reference,
        ...(spec.particulars ? { particulars: spec.particulars } : {}),
        ...(spec.code ? { code: spec.code } : {}),
      },
      redirectUrl: redirectUrlOf(bodyIndex),
      checkoutMethod: spec.checkoutMethod,
      ...(spec.hook ? { webhookUrl: this.hookUrl(this.hookPath(bodyIndex)) } : {}),
      ...(spec.foreignTransactionId ? { foreignTransactionId: spec.foreignTransactionId } : {}),
    };
  }

  /** The payment a 200 answer named, by id: its index, or undefined when the sequence has not seen it. */
  paymentOf(id: unknown): number | undefined {
    const index = this.payments.findIndex((p) => p.id === id);
    return index < 0 ? undefined : index;
  }

  /** Every delivery to the sequence's receiver paths, other event kinds included. */
  deliveries(): Received[] {
    const prefix = `/hooks/EXPL-001/${this.name}/`;
    return this.run.receiver.everything().filter((d) => d.path.startsWith(prefix));
  }

  /** The steps as numbered lines: shell comments for what happened outside the API, curl lines for requests. */
  transcript(): string {
    const lines: string[] = [];
    this.steps.forEach((step, i) => {
      lines.push(`${i}. # ${step.label}`);
      for (const note of step.notes) lines.push(`   # ${note}`);
      for (const e of step.exchanges) lines.push(`   ${curlOf(e.request, this.run.redactor)}   # -> ${e.status}`);
    });
    return lines.join('\n');
  }
}

function describe(settings: OrganisationSettings): string {
  const changed = (Object.keys(DEFAULT_SETTINGS) as Array<keyof OrganisationSettings>).filter(
    (k) => settings[k] !== DEFAULT_SETTINGS[k],
  );
  return changed.length === 0 ? 'default settings' : changed.map((k) => `${k} ${String(settings[k])}`).join(', ');
}

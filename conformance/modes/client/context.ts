/**
 * What a client check works with: scenarios. A scenario is an organisation of its own on
 * the target, a scripted service in front of the target, and the driver started against
 * that service with the organisation's credentials (a fresh client: no token or key
 * carried over from another scenario). A check asks the driver for operations, then
 * judges what the service recorded and what the driver answered.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { AdapterError, type CreatedOrganisation, type TargetAdapter } from '../../core/adapter.ts';
import { curlOf } from '../../core/http.ts';
import { CheckFailure, CheckSkipped, type Evidence, NoVerdict } from '../../core/outcome.ts';
import type { Redactor } from '../../core/redact.ts';
import { type DriverSession, type DriverSpec, startDriver } from './drivers/launch.ts';
import type { Answer, Ask } from './protocol.ts';
import { isToken, REQUESTS_RECORDED, type Script, type ScriptedService, startScriptedService } from './service.ts';
import type { Recorded } from '../../core/exchange.ts';

export interface ClientRunSettings {
  /** The real target behind the scripted service. */
  baseUrl: string;
  adapter: TargetAdapter;
  adapterName: string;
  driver: DriverSpec;
  redactor: Redactor;
  /** PAYMENT_REQUEST_TIMEOUT_MS: the per-attempt timeout the suite asks drivers to use. */
  requestTimeoutMs: number;
  /** --seed: what the scenarios draw (the plain traffic's amounts) comes from it, so a run can be repeated. */
  seed: number;
  /** --driver-env: variables of the suite's environment the driver gets besides the protocol's and the allowed ones. */
  passEnv: readonly string[];
  /** How long one operation of the driver may take. */
  operationTimeoutMs: number;
}

/** One operation asked in a scenario and what came of it. */
export interface Step {
  ask: Ask;
  answer: Answer;
  /** Date.now() when it was asked and when its outcome came. */
  asked: number;
  answered: number;
  /** The requests the client sent for it: the service's requests from `from` up to `to`. */
  from: number;
  to: number;
}

/** The requests a scenario's evidence lists: the first ones and the last twenty. */
const EVIDENCE_REQUESTS = 200;

/** The largest request body a scenario's evidence shows; a create's is a few hundred bytes. */
const EVIDENCE_BODY = 16 * 1024;

/** Headers of the connection, not of the request: curl sets its own. */
const ONE_HOP = new Set(['host', 'connection', 'content-length', 'keep-alive', 'transfer-encoding']);

export class Scenario {
  readonly steps: Step[] = [];

  constructor(
    readonly org: CreatedOrganisation,
    readonly service: ScriptedService,
    private readonly driver: DriverSession,
    private readonly redactor: Redactor,
    /** What the evidence calls it: the check that scripted it, or the shared scenario's name; and the run's seed. */
    readonly label: { name: string; seed: number },
  ) {}

  get requests(): readonly Recorded[] {
    return this.service.requests;
  }

  /** Ends the driver, then the service. */
  async close(): Promise<void> {
    await this.driver.close().catch(() => undefined);
    await this.service.close();
  }

  /** Asks the driver; an operation it does not offer skips the check, naming it. */
  async ask(ask: Ask): Promise<Answer> {
    const asked = Date.now();
    const from = this.requests.length;
    const answer = await this.driver.ask(ask);
    this.steps.push({ ask, answer, asked, answered: Date.now(), from, to: this.requests.length });
    if ('unsupported' in answer) throw new CheckSkipped(`the driver does not offer ${ask.op}`, [ask.op]);
    for (const r of this.requests) this.remember(r);
    return answer;
  }

  /** Asks, and fails the check unless the client did it. */
  async must(ask: Ask, what: string): Promise<unknown> {
    const answer = await this.ask(ask);
    if ('ok' in answer && answer.ok) return answer.value;
    this.fail(`${what}: ${this.describe(answer)}.`);
  }

  /** The secrets of the traffic, so that no report shows them. */
  private remember(r: Recorded): void {
    this.redactor.rememberFromRequest(
      r.headers,
      isToken(r) ? Object.fromEntries(new URLSearchParams(r.body)) : undefined,
    );
    if (isToken(r) && r.got) {
      try {
        this.redactor.rememberFromJson(JSON.parse(r.got.body));
      } catch {
        // Not JSON: nothing to remember.
      }
    }
  }

  /** An outcome as a report shows it: secrets replaced before anything is cut. */
  describe(answer: Answer): string {
    return describeAnswer(answer, this.redactor);
  }

  /** Fails the check with the scenario's traffic and operations as evidence. */
  fail(message: string): never {
    throw new CheckFailure(message, { evidence: this.evidence() });
  }

  /** Every request as a curl line with what the client got, then the operations and their outcomes. */
  evidence(): Evidence {
    const all = this.requests;
    // The first requests and the last ones: a client that hammers the service sends thousands.
    const shown = all.length <= EVIDENCE_REQUESTS ? all : [...all.slice(0, EVIDENCE_REQUESTS - 20), ...all.slice(-20)];
    const lines = shown.map((r) => {
      const headers = Object.fromEntries(Object.entries(r.headers).filter(([name]) => !ONE_HOP.has(name)));
      // A body past the excerpt's bound is named by its size: the evidence of every check
      // that judges the scenario repeats it.
      const size = r.bodyBytes ?? Buffer.byteLength(r.body);
      const shown = size <= EVIDENCE_BODY ? r.body || undefined : undefined;
      const line = curlOf(
        { method: r.method, url: `${this.service.url}${r.url}`, headers, body: shown },
        this.redactor,
      );
      const omitted = size > EVIDENCE_BODY ? ` (a body of ${size} bytes, not shown)` : '';
      return `${r.seq}. (+${r.at - (this.steps[0]?.asked ?? r.at)} ms) ${line}${omitted}\n   # ${describeGot(r)}`;
    });
    if (shown.length < all.length)
      lines.splice(EVIDENCE_REQUESTS - 20, 0, `… ${all.length - shown.length} more requests, not shown`);
    const dropped = this.service.dropped();
    if (dropped > 0) lines.push(`… and ${dropped} more, past the ${REQUESTS_RECORDED} a scenario keeps`);
    const curl = lines.join('\n');
    const request = this.steps
      .map(
        (s, i) => `${i + 1}. ${this.redactor.clip(JSON.stringify(s.ask))} → ${describeAnswer(s.answer, this.redactor)}`,
      )
      .join('\n');
    const strays = this.service.strays();
    const elsewhere =
      strays > 0
        ? ` (and ${strays} that reached the service's port outside PAYMENT_BASE_URL, not judged: a client keeps the path of its base URL)`
        : '';
    const { name, seed } = this.label;
    return {
      request: `scenario: ${name}, seed ${seed}: repro (or client --only with --seed ${seed}) plays it again on a fresh scripted service\noperations asked of the driver:\n${request}`,
      response: `the requests the client sent, in order${elsewhere}`,
      curl,
    };
  }
}

/** What the client got for a request, as evidence shows it. */
export function describeGot(r: Recorded): string {
  const by = r.plan === 'forward' ? 'the target' : r.plan === 'rewrite' ? 'the target, edited' : 'the suite';
  if (!r.got)
    return r.plan === 'commitThenHold'
      ? 'no answer: it went away while the answer was withheld'
      : `no answer: the connection was reset (${by})`;
  const code = (() => {
    try {
      const e = JSON.parse(r.got.body)?.error;
      return typeof e === 'string' ? ` "${e}"` : typeof e?.code === 'string' ? ` ${e.code}` : '';
    } catch {
      return '';
    }
  })();
  return `${r.got.status}${code} from ${by}${r.target && r.plan !== 'forward' && r.plan !== 'rewrite' ? ` (the target had answered ${r.target.status})` : ''}`;
}

/** An outcome for a report, each part the driver wrote redacted, then cut. */
export function describeAnswer(answer: Answer, redactor: Redactor): string {
  if ('unsupported' in answer) return 'unsupported';
  if ('broken' in answer) return `no outcome: ${redactor.clip(answer.broken, 1000)}`;
  if (answer.ok) return `ok ${redactor.clip(JSON.stringify(answer.value) ?? 'undefined')}`;
  const e = answer.error;
  return `error code ${redactor.clip(JSON.stringify(e.code), 100)}, status ${e.status}, retryable ${e.retryable}${e.message ? ` (${redactor.clip(String(e.message), 200)})` : ''}`;
}

/**
 * The check whose scenario is starting, for the traffic reports: checks call `scenario`
 * without naming themselves, so the command runs each inside this scope. A scenario several
 * checks judge is named after the first of them, which starts it.
 */
export const currentCheck = new AsyncLocalStorage<string>();

/** The run the client checks share: the target, the driver, and the scenarios made so far. */
export class ClientRun {
  private readonly shared = new Map<string, Promise<Scenario>>();
  /** Every scenario started, with the check it started for. */
  readonly started: Array<{ checkId: string; scenario: Scenario }> = [];

  constructor(readonly settings: ClientRunSettings) {}

  get redactor(): Redactor {
    return this.settings.redactor;
  }

  /** An organisation of the scenario's own, with every rail (the checks script what they need refused). */
  private async organisation(): Promise<CreatedOrganisation> {
    const { adapter } = this.settings;
    try {
      const org = await adapter.createOrganisation!({
        settlementCurrency: 'NZD',
        cardEnabled: true,
        openBankingApproved: true,
        settlementAccount: true,
      });
      this.redactor.remember(org.apiKeys.test.clientSecret, '$CLIENT_SECRET');
      this.redactor.remember(org.webhookSigningSecret, '$WEBHOOK_SECRET');
      return org;
    } catch (error) {
      throw new AdapterError(`createOrganisation failed: ${(error as Error).message}`);
    }
  }

  /** Runs `body` in a scenario of its own, ending the driver and the service after it. */
  async scenario<T>(script: Script, body: (s: Scenario) => Promise<T>): Promise<T> {
    const s = await this.start(script);
    try {
      const done = await body(s);
      expectKept(s);
      return done;
    } catch (error) {
      expectKept(s);
      throw error;
    } finally {
      await this.end(s);
    }
  }

  /**
   * A scenario several checks judge (they read the same traffic): run once, on first
   * use, and kept until the run ends.
   */
  sharedScenario(name: string, script: Script, body: (s: Scenario) => Promise<void>): Promise<Scenario> {
    let made = this.shared.get(name);
    if (!made) {
      made = (async () => {
        const s = await this.start(script, name);
        try {
          await body(s);
        } finally {
          await this.end(s);
        }
        return s;
      })();
      this.shared.set(name, made);
    }
    return made;
  }

  private async start(script: Script, shared?: string): Promise<Scenario> {
    const org = await this.organisation();
    const service = await startScriptedService(this.settings.baseUrl, script);
    try {
      const driver = await startDriver(
        this.settings.driver,
        {
          PAYMENT_BASE_URL: service.url,
          PAYMENT_CLIENT_ID: org.apiKeys.test.clientId,
          PAYMENT_CLIENT_SECRET: org.apiKeys.test.clientSecret,
          PAYMENT_WEBHOOK_SECRET: org.webhookSigningSecret,
          PAYMENT_REQUEST_TIMEOUT_MS: String(this.settings.requestTimeoutMs),
        },
        {
          passEnv: this.settings.passEnv,
          redactor: this.redactor,
          operationTimeoutMs: this.settings.operationTimeoutMs,
        },
      );
      const checkId = currentCheck.getStore() ?? 'unknown';
      const name = shared ? `${shared} (shared by the checks that judge it)` : `the one ${checkId} scripts`;
      const scenario = new Scenario(org, service, driver, this.redactor, { name, seed: this.settings.seed });
      this.started.push({ checkId, scenario });
      return scenario;
    } catch (error) {
      await service.close();
      throw error;
    }
  }

  private async end(s: Scenario): Promise<void> {
    await s.close();
  }

  /** A checkout session made by the suite itself for the scenario's organisation, straight on the target. */
  async sessionOf(s: Scenario, patch: Record<string, unknown> = {}): Promise<{ id: string }> {
    const base = this.settings.baseUrl;
    // The suite's own requests: what goes wrong with them is no verdict on the client.
    try {
      const token = await this.suiteToken(s);
      const created = await fetch(`${base}/api/checkout-sessions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token.accessToken}`,
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
        },
        body: JSON.stringify({ ...sessionBody(), ...patch }),
      });
      const json = (await created.json()) as { id?: string };
      if (created.status !== 200 || typeof json.id !== 'string')
        throw new Error(`the target refused it (status ${created.status})`);
      return { id: json.id };
    } catch (error) {
      throw new AdapterError(`the suite's own checkout session for the scenario: ${(error as Error).message}`);
    }
  }

  /** A token of the scenario's organisation for the suite's own requests, straight from the target. */
  private async suiteToken(s: Scenario): Promise<{ accessToken?: string }> {
    const token = (await fetch(`${this.settings.baseUrl}/api/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        clientId: s.org.apiKeys.test.clientId,
        clientSecret: s.org.apiKeys.test.clientSecret,
      }),
    }).then((r) => r.json())) as { accessToken?: string };
    this.redactor.remember(token.accessToken, '$ACCESS_TOKEN');
    return token;
  }

  /** A session's status as the suite reads it itself, straight on the target. */
  async statusOf(s: Scenario, id: string): Promise<unknown> {
    const base = this.settings.baseUrl;
    try {
      const token = await this.suiteToken(s);
      const read = await fetch(`${base}/api/checkout-sessions/${encodeURIComponent(id)}`, {
        headers: { authorization: `Bearer ${token.accessToken}` },
      });
      return ((await read.json()) as { status?: unknown }).status;
    } catch (error) {
      throw new AdapterError(`the suite's own read of ${id}: ${(error as Error).message}`);
    }
  }
}

/**
 * A scenario the suite kept whole: past REQUESTS_RECORDED requests it keeps none, and a
 * verdict on what it did not keep would be a guess.
 */
export function expectKept(s: Scenario): void {
  const dropped = s.service.dropped();
  if (dropped > 0)
    throw new NoVerdict(
      `Not judged: the client sent ${s.requests.length + dropped} requests in one scenario, more than the ${REQUESTS_RECORDED} the suite keeps.`,
    );
}

/** A payment link's create body, as we model it (the document does not show its shape). */
export function linkBody(): Record<string, unknown> {
  return {
    amount: { total: 12, currency: 'NZD' },
    creditorReference: { reference: 'CLIENT-LINK' },
    redirectUrl: 'https://shop.example.com/thanks?order=1002',
    checkoutMethod: 'card',
  };
}

/** A valid create body (Endpoints: POST /api/checkout-sessions). */
export function sessionBody(total = 25.5): Record<string, unknown> {
  return {
    type: 'single',
    amount: { total, currency: 'NZD' },
    creditorReference: { reference: 'CLIENT-1' },
    redirectUrl: 'https://shop.example.com/thanks?order=1001',
    checkoutMethod: 'card',
  };
}

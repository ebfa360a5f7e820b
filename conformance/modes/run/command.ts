/**
 * `payment-conformance run`: checks the target at a base URL. Sets up (the adapter that
 * reaches the target's controls, the target reachable, the receiver listening), runs the
 * selected checks and writes the chosen reports. The exit status is 0 when every must
 * check passed (skips allowed), 1 when any failed, 2 for a usage or setup problem,
 * including a check that ended in error because an adapter call failed.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CAPABILITIES, type Capability, MODELLED_STAND_INS, type TargetAdapter } from '../../core/adapter.ts';
import { baseUrlOf, targetAdapter } from '../../adapters/load.ts';
import { manualAdapter } from './manual-adapter.ts';
import { createRegistry } from './checks/index.ts';
import type { Profile } from './context/organisations.ts';
import type { RegisteredRunCheck as Check } from './context/check-context.ts';
import { RunContext } from './context/run-context.ts';
import { descriptionCoverage, shortfallText } from '../../core/description-coverage.ts';
import { send } from '../../core/http.ts';
import { at, isObject, text } from '../../core/json.ts';
import { concurrencyOf, reportersOf, seedOf, selectChecks, settleTimeoutMsOf } from '../../runner/flags.ts';
import { type Report, type Result, SetupError, type Output } from '../../core/outcome.ts';
import type { ReporterName } from '../../reporters/index.ts';
import { type Reported, Reporting } from '../../runner/reporting.ts';
import { inputCoverage } from './input-space.ts';
import { runTraffic } from './traffic.ts';
import { CaptureReceiver } from './capture-receiver.ts';
import { runChecks } from './run-checks.ts';
import { receiverTls } from './tls.ts';
import type { TrafficEntry } from '../../core/traffic.ts';

export interface RunOptions {
  /** The target's flags as given, secrets as shell variables (invocation.targetFlags). */
  targetFlags?: string;
  baseUrl: string;
  sandboxToken?: string;
  config?: string;
  /** A module path or package name, or `manual`; or an adapter object (library use). */
  adapter?: string | TargetAdapter;
  manualTimeoutMs?: number;
  /** `all`, or the capabilities whose absence is a setup error rather than skips. */
  requireCapabilities?: string;
  only?: string;
  reporter: string;
  out: string;
  strictAssumptions: boolean;
  receiverHost: string;
  receiverPort: number;
  receiverPublicUrl?: string;
  /** Serve the receiver over HTTPS with a certificate made at start (its CA written to --out). */
  receiverTls?: boolean;
  concurrency: number;
  /** Seconds a payment is awaited to settle, and a delivery to arrive, after an attempt. */
  settleTimeoutS?: number;
  /** Seconds the exploration checks search (0 turns them off). */
  exploreS?: number;
  /** Instead of seconds, the cases each lane of the exploration checks draws. */
  exploreCases?: number;
  /** The exploration's seed: the same seed replays the same sequences. */
  seed?: number;
  /** Percent of the description the run must exercise (descriptionCoverage.percent); below it the run exits 2. */
  minCoverage?: number;
  /** Percent of the input space the run must exercise (inputCoverage.percent); below it the run exits 2. */
  minInputCoverage?: number;
}

/** How long to wait for a delivery attempt after each clock step when none has come (the document states no timing). */
export const DEFAULT_DELIVERY_WAIT_MS = 3000;
export const DEFAULT_MANUAL_TIMEOUT_MS = 300_000;
/** Long enough to explore a few hundred steps, short enough that a full run stays brisk. */
export const DEFAULT_EXPLORE_S = 10;

interface Config {
  profiles: Profile[];
  deliveryWaitMs: number | undefined;
}

function parseConfig(file: string | undefined): Config {
  if (!file) return { profiles: [], deliveryWaitMs: undefined };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new SetupError(`--config ${file}: cannot read it as JSON (${(error as Error).message}).`);
  }
  const wait = at(parsed, 'deliveryWaitMs');
  if (wait !== undefined && !(typeof wait === 'number' && Number.isInteger(wait) && wait >= 100 && wait <= 120_000))
    throw new SetupError(`--config ${file}: deliveryWaitMs must be a whole number of milliseconds from 100 to 120000.`);
  const deliveryWaitMs = wait as number | undefined;
  const given = at(parsed, 'profiles');
  // A file may only set deliveryWaitMs (a target with a sandbox needs no profiles).
  if (given === undefined && deliveryWaitMs !== undefined) return { profiles: [], deliveryWaitMs };
  const profiles = Array.isArray(given)
    ? given
    : isObject(given)
      ? Object.entries(given).map(([name, p]) => ({ name, ...(isObject(p) ? p : {}) }))
      : undefined;
  if (!profiles || profiles.length === 0)
    throw new SetupError(
      `--config ${file}: expected { "profiles": [ { "clientId": "...", "clientSecret": "...", ... } ] }.`,
    );
  for (const p of profiles)
    if (typeof at(p, 'clientId') !== 'string' || typeof at(p, 'clientSecret') !== 'string')
      throw new SetupError(`--config ${file}: every profile needs clientId and clientSecret.`);
  return { profiles: profiles as Profile[], deliveryWaitMs };
}

function reasonOf(error: unknown): string {
  const e = error as Error & { cause?: { code?: string } };
  if (e?.name === 'TimeoutError') return 'no answer within 10 s';
  return e?.cause ? String(e.cause.code ?? e.cause) : (e?.message ?? String(error));
}

async function preflight(baseUrl: string, sandboxToken: string | undefined): Promise<void> {
  try {
    await fetch(`${baseUrl}/api/checkout-sessions/cs_conformance_preflight`, { signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    throw new SetupError(`The target ${baseUrl} is unreachable: ${reasonOf(error)}.`);
  }
  if (sandboxToken === undefined) return;
  let answer: Response;
  try {
    answer = await fetch(`${baseUrl}/sandbox/webhook-deliveries?checkoutSessionId=cs_conformance_preflight`, {
      headers: { authorization: `Bearer ${sandboxToken}` },
      signal: AbortSignal.timeout(10_000),
    });
    await answer.arrayBuffer();
  } catch (error) {
    throw new SetupError(`The sandbox API at ${baseUrl}/sandbox/ is not usable: ${reasonOf(error)}.`);
  }
  if (answer.status === 401) throw new SetupError('The sandbox API refused --sandbox-token (401).');
  if (answer.status >= 500 || answer.status === 405)
    throw new SetupError(`The sandbox API is not usable at ${baseUrl}/sandbox/ (status ${answer.status}).`);
}

/**
 * `all`, or a comma-separated list of capability names. `all` asks up front for every
 * capability the suite cannot stand in for: an adapter written before paymentLinks and
 * legacyTransactions existed still qualifies, and whatever their modelled stand-in leaves
 * unjudged is an error after the run.
 */
function parseRequired(value: string | undefined): Capability[] {
  if (value === undefined) return [];
  if (value.trim() === 'all') return CAPABILITIES.filter((c) => !MODELLED_STAND_INS.includes(c));
  const names = value
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(CAPABILITIES as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0)
    throw new SetupError(
      `--require-capabilities: expected all or a list of ${CAPABILITIES.join(', ')}${unknown.length > 0 ? ` (unknown: ${unknown.join(', ')})` : ''}.`,
    );
  return names as Capability[];
}

/** What one run produced: the report, the files written, and the exit status it calls for. */
export interface RunOutcome extends Reported {
  /** With --min-coverage, when the run exercised less of the description: the figure and what was missing. */
  belowMinCoverage?: string;
}

/** `payment-conformance run`; throws SetupError for a problem of the run itself (exit 2). */
export async function runCommand(options: RunOptions, out: Output): Promise<number> {
  const outcome = await execute(options, out);
  if (outcome.belowMinCoverage) process.stderr.write(`payment-conformance: ${outcome.belowMinCoverage}\n`);
  return outcome.exitCode;
}

interface Adapted {
  adapter: TargetAdapter;
  name: string;
  /** Set once the run exists: the manual adapter reads payments back through it. */
  attach?(run: RunContext): void;
  /** The adapter's own calls to the target, when it records them (the sandbox adapter). */
  calls?: readonly TrafficEntry[];
}

async function chooseAdapter(
  options: RunOptions,
  baseUrl: string,
  out: Output,
  record: (entry: TrafficEntry) => void,
): Promise<Adapted> {
  if (options.adapter === 'manual' && options.sandboxToken === undefined) {
    let run: RunContext | undefined;
    const adapter = manualAdapter({
      out,
      timeoutMs: options.manualTimeoutMs ?? DEFAULT_MANUAL_TIMEOUT_MS,
      pageOf: (target) => run?.payments.get(target.id)?.url,
      statusOf: (target) => (run ? statusOf(run, target.kind, target.id) : Promise.resolve(undefined)),
    });
    return { adapter, name: 'manual', attach: (r) => (run = r) };
  }
  return (
    (await targetAdapter(options, baseUrl, record)) ?? {
      adapter: { capabilities: [] },
      name: options.config ? 'config' : 'none',
    }
  );
}

/** A payment's status through the public API (the manual adapter waits on it); a token is fetched afresh when refused. */
async function statusOf(run: RunContext, kind: string, id: string): Promise<string | undefined> {
  const known = run.payments.get(id);
  if (!known || kind === 'transaction') return undefined;
  const path =
    kind === 'payment-link'
      ? `/api/payment-links/${encodeURIComponent(id)}`
      : `/api/checkout-sessions/${encodeURIComponent(id)}`;
  for (let tries = 0; tries < 2; tries += 1) {
    let token = known.org.tokens.get('test');
    if (!token) {
      const issued = await send(
        run.settings.baseUrl,
        'POST',
        '/api/token',
        { form: { ...known.org.keys.test } },
        'manual',
        run.redactor,
      );
      token = text(issued.json, 'accessToken');
      if (!token) return undefined;
      known.org.tokens.set('test', token);
    }
    const read = await send(run.settings.baseUrl, 'GET', path, { token }, 'manual', run.redactor);
    if (read.status !== 401) return text(read.json, 'status');
    known.org.tokens.delete('test');
  }
  return undefined;
}

export async function execute(options: RunOptions, out: Output): Promise<RunOutcome> {
  const baseUrl = baseUrlOf(options.baseUrl);
  const reporters = reportersOf(options.reporter);
  const concurrency = concurrencyOf(options.concurrency);
  if (!Number.isInteger(options.receiverPort) || options.receiverPort < 0 || options.receiverPort > 65535)
    throw new SetupError('--receiver-port must be a port number.');
  const settleTimeoutMs = settleTimeoutMsOf(options.settleTimeoutS);
  if (
    options.exploreS !== undefined &&
    !(Number.isInteger(options.exploreS) && options.exploreS >= 0 && options.exploreS <= 3600)
  )
    throw new SetupError('--explore must be a whole number of seconds from 0 to 3600.');
  if (
    options.exploreCases !== undefined &&
    !(Number.isInteger(options.exploreCases) && options.exploreCases >= 1 && options.exploreCases <= 100_000)
  )
    throw new SetupError('--explore-cases must be a whole number from 1 to 100000.');
  if (options.exploreCases !== undefined && options.exploreS !== undefined)
    throw new SetupError('--explore and --explore-cases each give the exploration its budget: give one of them.');
  const seed = seedOf(options.seed);
  if (
    options.minCoverage !== undefined &&
    !(Number.isFinite(options.minCoverage) && options.minCoverage >= 0 && options.minCoverage <= 100)
  )
    throw new SetupError('--min-coverage must be a percentage from 0 to 100.');
  if (
    options.minInputCoverage !== undefined &&
    !(Number.isFinite(options.minInputCoverage) && options.minInputCoverage >= 0 && options.minInputCoverage <= 100)
  )
    throw new SetupError('--min-input-coverage must be a percentage from 0 to 100.');
  const required = parseRequired(options.requireCapabilities);
  const { profiles, deliveryWaitMs } = parseConfig(options.config);
  const selected = selectChecks(createRegistry(), options.only);
  // --explore 0 turns the exploration off: its checks are not run, nor reported.
  const checks = options.exploreS === 0 ? selected.filter((c) => !c.explores) : selected;
  if (checks.length === 0) throw new SetupError(`--explore 0 turns off every check --only ${options.only} selects.`);
  await preflight(baseUrl, options.sandboxToken);

  // The sandbox adapter's calls are traffic with the target too: its reports hold them.
  const adapterCalls: TrafficEntry[] = [];
  const chosen: Adapted = {
    ...(await chooseAdapter(options, baseUrl, out, (entry) => adapterCalls.push(entry))),
    calls: adapterCalls,
  };
  try {
    const lacking = required.filter((c) => !chosen.adapter.capabilities.includes(c));
    if (lacking.length > 0) {
      throw new SetupError(
        `--require-capabilities: the ${chosen.name} adapter does not offer ${lacking.join(', ')}; the checks that need ${lacking.length === 1 ? 'it' : 'them'} would be skipped.`,
      );
    }
    if (!chosen.adapter.capabilities.includes('createOrganisation') && profiles.length === 0) {
      throw new SetupError(
        'Nothing to check with: give --sandbox-token, an --adapter that offers createOrganisation, or --config profiles of organisations.',
      );
    }
    return await runWith(
      chosen,
      { ...options, baseUrl, concurrency, seed },
      { profiles, deliveryWaitMs, settleTimeoutMs },
      checks,
      reporters,
      out,
    );
  } finally {
    await chosen.adapter.close?.().catch(() => undefined);
  }
}

/** The run's waits: --config's delivery wait, and --settle-timeout. */
interface Waits extends Config {
  settleTimeoutMs: number;
}

async function runWith(
  chosen: Adapted,
  options: RunOptions & { seed: number },
  config: Waits,
  checks: Check[],
  reporters: ReporterName[],
  out: Output,
): Promise<RunOutcome> {
  const receiver = new CaptureReceiver();
  const publicHost =
    options.receiverPublicUrl && URL.canParse(options.receiverPublicUrl)
      ? new URL(options.receiverPublicUrl).hostname.replace(/^\[|\]$/g, '')
      : undefined;
  const tls = options.receiverTls
    ? await receiverTls(path.resolve(options.out), [options.receiverHost, ...(publicHost ? [publicHost] : [])])
    : undefined;
  try {
    await receiver.start(options.receiverHost, options.receiverPort, options.receiverPublicUrl, tls);
  } catch (error) {
    throw new SetupError(
      `The webhook receiver cannot listen on ${options.receiverHost}:${options.receiverPort}: ${(error as Error).message}.`,
    );
  }
  const run = new RunContext({
    baseUrl: options.baseUrl,
    adapter: chosen.adapter,
    adapterName: chosen.name,
    profiles: config.profiles,
    receiver,
    deliveryWaitMs: config.deliveryWaitMs ?? DEFAULT_DELIVERY_WAIT_MS,
    settleTimeoutMs: config.settleTimeoutMs,
    explore: {
      budget:
        options.exploreCases !== undefined
          ? { cases: options.exploreCases }
          : { ms: (options.exploreS ?? DEFAULT_EXPLORE_S) * 1000 },
      seed: options.seed,
    },
    strictAssumptions: options.strictAssumptions,
    concurrency: options.concurrency,
    ...(options.sandboxToken !== undefined ? { sandboxToken: options.sandboxToken } : {}),
  });
  chosen.attach?.(run);
  const reporting = new Reporting(reporters, out, checks.length, options.strictAssumptions);
  const startedAt = new Date();
  reporting.start(
    options.baseUrl,
    chosen.name,
    [...run.capabilities],
    ...(tls
      ? [`receiver: ${receiver.publicUrl} over HTTPS; its CA is ${tls.caFile} (trust it, e.g. NODE_EXTRA_CA_CERTS)`]
      : []),
  );
  let results: Result[];
  try {
    results = await runChecks(run, checks, {
      concurrency: options.concurrency,
      onResult: (r) => reporting.result(r),
    });
  } finally {
    await receiver.close();
  }
  if (options.requireCapabilities?.trim() === 'all') {
    // Every must check is to be judged: one that was not, for whatever reason, is a setup error.
    results = results.map((r) =>
      r.level === 'must' && r.status === 'skipped'
        ? { ...r, status: 'error', cause: 'required', reason: `--require-capabilities all: not judged: ${r.reason}` }
        : r,
    );
  }
  const outcome = reporting.finish(
    {
      target: options.baseUrl,
      startedAt,
      adapter: { name: chosen.name, capabilities: CAPABILITIES.filter((c) => run.has(c)) },
      strictAssumptions: options.strictAssumptions,
      inputCoverage: inputCoverage(run.inputs),
      descriptionCoverage: descriptionCoverage({
        baseUrl: options.baseUrl,
        exchanges: run.exchanges,
        deliveries: receiver.everything(),
      }),
      invocation: {
        command: 'run',
        ...(options.targetFlags !== undefined ? { targetFlags: options.targetFlags } : {}),
        ...(options.only !== undefined ? { only: options.only } : {}),
        seed: run.settings.explore.seed,
        explore:
          'cases' in run.settings.explore.budget
            ? { cases: run.settings.explore.budget.cases }
            : { seconds: run.settings.explore.budget.ms / 1000 },
        concurrency: options.concurrency,
        settleTimeoutS: run.settings.settleTimeoutMs / 1000,
        strictAssumptions: options.strictAssumptions,
      },
    },
    results,
    options.out,
    {
      entries: () => runTraffic(run.exchanges, receiver.everything(), receiver.publicUrl, chosen.calls),
      redactor: run.redactor,
    },
  );
  const below =
    [
      belowMinCoverage(outcome.report, options.minCoverage),
      belowMinInputCoverage(outcome.report, options.minInputCoverage),
    ]
      .filter(Boolean)
      .join('\n') || undefined;
  // Too little of the description exercised is a problem of the run's setup, like a missing
  // capability under --require-capabilities: exit 2, unless a must check failed (exit 1).
  return below ? { ...outcome, exitCode: outcome.exitCode === 1 ? 1 : 2, belowMinCoverage: below } : outcome;
}

/** The --min-input-coverage line when the run's figure is under it: the figure, and the operations short of it. */
function belowMinInputCoverage(report: Report, minimum: number | undefined): string | undefined {
  const coverage = report.inputCoverage;
  if (minimum === undefined || !coverage || coverage.percent >= minimum) return undefined;
  const short = coverage.byOperation
    .filter((o) => o.exercised < o.total)
    .map((o) => `${o.operation} ${o.exercised} of ${o.total}`);
  return `--min-input-coverage ${minimum}: the run exercised ${coverage.percent}% of the input space (${coverage.exercised} of ${coverage.total} classes); short: ${short.join('; ')}`;
}

/** The --min-coverage line when the run's figure is under it: the figure, and every item not exercised. */
function belowMinCoverage(report: Report, minimum: number | undefined): string | undefined {
  const coverage = report.descriptionCoverage;
  if (minimum === undefined || !coverage || coverage.percent >= minimum) return undefined;
  return `--min-coverage ${minimum}: ${shortfallText(coverage)}`;
}

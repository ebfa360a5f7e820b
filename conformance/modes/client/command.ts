/**
 * `payment-conformance client`: checks an API client, through its driver, against the
 * document's rules for clients. The target is reached as `run` reaches it (--base-url
 * with --sandbox-token or --adapter); each check runs a scenario in front of it.
 */
import { CAPABILITIES, type Capability, type TargetAdapter } from '../../core/adapter.ts';
import { baseUrlOf, targetAdapter } from '../../adapters/load.ts';
import { Redactor } from '../../core/redact.ts';
import { concurrencyOf, outOf, reportersOf, seedOf, selectChecks } from '../../runner/flags.ts';
import { defaultCheckTimeoutMs, judgeAll } from '../../runner/judge.ts';
import { type Output, type Result, SetupError } from '../../core/outcome.ts';
import { type Reported, Reporting } from '../../runner/reporting.ts';
import { byStart } from '../../core/traffic.ts';
import { clientEntry } from './traffic.ts';
import { createClientRegistry } from './checks/index.ts';
import { SETTLE_TIMEOUT_MS } from './scenarios.ts';
import { ClientRun, currentCheck } from './context.ts';
import { checkDriverModule, type DriverSpec, describeDriver, OPERATION_TIMEOUT_MS } from './drivers/launch.ts';
import { type DriverFactory, OPERATIONS } from './protocol.ts';

export interface ClientOptions {
  /** The target's flags as given, secrets as shell variables (invocation.targetFlags). */
  targetFlags?: string;
  baseUrl: string;
  sandboxToken?: string;
  adapter?: string | TargetAdapter;
  /** The driver: a shell command speaking the protocol on its standard input and output. */
  driver?: string;
  /** Or a JavaScript module whose default export makes one (or, from the library, the factory itself). */
  driverModule?: string | DriverFactory;
  only?: string;
  reporter?: string;
  out?: string;
  /** Checks at once (each its own scenario and driver). */
  concurrency?: number;
  /** PAYMENT_REQUEST_TIMEOUT_MS given to drivers. */
  requestTimeoutMs?: number;
  /** What the scenarios draw comes from it (default: a random one, printed). */
  seed?: number;
  /** Fail the run when an assumption check fails, instead of reporting it as `differs`. */
  strictAssumptions?: boolean;
  /**
   * `all`, or the driver's operations and the adapter's capabilities (comma-separated) whose
   * absence is a setup error rather than skipped checks; `all` also makes any must check
   * left unjudged an error.
   */
  requireCapabilities?: string;
  /** Variables of the suite's environment the driver gets besides the protocol's and the allowed ones. */
  driverEnv?: string;
  /** How long one operation of the driver may take before it is ended (90 s; the protocol reference's). */
  operationTimeoutMs?: number;
}

/** The adapter's capabilities the client checks use: an organisation per scenario, and a payment for CLIENT-021. */
const CLIENT_CAPABILITIES = ['createOrganisation', 'attempt'] as const satisfies readonly Capability[];

/** What --require-capabilities asks for: every operation and capability (`all`), or those named. */
function parseRequired(value: string | undefined): { all: boolean; names: string[] } {
  if (value === undefined) return { all: false, names: [] };
  const known: readonly string[] = [...OPERATIONS, ...CLIENT_CAPABILITIES];
  if (value.trim() === 'all') return { all: true, names: [...known] };
  const names = value
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length > 0 || names.length === 0)
    throw new SetupError(
      `--require-capabilities: expected all or a list of ${known.join(', ')}${unknown.length > 0 ? ` (unknown: ${unknown.join(', ')})` : ''}.`,
    );
  return { all: false, names };
}

/** --driver-env: names of variables, each a plain name. */
function parseDriverEnv(value: string | undefined): string[] {
  const names = (value ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const bad = names.filter((n) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(n));
  if (bad.length > 0) throw new SetupError(`--driver-env: not variable names: ${bad.join(', ')}.`);
  return names;
}

const DEFAULT_CONCURRENCY = 4;
const DEFAULT_REQUEST_TIMEOUT_MS = 3000;
/**
 * Longest a client check may take: a minute of its own and a payment settling on the
 * target, plus two operations the driver leaves unanswered up to the protocol's limit
 * (after the first, the driver is ended and its later operations fail at once).
 */
const CLIENT_CHECK_TIMEOUT_MS = defaultCheckTimeoutMs(0, SETTLE_TIMEOUT_MS) + 2 * OPERATION_TIMEOUT_MS;

export type ClientOutcome = Reported;

export async function executeClient(options: ClientOptions, out: Output): Promise<ClientOutcome> {
  const baseUrl = baseUrlOf(options.baseUrl);
  if (options.driver !== undefined && options.driverModule !== undefined)
    throw new SetupError('--driver and --driver-module each name the client under test: give one.');
  const required = parseRequired(options.requireCapabilities);
  const passEnv = parseDriverEnv(options.driverEnv);
  const redactor = new Redactor(options.sandboxToken);
  const driver: DriverSpec | undefined =
    options.driver !== undefined
      ? { command: options.driver }
      : options.driverModule !== undefined
        ? { module: options.driverModule }
        : undefined;
  if (!driver) throw new SetupError('Give the client under test: --driver "<command>" or --driver-module <file>.');
  // A module is loaded once, apart, before any scenario: one that cannot be is a usage error.
  if (typeof options.driverModule === 'string') await checkDriverModule(options.driverModule, { passEnv, redactor });
  const concurrency = concurrencyOf(options.concurrency ?? DEFAULT_CONCURRENCY);
  const reporters = reportersOf(options.reporter);
  const seed = seedOf(options.seed);
  const checks = selectChecks(createClientRegistry(), options.only);
  const chosen = await targetAdapter(options, baseUrl);
  if (!chosen)
    throw new SetupError('Give the way to the target: --sandbox-token, or --adapter with createOrganisation.');
  const { adapter, name: adapterName } = chosen;
  try {
    if (!adapter.capabilities.includes('createOrganisation'))
      throw new SetupError(
        `The ${adapterName} adapter does not offer createOrganisation: every scenario needs an organisation of its own.`,
      );
    const lacking = CLIENT_CAPABILITIES.filter((c) => required.names.includes(c) && !adapter.capabilities.includes(c));
    if (lacking.length > 0)
      throw new SetupError(
        `--require-capabilities: the ${adapterName} adapter does not offer ${lacking.join(', ')}; the checks that need ${lacking.length === 1 ? 'it' : 'them'} would be skipped.`,
      );
    const run = new ClientRun({
      baseUrl,
      adapter,
      adapterName,
      driver,
      redactor,
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      seed,
      passEnv,
      operationTimeoutMs: options.operationTimeoutMs ?? OPERATION_TIMEOUT_MS,
    });
    const strict = options.strictAssumptions ?? false;
    const reporting = new Reporting(reporters, out, checks.length, strict);
    const startedAt = new Date();
    const offers = (c: Capability) => adapter.capabilities.includes(c);
    const capabilities = CAPABILITIES.filter(offers);
    const target = `${typeof options.driverModule === 'string' ? options.driverModule : describeDriver(driver)} (against ${baseUrl})`;
    reporting.start(target, adapterName, capabilities, `seed ${seed} (--seed ${seed} draws the same amounts again)`);
    const judged = await judgeAll(
      checks,
      {
        // The checks share the run: each starts scenarios of its own, or reads the shared one.
        contextFor: () => run,
        // Scenarios are named after the check that starts them, for the traffic reports.
        runIn: (check, ctx) => currentCheck.run(check.id, () => check.run(ctx)),
        offers,
        redactor,
        strictAssumptions: strict,
        timeLimitMs: () => CLIENT_CHECK_TIMEOUT_MS,
      },
      { concurrency, onResult: (r) => reporting.result(r) },
    );
    const results = judged.map((r) => requiredButSkipped(r, required));
    return reporting.finish(
      {
        target,
        startedAt,
        adapter: { name: adapterName, capabilities },
        strictAssumptions: strict,
        invocation: {
          command: 'client',
          ...(options.targetFlags !== undefined ? { targetFlags: options.targetFlags } : {}),
          ...(options.only !== undefined ? { only: options.only } : {}),
          seed,
          concurrency,
          strictAssumptions: strict,
        },
      },
      results,
      outOf(options.out, 'client'),
      {
        entries: () =>
          byStart(
            run.started.flatMap(({ checkId, scenario }) =>
              scenario.requests.map((r) => clientEntry(r, scenario.service.url, checkId)),
            ),
          ),
        redactor,
      },
    );
  } finally {
    await adapter.close?.().catch(() => undefined);
  }
}

/**
 * A check skipped for an operation or capability --require-capabilities names (or, with
 * `all`, any must check left unjudged) is a setup error, not a skip: CI asked for it.
 */
function requiredButSkipped(r: Result, required: { all: boolean; names: string[] }): Result {
  if (r.status !== 'skipped') return r;
  const named = r.missing.filter((m) => required.names.includes(m));
  if (named.length === 0 && !(required.all && r.level === 'must')) return r;
  return {
    ...r,
    status: 'error',
    cause: 'required',
    reason: `--require-capabilities ${required.all ? 'all' : named.join(',')}: not judged: ${r.reason}`,
  };
}

/** `payment-conformance client`; throws SetupError for a problem of the run itself (exit 2). */
export async function clientCommand(options: ClientOptions, out: Output): Promise<number> {
  return (await executeClient(options, out)).exitCode;
}

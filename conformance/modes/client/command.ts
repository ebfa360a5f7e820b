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
import { SetupError, type Output } from '../../core/outcome.ts';
import { type Reported, Reporting } from '../../runner/reporting.ts';
import { byStart } from '../../core/traffic.ts';
import { clientEntry } from './traffic.ts';
import { createClientRegistry } from './checks/index.ts';
import { SETTLE_TIMEOUT_MS } from './scenarios.ts';
import { ClientRun, currentCheck } from './context.ts';
import { type DriverSpec, describeDriver, loadDriverModule, OPERATION_TIMEOUT_MS } from './drivers/launch.ts';
import type { DriverFactory } from './protocol.ts';

export interface ClientOptions {
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
  // A module is loaded once, before any scenario: one that cannot be is a usage error.
  const driver: DriverSpec | undefined =
    options.driver !== undefined
      ? { command: options.driver }
      : typeof options.driverModule === 'string'
        ? { module: await loadDriverModule(options.driverModule) }
        : options.driverModule !== undefined
          ? { module: options.driverModule }
          : undefined;
  if (!driver) throw new SetupError('Give the client under test: --driver "<command>" or --driver-module <file>.');
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
    const redactor = new Redactor(options.sandboxToken);
    const run = new ClientRun({
      baseUrl,
      adapter,
      adapterName,
      driver,
      redactor,
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      seed,
    });
    const strict = options.strictAssumptions ?? false;
    const reporting = new Reporting(reporters, out, checks.length, strict);
    const startedAt = new Date();
    const offers = (c: Capability) => adapter.capabilities.includes(c);
    const capabilities = CAPABILITIES.filter(offers);
    const target = `${typeof options.driverModule === 'string' ? options.driverModule : describeDriver(driver)} (against ${baseUrl})`;
    reporting.start(target, adapterName, capabilities, `seed ${seed} (--seed ${seed} draws the same amounts again)`);
    const results = await judgeAll(
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
    return reporting.finish(
      {
        target,
        startedAt,
        adapter: { name: adapterName, capabilities },
        strictAssumptions: strict,
        invocation: {
          command: 'client',
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

/** `payment-conformance client`; throws SetupError for a problem of the run itself (exit 2). */
export async function clientCommand(options: ClientOptions, out: Output): Promise<number> {
  return (await executeClient(options, out)).exitCode;
}

/**
 * `payment-conformance client`: checks an API client, through its driver, against the
 * document's rules for clients. The target is reached as `run` reaches it (--base-url
 * with --sandbox-token or --adapter); each check runs a scenario in front of it.
 */
import { randomInt } from 'node:crypto';
import { AdapterError, CAPABILITIES, type TargetAdapter } from '../../adapter.ts';
import { targetAdapter, baseUrlOf } from '../../adapters/load.ts';
import type { RegisteredCheck } from '../../runner/check-definition.ts';
import {
  CheckFailure,
  CheckSkipped,
  NoVerdict,
  type Report,
  type Result,
  resultMaker,
  SetupError,
} from '../../runner/outcome.ts';
import { Redactor } from '../../redact.ts';
import { Registry } from '../../runner/registry.ts';
import { pool } from '../../pool.ts';
import { ConsoleReporter, type Output } from '../../reporters/console.ts';
import { buildReport, exitCodeOf, parseReporters, writeReports } from '../../runner/reporting.ts';
import { byStart, clientEntry } from '../../traffic.ts';
import { clientChecks } from './checks/index.ts';
import { ClientRun, currentCheck } from './context.ts';
import { type DriverSpec, describeDriver, loadDriverModule } from './drivers.ts';
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

export const DEFAULT_CLIENT_OUT = 'reports/client';
const DEFAULT_CONCURRENCY = 4;
const DEFAULT_REQUEST_TIMEOUT_MS = 3000;

export interface ClientOutcome {
  exitCode: 0 | 1 | 2;
  report: Report;
  files: string[];
}

export function createClientRegistry(): Registry<ClientRun> {
  return new Registry<ClientRun>().register(...clientChecks);
}

/** One check's result: the outcome mapping every mode shares. */
async function judge(check: RegisteredCheck<ClientRun>, run: ClientRun, strict: boolean): Promise<Result> {
  const finish = resultMaker(check, CAPABILITIES, (text) => run.redactor.text(text), strict);
  const missing = CAPABILITIES.filter(
    (c) => check.requires?.includes(c) && !run.settings.adapter.capabilities.includes(c),
  );
  if (missing.length > 0)
    return finish('skipped', `needs ${missing.join(', ')} (the adapter does not offer it)`, { missing });
  try {
    await currentCheck.run(check.id, () => check.run(run));
    return finish('passed', '');
  } catch (error) {
    if (error instanceof CheckSkipped) return finish('skipped', error.message, { missing: error.missing });
    if (error instanceof AdapterError) return finish('error', error.message, { cause: 'adapter' });
    if (error instanceof NoVerdict) return finish('error', error.message, { cause: 'no-verdict' });
    if (error instanceof SetupError) return finish('error', error.message, { cause: 'setup' });
    if (error instanceof CheckFailure) {
      const evidence = error.subject && 'evidence' in error.subject ? error.subject.evidence : undefined;
      return finish('failed', error.message, evidence ? { evidence } : {});
    }
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return finish('failed', `The check could not complete: ${message}`);
  }
}

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
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new SetupError('--concurrency must be a whole number of at least 1.');
  const reporters = parseReporters(options.reporter ?? 'console');
  if (
    options.seed !== undefined &&
    !(Number.isSafeInteger(options.seed) && options.seed >= 0 && options.seed < 2 ** 32)
  )
    throw new SetupError('--seed must be a whole number from 0 to 4294967295.');
  const seed = options.seed ?? randomInt(2 ** 32);
  const checks = createClientRegistry().select(options.only);
  if (checks.length === 0) throw new SetupError(`--only ${options.only}: no check id matches.`);
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
    const consoleOn = reporters.includes('console');
    const strict = options.strictAssumptions ?? false;
    const reporter = new ConsoleReporter(out, checks.length, strict);
    const startedAt = new Date();
    const capabilities = CAPABILITIES.filter((c) => adapter.capabilities.includes(c));
    const target = `${typeof options.driverModule === 'string' ? options.driverModule : describeDriver(driver)} (against ${baseUrl})`;
    if (consoleOn) {
      reporter.start(target, adapterName, capabilities);
      out.write(`seed ${seed} (--seed ${seed} draws the same amounts again)\n`);
    }
    const results = await pool(checks, concurrency, async (check) => {
      const result = await judge(check, run, strict);
      if (consoleOn) reporter.result(result);
      return result;
    });
    const report = buildReport(
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
    );
    const files = writeReports(report, reporters, options.out ?? DEFAULT_CLIENT_OUT, {
      entries: () =>
        byStart(
          run.started.flatMap(({ checkId, scenario }) =>
            scenario.requests.map((r) => clientEntry(r, scenario.service.url, checkId)),
          ),
        ),
      redactor,
    });
    if (consoleOn) reporter.summary(report, files);
    return { exitCode: exitCodeOf(report), report, files };
  } finally {
    await adapter.close?.().catch(() => undefined);
  }
}

/** `payment-conformance client`; throws SetupError for a problem of the run itself (exit 2). */
export async function clientCommand(options: ClientOptions, out: Output): Promise<number> {
  return (await executeClient(options, out)).exitCode;
}

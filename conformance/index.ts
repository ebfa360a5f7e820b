/**
 * The conformance suite as a library: `runConformance` runs the same checks as
 * `payment-conformance run` and returns the report instead of printing it (unless asked),
 * `executeReceiver` and `executeClient` the other two modes, and the types a target
 * adapter and a client's driver are written against.
 */
import type { TargetAdapter } from './core/adapter.ts';
import { execute, type RunOutcome } from './modes/run/command.ts';
import type { ReporterName } from './reporters/index.ts';
import { outOf } from './runner/flags.ts';

export type {
  AdapterFactory,
  AttemptTarget,
  Capability,
  CreatedOrganisation,
  Credentials,
  Delivery,
  FaultKind,
  LegacyTransactionRequest,
  Merchant,
  OrganisationSettings,
  Outcome,
  PaymentLinkRequest,
  PaymentLinkState,
  Rail,
  TargetAdapter,
} from './core/adapter.ts';
export { AdapterError, CAPABILITIES, CAPABILITY_METHODS, MODELLED_STAND_INS } from './core/adapter.ts';
export { sandboxAdapter } from './adapters/sandbox.ts';
export {
  createSandboxClient,
  type SandboxClient,
  type SandboxClientOptions,
  sandboxData,
} from './adapters/sandbox-client.ts';
export type { Coverage, Evidence, Level, Report, Result, Status } from './core/outcome.ts';
export type {
  ConstraintItem,
  DescriptionCoverage,
  ErrorCodeItem,
  ResponseItem,
  Undocumented,
  WebhookEventItem,
} from './core/description-coverage.ts';
export type { InputCoverage } from './core/input-coverage.ts';
export { SetupError } from './core/outcome.ts';
export type { RunOutcome } from './modes/run/command.ts';
export { executeReceiver, type ReceiverOptions, type ReceiverOutcome } from './modes/receiver/command.ts';
export { type ClientOptions, type ClientOutcome, executeClient } from './modes/client/command.ts';
export type {
  Answer,
  ClientError,
  DriverEnv,
  DriverFactory,
  ModuleDriver,
  Operation,
  OperationName,
  Outcome as DriverOutcome,
  Said,
} from './modes/client/protocol.ts';

export type Reporter = ReporterName;

export interface ConformanceOptions {
  /** The implementation to check. */
  baseUrl: string;
  /** Bearer token of the target's sandbox API: the built-in adapter for it. */
  sandboxToken?: string;
  /** An adapter to the target's controls, a module path or package name exporting one, or `manual`. */
  adapter?: TargetAdapter | string;
  /** With `adapter: 'manual'`: how long to wait for each payment (default 300 s). */
  manualTimeoutMs?: number;
  /**
   * `all`, or comma-separated capabilities whose absence is a setup error rather than skipped
   * checks; `all` leaves out paymentLinks and legacyTransactions (the modelled requests stand in).
   */
  requireCapabilities?: string;
  /** A JSON file of organisation profiles, for a target whose organisations the adapter cannot make. */
  config?: string;
  /** Comma-separated id globs, e.g. "IDEM-*,AUTH-003". */
  only?: string;
  /** Reports to write or print (default: none; the outcome carries the report). */
  reporters?: Reporter[];
  /** Where the json, junit and html reports go (default reports/conformance). */
  out?: string;
  /** Where the console reporter writes (default: standard output). */
  output?: { write(text: string): void };
  strictAssumptions?: boolean;
  receiverHost?: string;
  receiverPort?: number;
  receiverPublicUrl?: string;
  concurrency?: number;
  /** Percent of the description the run must exercise; below it the outcome's exit code is 2 (README, "Description coverage"). */
  minCoverage?: number;
  /** Percent of the input space the run must exercise; below it the outcome's exit code is 2 (README, "Input coverage"). */
  minInputCoverage?: number;
}

/** Runs the suite; throws SetupError when the run itself cannot go ahead (the CLI's exit 2). */
export function runConformance(options: ConformanceOptions): Promise<RunOutcome> {
  const output = options.output ?? { write: (text: string) => void process.stdout.write(text) };
  return execute(
    {
      baseUrl: options.baseUrl,
      sandboxToken: options.sandboxToken,
      adapter: options.adapter,
      manualTimeoutMs: options.manualTimeoutMs,
      requireCapabilities: options.requireCapabilities,
      config: options.config,
      only: options.only,
      reporter: (options.reporters ?? []).join(','),
      out: outOf(options.out, 'run'),
      strictAssumptions: options.strictAssumptions ?? false,
      receiverHost: options.receiverHost ?? '127.0.0.1',
      receiverPort: options.receiverPort ?? 0,
      receiverPublicUrl: options.receiverPublicUrl,
      concurrency: options.concurrency ?? 8,
      minCoverage: options.minCoverage,
      minInputCoverage: options.minInputCoverage,
    },
    output,
  );
}

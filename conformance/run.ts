/**
 * `payment-conformance run`: checks the target at a base URL. Sets up (target reachable,
 * sandbox token accepted, receiver listening), runs the selected checks and writes the
 * chosen reports. The exit status is 0 when every must check passed (skips allowed), 1
 * when any failed, 2 for a usage or setup problem.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createRegistry } from './checks/index.ts';
import { RunContext, type Profile } from './context.ts';
import { CaptureReceiver } from './receiver.ts';
import { ConsoleReporter, type Output } from './reporters/console.ts';
import { writeHtmlReport } from './reporters/html.ts';
import { writeJsonReport } from './reporters/json.ts';
import { writeJunitReport } from './reporters/junit.ts';
import { runChecks } from './runner.ts';
import { failsRun, SetupError, type Report, type Result } from './types.ts';

export const REPORTERS = ['console', 'json', 'junit', 'html'] as const;

export interface RunOptions {
  baseUrl: string;
  sandboxToken?: string;
  config?: string;
  only?: string;
  reporter: string;
  out: string;
  strictAssumptions: boolean;
  receiverHost: string;
  receiverPort: number;
  receiverPublicUrl?: string;
  concurrency: number;
}

/** How long to wait for a delivery attempt after each clock step when none has come (the document states no timing). */
export const DEFAULT_DELIVERY_WAIT_MS = 3000;

interface Config {
  profiles: Profile[];
  deliveryWaitMs: number | undefined;
}

function parseConfig(file: string | undefined): Config {
  if (!file) return { profiles: [], deliveryWaitMs: undefined };
  let parsed: any;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new SetupError(`--config ${file}: cannot read it as JSON (${(error as Error).message}).`);
  }
  const wait = parsed?.deliveryWaitMs;
  if (wait !== undefined && !(typeof wait === 'number' && Number.isInteger(wait) && wait >= 100 && wait <= 120_000))
    throw new SetupError(`--config ${file}: deliveryWaitMs must be a whole number of milliseconds from 100 to 120000.`);
  // A file may only set deliveryWaitMs (a target with a sandbox needs no profiles).
  if (parsed?.profiles === undefined && wait !== undefined) return { profiles: [], deliveryWaitMs: wait };
  const profiles = Array.isArray(parsed?.profiles)
    ? parsed.profiles
    : parsed?.profiles && typeof parsed.profiles === 'object'
      ? Object.entries(parsed.profiles).map(([name, p]) => ({ name, ...(p as object) }))
      : undefined;
  if (!profiles || profiles.length === 0)
    throw new SetupError(
      `--config ${file}: expected { "profiles": [ { "clientId": "...", "clientSecret": "...", ... } ] }.`,
    );
  for (const p of profiles)
    if (typeof p.clientId !== 'string' || typeof p.clientSecret !== 'string')
      throw new SetupError(`--config ${file}: every profile needs clientId and clientSecret.`);
  return { profiles: profiles as Profile[], deliveryWaitMs: wait };
}

function reasonOf(error: unknown): string {
  const e = error as Error & { cause?: any };
  if (e?.name === 'TimeoutError') return 'no answer within 10 s';
  return e?.cause ? String(e.cause.code ?? e.cause) : (e?.message ?? String(error));
}

async function preflight(baseUrl: string, sandboxToken: string | undefined): Promise<void> {
  try {
    await fetch(`${baseUrl}/api/checkout-sessions/cs_conformance_preflight`, { signal: AbortSignal.timeout(10_000) });
  } catch (error) {
    throw new SetupError(`The target ${baseUrl} is unreachable: ${reasonOf(error)}.`);
  }
  if (sandboxToken !== undefined) {
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
}

/** What one run produced: the report, the files written, and the exit status it calls for. */
export interface RunOutcome {
  /** 0 when every `must` check passed (skips allowed), 1 when one failed. */
  exitCode: 0 | 1;
  report: Report;
  /** The report files written (json, junit, html). */
  files: string[];
}

/** `payment-conformance run`; throws SetupError for a problem of the run itself (exit 2). */
export async function runCommand(options: RunOptions, out: Output): Promise<number> {
  return (await execute(options, out)).exitCode;
}

export async function execute(options: RunOptions, out: Output): Promise<RunOutcome> {
  let baseUrl: string;
  try {
    baseUrl = new URL(options.baseUrl).toString().replace(/\/+$/, '');
  } catch {
    throw new SetupError(`--base-url ${options.baseUrl} is not an absolute URL.`);
  }
  const reporters = options.reporter
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  const unknown = reporters.filter((r) => !(REPORTERS as readonly string[]).includes(r));
  if (unknown.length > 0)
    throw new SetupError(`--reporter: unknown ${unknown.join(', ')} (choose from ${REPORTERS.join(', ')}).`);
  if (!Number.isInteger(options.concurrency) || options.concurrency < 1)
    throw new SetupError('--concurrency must be a whole number of at least 1.');
  if (!Number.isInteger(options.receiverPort) || options.receiverPort < 0 || options.receiverPort > 65535)
    throw new SetupError('--receiver-port must be a port number.');
  const { profiles, deliveryWaitMs } = parseConfig(options.config);
  const registry = createRegistry();
  const checks = registry.select(options.only);
  if (checks.length === 0) throw new SetupError(`--only ${options.only}: no check id matches.`);
  await preflight(baseUrl, options.sandboxToken);

  const receiver = new CaptureReceiver();
  try {
    await receiver.start(options.receiverHost, options.receiverPort, options.receiverPublicUrl);
  } catch (error) {
    throw new SetupError(
      `The webhook receiver cannot listen on ${options.receiverHost}:${options.receiverPort}: ${(error as Error).message}.`,
    );
  }
  const settleMs = deliveryWaitMs ?? DEFAULT_DELIVERY_WAIT_MS;
  const run = new RunContext({ baseUrl, sandboxToken: options.sandboxToken, profiles, receiver, settleMs });
  const consoleOn = reporters.includes('console');
  const reporter = new ConsoleReporter(out, checks.length, options.strictAssumptions);
  const startedAt = new Date();
  if (consoleOn) reporter.start(baseUrl);
  let results: Result[];
  try {
    results = await runChecks(run, checks, {
      concurrency: options.concurrency,
      onResult: (r) => consoleOn && reporter.result(r),
    });
  } finally {
    await receiver.close();
  }
  const report: Report = {
    target: baseUrl,
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
    summary: {
      passed: results.filter((r) => r.status === 'passed').length,
      failed: results.filter((r) => r.status === 'failed').length,
      skipped: results.filter((r) => r.status === 'skipped').length,
    },
    results,
    strictAssumptions: options.strictAssumptions,
  };
  const dir = path.resolve(options.out);
  const files: string[] = [];
  if (reporters.includes('json')) files.push(writeJsonReport(report, dir));
  if (reporters.includes('junit')) files.push(writeJunitReport(report, dir));
  if (reporters.includes('html')) files.push(writeHtmlReport(report, dir));
  if (consoleOn) reporter.summary(report, files);
  const exitCode = results.some((r) => r.status === 'failed' && failsRun(r.level, options.strictAssumptions)) ? 1 : 0;
  return { exitCode, report, files };
}

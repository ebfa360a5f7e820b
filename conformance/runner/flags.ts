/**
 * The flags every mode takes alike, read and checked once: a bad value is a usage error
 * (SetupError, exit 2) with the same words whichever command it was given to. The flags
 * of one mode alone (run's --explore, the receiver's --secret) are checked by its command.
 */
import { randomInt } from 'node:crypto';
import type { RegisteredCheck } from './check-definition.ts';
import { SetupError } from '../core/outcome.ts';
import type { Registry } from './registry.ts';
import { REPORTER_NAMES, type ReporterName } from '../reporters/index.ts';
import type { Flag } from './mode.ts';
import { parseReporters } from './reporting.ts';

/** --settle-timeout's default: how long a payment is awaited to settle, and its webhook to arrive. */
export const DEFAULT_SETTLE_TIMEOUT_S = 30;

/** Where each command writes its file reports when --out is not given. */
export const DEFAULT_OUT = {
  run: 'reports/conformance',
  receiver: 'reports/receiver',
  client: 'reports/client',
  replay: 'reports/replay',
  repro: 'reports/repro',
  traffic: 'reports/traffic',
  proxy: 'reports/proxy',
} as const;

/** --concurrency: checks at once, a whole number of at least 1. */
export function concurrencyOf(value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new SetupError('--concurrency must be a whole number of at least 1.');
  return value;
}

/** --seed, or a random one when not given (every run prints the one it used). */
export function seedOf(value: number | undefined): number {
  if (value === undefined) return randomInt(2 ** 32);
  if (!(Number.isSafeInteger(value) && value >= 0 && value < 2 ** 32))
    throw new SetupError('--seed must be a whole number from 0 to 4294967295.');
  return value;
}

/** --settle-timeout in milliseconds (seconds given, from 1 to 600; 30 when not given). */
export function settleTimeoutMsOf(seconds: number | undefined): number {
  const s = seconds ?? DEFAULT_SETTLE_TIMEOUT_S;
  if (!(s >= 1 && s <= 600)) throw new SetupError('--settle-timeout must be from 1 to 600 seconds.');
  return s * 1000;
}

/** --reporter: each name known (console when not given). */
export function reportersOf(list: string | undefined): ReporterName[] {
  return parseReporters(list ?? 'console');
}

/** --out, or the command's own directory. */
export function outOf(out: string | undefined, command: keyof typeof DEFAULT_OUT): string {
  return out ?? DEFAULT_OUT[command];
}

/** The checks --only selects; selecting none is a usage error rather than a run that checks nothing. */
export function selectChecks<Ctx>(registry: Registry<Ctx>, only: string | undefined): RegisteredCheck<Ctx>[] {
  const checks = registry.select(only);
  if (checks.length === 0) throw new SetupError(`--only ${only}: no check id matches.`);
  return checks;
}

/** A whole number (a usage error otherwise): for counts, ports, seconds. */
export function integer(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new Error('expected a whole number');
  return n;
}

/** A percentage from 0 to 100. */
export function percentage(value: string): number {
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || n > 100) throw new Error('expected a percentage from 0 to 100');
  return n;
}

/** The flags several commands take, each spelled and explained once. */
export const FLAGS = {
  /** --only, with examples of the command's own ids. */
  only: (examples: string): Flag => ({
    flags: '--only <glob>',
    description: `run only the checks whose id matches (comma-separated globs, e.g. ${examples})`,
  }),
  reporter: {
    flags: '--reporter <list>',
    description: `${REPORTER_NAMES.join(', ')} (comma-separated)`,
    default: 'console',
  },
  out: (command: keyof typeof DEFAULT_OUT, what = 'directory for the file reports'): Flag => ({
    flags: '--out <dir>',
    description: what,
    default: DEFAULT_OUT[command],
  }),
  strictAssumptions: {
    flags: '--strict-assumptions',
    description:
      'fail the run when a check of our modelling (level assumption) fails, instead of reporting it apart as differs',
    default: false,
  },
  sandboxToken: (what: string): Flag => ({
    flags: '--sandbox-token <token>',
    description: what,
    secret: '$SANDBOX_TOKEN',
  }),
  verbose: {
    flags: '--verbose',
    description: 'with each failure on the console, the words of the clauses it breaks',
    default: false,
  },
  adapter: (what: string): Flag => ({ flags: '--adapter <module>', description: what }),
  settleTimeout: (what: string, withDefault = true): Flag => ({
    flags: '--settle-timeout <seconds>',
    description: what,
    parse: integer,
    ...(withDefault ? { default: DEFAULT_SETTLE_TIMEOUT_S } : {}),
  }),
  concurrency: (what: string, byDefault: number): Flag => ({
    flags: '--concurrency <n>',
    description: what,
    parse: integer,
    default: byDefault,
  }),
  seed: (what: string): Flag => ({ flags: '--seed <n>', description: what, parse: integer }),
} as const satisfies Record<string, Flag | ((...args: never[]) => Flag)>;

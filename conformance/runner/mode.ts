/**
 * A command of `payment-conformance` as one record: its name, the words of its help, its
 * flags, and how it runs. A mode (run, receiver, client, traffic) is a command that judges
 * checks of its own. The program (program.ts) is built from the records, listed once
 * (modes.ts), so that a new mode is a folder that exports its record, not an edit of the
 * code that dispatches to it.
 */
import type { Output } from '../core/outcome.ts';
import type { RegisteredCheck } from './check-definition.ts';

/** A flag as `--help` shows it: its spelling, its words, and how its value is read. */
export interface Flag {
  /** As the command line spells it: `--base-url <url>`, `--strict-assumptions`. */
  flags: string;
  description: string;
  /** A usage error when not given. */
  required?: boolean;
  /** Reads the value; a thrown Error is a usage error naming the flag (flags.ts: `integer`, `percentage`). */
  parse?: (value: string) => unknown;
  default?: string | number | boolean;
  /** A secret's flag: a reproduction line shows this shell variable (`$SANDBOX_TOKEN`) in place of its value. */
  secret?: string;
}

/**
 * Flags that shape a run rather than name its target: a report's `invocation` keeps them
 * (or they are the reproduction's own), so a reproduction line leaves them out.
 */
export const RUN_SHAPE_FLAGS: ReadonlySet<string> = new Set([
  'only',
  'reporter',
  'out',
  'seed',
  'explore',
  'exploreCases',
  'concurrency',
  'strictAssumptions',
  'legacy',
  'minCoverage',
  'minInputCoverage',
  'verbose',
]);

/** A positional argument, as `--help` shows it. */
export interface Argument {
  name: string;
  description: string;
}

/** What a command runs with, beyond its flags' values. */
export interface Invoked {
  /** Its positional arguments, in order. */
  args: readonly string[];
  /** Whether a flag (by its camel-case name) was left at its default. */
  isDefault(name: string): boolean;
  out: Output;
  /**
   * The flags given that name the target and the way to it, as a shell line, each secret as
   * its shell variable: what a reproduction runs with (`invocation.targetFlags`).
   */
  targetFlags: string;
}

/**
 * A command. `Values` are its flags' values by their camel-case names (`--base-url` is
 * `baseUrl`), as the command line parsed them; the exit status comes back (0 passed, 1 a
 * must check failed, 2 a usage or setup error, which a thrown SetupError also gives).
 */
export interface CommandRecord<Values = never> {
  name: string;
  /** A sub-command of a group (`adapter init`): the group's name and words. */
  group?: { name: string; description: string };
  description: string;
  arguments?: readonly Argument[];
  flags: readonly Flag[];
  run(values: Values, invoked: Invoked): Promise<number> | number;
}

/** A mode: a command whose checks `list` prints and the traceability of the clauses counts. */
export interface Mode<Values = never, Ctx = unknown> extends CommandRecord<Values> {
  /** What it checks, in a few words ("an implementation at a base URL"), for the reference pages. */
  judges: string;
  checks(): RegisteredCheck<Ctx>[];
  /** Other commands of the mode (run's `replay`), listed right after it. */
  also?: readonly CommandRecord<never>[];
}

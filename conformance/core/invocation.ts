/**
 * What a report keeps of how its run was asked for (`invocation` in the JSON report): the
 * command, and the options that decide which checks ran and which cases they drew, so that
 * `replay` can run the same cases again. Never the target's flags (base URL aside, which the
 * report names anyway): tokens, adapters and profiles are secrets or belong to a machine, and
 * are given again to `replay`.
 */
export type Command = 'run' | 'receiver' | 'client' | 'traffic';

export interface Invocation {
  command: Command;
  /** --only as given; absent: every check of the command. */
  only?: string;
  /** The seed the run drew from, given (--seed) or drawn (run and client). */
  seed?: number;
  /** run: the exploration's budget, seconds (0: off) or cases per lane. */
  explore?: { seconds: number } | { cases: number };
  /** run and client: checks (or scenarios) at once; the exploration's lanes follow it, so its cases do too. */
  concurrency?: number;
  /** run: --settle-timeout in seconds. */
  settleTimeoutS?: number;
  /** --strict-assumptions, which decides whether a check of our modelling fails or differs. */
  strictAssumptions?: boolean;
  /**
   * The target's flags as given, for a person's shell: every secret as its shell variable
   * (`--sandbox-token "$SANDBOX_TOKEN"`), never its value. What `repro` is shown run with.
   */
  targetFlags?: string;
  /** receiver: --legacy, which sets RCV-014's level and expected answer. */
  legacy?: 'accept' | 'reject';
}

/**
 * The vocabulary of the conformance suite: a check, its level, its result and the
 * evidence a failure carries (the JSON report format is fixed by the design).
 */
import type { CheckContext } from './context.ts';

/**
 * `must`: the service document says so; a failure fails the run.
 * `should`: the document implies it; reported, never fails the run.
 * `assumption`: our marked modelling (x-assumption) where the document is silent; fails
 * the run only with --strict-assumptions.
 */
export type Level = 'must' | 'should' | 'assumption';
export type Status = 'passed' | 'failed' | 'skipped';

/** What a check needs from the target beyond the public API and one set of credentials. */
export type Need = 'sandbox' | 'secondOrganisation' | 'receiver';

export interface Check {
  /** Stable id, e.g. IDEM-002; the registry refuses duplicates. */
  id: string;
  level: Level;
  /** The clause of the service document the check enforces, e.g. "Idempotency rules 2". */
  rule: string;
  /** The document section it belongs to, for the grouped summary. */
  section: string;
  title: string;
  needs?: Need[];
  /** `after` checks read what the `main` ones saw (response conformance). */
  phase?: 'main' | 'after';
  /** Waits in real time (the webhook answer limit): started first so it overlaps the rest. */
  slow?: boolean;
  run(ctx: CheckContext): Promise<void>;
}

export interface Evidence {
  request: string;
  response: string;
  curl: string;
}

export interface Result {
  id: string;
  rule: string;
  level: Level;
  title: string;
  status: Status;
  reason: string;
  evidence?: Evidence;
  /** Not in the JSON report: used by the console and HTML summaries. */
  section: string;
  durationMs: number;
}

export interface Report {
  target: string;
  startedAt: string;
  durationMs: number;
  summary: { passed: number; failed: number; skipped: number };
  results: Result[];
  strictAssumptions: boolean;
}

/** Thrown by a check to fail with a reason and, when there is one, the exchange to show. */
export class CheckFailure extends Error {
  constructor(
    message: string,
    readonly evidence?: Evidence,
  ) {
    super(message);
  }
}

/** Thrown by a check that cannot run against this target (no sandbox, one organisation). */
export class CheckSkipped extends Error {}

/** Thrown for a problem of the run itself (bad flags, unreachable target): exit status 2. */
export class SetupError extends Error {}

/** Does a failed result of this level fail the run? */
export function failsRun(level: Level, strictAssumptions: boolean): boolean {
  return level === 'must' || (level === 'assumption' && strictAssumptions);
}

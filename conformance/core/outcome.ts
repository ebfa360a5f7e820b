/**
 * What a run produces: each check's result, the evidence of a failure, and the report
 * (the JSON report format is fixed: conformance/README.md, "Reports"), with the errors a check or the run
 * ends with.
 */
import type { Capability } from './adapter.ts';
import { renderRule } from './clauses.ts';
import type { DescriptionCoverage } from './description-coverage.ts';
import type { Exchange } from './exchange.ts';
import type { InputCoverage } from './input-coverage.ts';
import type { Invocation } from './invocation.ts';

/**
 * `must`: the service document says so; a failure fails the run.
 * `should`: the document implies it; reported, never fails the run.
 * `assumption`: our marked modelling (x-assumption) where the document is silent; fails
 * the run only with --strict-assumptions.
 */
export type Level = 'must' | 'should' | 'assumption';

/**
 * `differs`: a check of level `assumption` found the target doing what the document allows
 * but not what our modelling chose (the result names the assumption); counted apart from
 * `failed`, and a failure only under --strict-assumptions.
 * `error`: the check could not be judged (an adapter call failed, the suite was too late,
 * or --require-capabilities all turned a skip into one); `cause` says which.
 */
export type Status = 'passed' | 'failed' | 'differs' | 'skipped' | 'error';

/** Why a check ended in `error`: no verdict on the target either way. */
export type ErrorCause = 'adapter' | 'no-verdict' | 'setup' | 'required';

export interface Evidence {
  request: string;
  response: string;
  curl: string;
}

export interface Result {
  id: string;
  /** The clause ids of the service document the check enforces. */
  clauses: string[];
  /** The clauses rendered for people. */
  rule: string;
  level: Level;
  title: string;
  status: Status;
  reason: string;
  /** The rule of ours the check holds the target to (level `assumption`). */
  assumption?: string;
  /** Why a result in `error` has no verdict. */
  cause?: ErrorCause;
  /** The capabilities the check needs from the target's adapter. */
  requires: Capability[];
  evidence?: Evidence;
  /**
   * Not in the JSON report: what the check lacked, and was skipped for: the adapter's
   * capabilities (`run`), or the operations the client's driver does not offer (`client`).
   */
  missing: string[];
  /** Not in the JSON report: used by the console and HTML summaries. */
  section: string;
  durationMs: number;
}

export interface Coverage {
  /** Checks that ran to a verdict (passed, failed or differs). */
  judged: number;
  total: number;
  /**
   * Skipped checks by what skipped them: a capability the adapter lacks, or an operation the
   * client's driver does not offer (a check may count under several).
   */
  skippedFor: Partial<Record<string, number>>;
  /** Skipped for another reason (no fitting organisation profile, a webhook address the target refused...). */
  skippedOther: number;
  /** The `must` checks: how many ran to a verdict, of how many selected. */
  must: { judged: number; total: number };
}

export interface Report {
  /** The suite's version and the clause register's: what produced the verdicts, against which document. */
  tool: { name: string; version: string; clauseRegisterVersion: string };
  target: string;
  startedAt: string;
  durationMs: number;
  /** Which built-in adapter (or module) drove the target, and what it offered. */
  adapter: { name: string; capabilities: Capability[] };
  summary: { passed: number; failed: number; differs: number; skipped: number; error: number };
  coverage: Coverage;
  /** `run` only: what the run exercised of the description (description-coverage.ts). */
  descriptionCoverage?: DescriptionCoverage;
  /** `run` only: what the run exercised of the input space (input-coverage.ts). */
  inputCoverage?: InputCoverage;
  results: Result[];
  strictAssumptions: boolean;
  /** How the run was asked for: what `replay` needs to run the same cases again. */
  invocation?: Invocation;
}

/** Where a command writes what people read (standard output, or a library caller's sink). */
export interface Output {
  write(text: string): void;
  /** --verbose: the console shows the words of each failure's clauses. */
  verbose?: boolean;
}

/** Thrown by a check to fail with a reason and, when there is one, the exchange or evidence to show. */
export class CheckFailure extends Error {
  constructor(
    message: string,
    readonly subject?: { exchange: Exchange } | { evidence: Evidence },
    /** The clauses broken, when fewer than the check cites (an exploration finds one rule broken). */
    readonly clauses?: readonly string[],
  ) {
    super(message);
  }
}

/**
 * Thrown by a check that cannot run against this target or client; `missing` names what
 * would let it: capabilities of the adapter, or operations of the client's driver.
 */
export class CheckSkipped extends Error {
  constructor(
    message: string,
    readonly missing: string[] = [],
  ) {
    super(message);
  }
}

/**
 * Thrown when the run leaves nothing to judge: the target kept throttling the suite (429)
 * after every wait its Retry-After asked for, or the suite's own receiver answered later
 * than the check needed. The check ends in error, never failed.
 */
export class NoVerdict extends Error {}

/**
 * No verdict because the suite's own side was too late to judge (its machine too busy, or
 * the target's answers too slow for the margin a timing check needs): the reason says
 * what happened and ends with SUITE_TOO_LATE, so that people and tools can tell it apart.
 */
export class SuiteTooLate extends NoVerdict {
  constructor(what: string) {
    super(`${what} ${SUITE_TOO_LATE}`);
  }
}
export const SUITE_TOO_LATE = 'The suite was too late to judge this.';

/** Thrown for a problem of the run itself (bad flags, unreachable target): exit status 2. */
export class SetupError extends Error {}

/** Does a failed result of this level fail the run (an `assumption` one is `differs` unless strict)? */
export function failsRun(level: Level, strictAssumptions: boolean): boolean {
  return level === 'must' || (level === 'assumption' && strictAssumptions);
}

/** What a result is made from: the check as registered, when it started, and the run's redactor. */
export interface ResultSource {
  id: string;
  rule: string;
  clauses: readonly string[];
  level: Level;
  title: string;
  section: string;
  requires?: readonly Capability[];
  assumption?: string;
}

/**
 * Makes a check's results, for every mode alike: the check's identity and clauses, its
 * required capabilities in report order, the time it took, and the reason redacted
 * (evidence is redacted as it is made, once: a curl line redacted a second time would lose
 * its quotes). A failure of an `assumption` check is `differs` unless `strictAssumptions`:
 * the target broke a rule of ours, not of the document.
 */
export function resultMaker(
  check: ResultSource,
  order: readonly Capability[],
  redact: (text: string) => string,
  strictAssumptions = false,
): (
  status: Status,
  reason: string,
  extra?: { evidence?: Evidence; missing?: string[]; clauses?: readonly string[]; cause?: ErrorCause },
) => Result {
  const started = Date.now();
  const requires = order.filter((c) => check.requires?.includes(c));
  return (status, reason, extra = {}) => ({
    id: check.id,
    rule: extra.clauses ? renderRule(extra.clauses) : check.rule,
    clauses: [...(extra.clauses ?? check.clauses)],
    level: check.level,
    title: check.title,
    section: check.section,
    status: status === 'failed' && check.level === 'assumption' && !strictAssumptions ? 'differs' : status,
    reason: redact(reason),
    ...(check.assumption ? { assumption: check.assumption } : {}),
    ...(status === 'error' ? { cause: extra.cause ?? 'adapter' } : {}),
    requires,
    missing: extra.missing ?? [],
    ...(extra.evidence ? { evidence: extra.evidence } : {}),
    durationMs: Date.now() - started,
  });
}

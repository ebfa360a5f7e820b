/**
 * A reporter as one record: its name (what `--reporter` takes) and what it does with a run.
 * The console follows the run as it goes; the others write a file of the finished run. The
 * list of them is reporters/index.ts: a new format is a file with its record, listed there.
 */
import type { Capability } from '../core/adapter.ts';
import type { Output, Report, Result } from '../core/outcome.ts';
import type { Traffic } from '../core/traffic.ts';

/** What follows a run as it goes: its head, a line per check, then the summary. */
export interface Follower {
  start(target: string, adapter: string, capabilities: Capability[]): void;
  result(result: Result): void;
  summary(report: Report, files: string[]): void;
}

export interface ReporterRecord<Name extends string = string> {
  name: Name;
  /** Follows the run on `output` (the console). */
  follow?(output: Output, total: number, strictAssumptions: boolean): Follower;
  /**
   * Writes its file of the finished run into `dir` and gives its path; undefined when it
   * has nothing to write (a traffic format, for a mode that gives no traffic).
   */
  write?(report: Report, dir: string, traffic: Traffic | undefined, others: Written): string | undefined;
}

/** What the other reporters of the run write, for a report that points at them. */
export interface Written {
  /** The JSON report's path, when one is written: what `repro` reads. */
  json?: string;
}

/**
 * What every mode (`run`, `receiver`, `client`, `traffic`) does with its results alike: the
 * reporters it may be given, the report it makes of them, the files it writes, and the exit
 * status.
 */
import path from 'node:path';
import type { Capability } from '../core/adapter.ts';
import { CLAUSE_REGISTER_VERSION } from '../core/clauses.ts';
import type { DescriptionCoverage } from '../core/description-coverage.ts';
import type { InputCoverage } from '../core/input-coverage.ts';
import type { Invocation } from '../core/invocation.ts';
import { type Coverage, failsRun, type Output, type Report, type Result, SetupError } from '../core/outcome.ts';
import type { Redactor } from '../core/redact.ts';
import type { Traffic, TrafficEntry } from '../core/traffic.ts';
import { TOOL_VERSION } from '../core/version.ts';
import { REPORTER_NAMES, REPORTERS, type ReporterName } from '../reporters/index.ts';
import type { Follower, ReporterRecord } from '../reporters/reporter.ts';

/** The --reporter list, each name known (a usage error otherwise). */
export function parseReporters(list: string): ReporterName[] {
  const names = list
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  const unknown = names.filter((r) => !(REPORTER_NAMES as readonly string[]).includes(r));
  if (unknown.length > 0)
    throw new SetupError(`--reporter: unknown ${unknown.join(', ')} (choose from ${REPORTER_NAMES.join(', ')}).`);
  return names as ReporterName[];
}

/** A result's texts with every secret known at the end of the run replaced. */
function redactedAgain(r: Result, redactor: Redactor): Result {
  return {
    ...r,
    reason: redactor.text(r.reason),
    ...(r.evidence
      ? {
          evidence: {
            request: redactor.text(r.evidence.request),
            response: redactor.text(r.evidence.response),
            curl: redactor.text(r.evidence.curl),
          },
        }
      : {}),
  };
}

/** The reporters named, in the list's order. */
function chosen(names: readonly string[]): ReporterRecord[] {
  return REPORTERS.filter((r) => names.includes(r.name));
}

/** The coverage of a run: how many checks were judged, and why the others were skipped. */
export function coverageOf(results: Result[]): Coverage {
  const skippedFor: Partial<Record<string, number>> = {};
  let skippedOther = 0;
  for (const r of results) {
    if (r.status !== 'skipped') continue;
    if (r.missing.length === 0) skippedOther += 1;
    for (const c of r.missing) skippedFor[c] = (skippedFor[c] ?? 0) + 1;
  }
  const judged = (r: Result) => r.status === 'passed' || r.status === 'failed' || r.status === 'differs';
  const must = results.filter((r) => r.level === 'must');
  return {
    judged: results.filter(judged).length,
    total: results.length,
    skippedFor,
    skippedOther,
    must: { judged: must.filter(judged).length, total: must.length },
  };
}

export interface ReportOf {
  target: string;
  startedAt: Date;
  adapter: { name: string; capabilities: Capability[] };
  strictAssumptions: boolean;
  descriptionCoverage?: DescriptionCoverage;
  inputCoverage?: InputCoverage;
  invocation?: Invocation;
}

export function buildReport(of: ReportOf, results: Result[]): Report {
  const count = (status: Result['status']) => results.filter((r) => r.status === status).length;
  return {
    tool: { name: 'payment-conformance', version: TOOL_VERSION, clauseRegisterVersion: CLAUSE_REGISTER_VERSION },
    target: of.target,
    startedAt: of.startedAt.toISOString(),
    durationMs: Date.now() - of.startedAt.getTime(),
    adapter: of.adapter,
    summary: {
      passed: count('passed'),
      failed: count('failed'),
      differs: count('differs'),
      skipped: count('skipped'),
      error: count('error'),
    },
    coverage: coverageOf(results),
    ...(of.descriptionCoverage ? { descriptionCoverage: of.descriptionCoverage } : {}),
    ...(of.inputCoverage ? { inputCoverage: of.inputCoverage } : {}),
    results,
    strictAssumptions: of.strictAssumptions,
    ...(of.invocation ? { invocation: of.invocation } : {}),
  };
}

/**
 * Writes the file reports asked for into `out`, in the order of the reporters' list (the
 * traffic ones, har and ndjson, from the mode's traffic, made once); gives their paths.
 */
export function writeReports(report: Report, names: readonly string[], out: string, traffic?: Traffic): string[] {
  const dir = path.resolve(out);
  // The traffic is made once, for whichever of its reporters comes first.
  let kept: TrafficEntry[] | undefined;
  const made: Traffic | undefined = traffic && {
    entries: () => (kept ??= traffic.entries()),
    redactor: traffic.redactor,
  };
  const files: string[] = [];
  const others = names.includes('json') ? { json: path.join(dir, 'conformance.json') } : {};
  for (const reporter of chosen(names)) {
    const file = reporter.write?.(report, dir, made, others);
    if (file) files.push(file);
  }
  return files;
}

/**
 * 0 every `must` check passed (skips and `differs` allowed); 1 one failed (an `assumption`
 * one too under --strict-assumptions, where it is `failed`); 2 a check ended in error and none failed.
 */
export function exitCodeOf(report: Report): 0 | 1 | 2 {
  const failed = report.results.some((r) => r.status === 'failed' && failsRun(r.level, report.strictAssumptions));
  return failed ? 1 : report.summary.error > 0 ? 2 : 0;
}

/** What a mode's run came to: the report, the files written, and the exit status it calls for. */
export interface Reported {
  /** 0 every `must` check passed (skips allowed); 1 one failed; 2 a check ended in error and none failed. */
  exitCode: 0 | 1 | 2;
  report: Report;
  /** The report files written (json, junit, html, har, ndjson). */
  files: string[];
}

/**
 * What every mode shows and writes of its run: the console (when asked for) as results
 * come, then the report, the files of the other reporters, and the exit status.
 */
export class Reporting {
  private readonly followers: Follower[];

  constructor(
    private readonly reporters: readonly ReporterName[],
    private readonly output: Output,
    total: number,
    strictAssumptions: boolean,
  ) {
    this.followers = chosen(reporters).flatMap((r) => r.follow?.(output, total, strictAssumptions) ?? []);
  }

  /** The console's head: what is checked, through which adapter offering what, then any notes of the mode. */
  start(target: string, adapterName: string, capabilities: Capability[], ...notes: string[]): void {
    if (this.followers.length === 0) return;
    for (const follower of this.followers) follower.start(target, adapterName, capabilities);
    for (const note of notes) this.output.write(`${note}\n`);
  }

  /** One check's line, as it finishes. */
  result(result: Result): void {
    for (const follower of this.followers) follower.result(result);
  }

  /**
   * The report of the results, its files written into `out`, and the console's summary.
   * Every result is redacted again, with every secret the run came to know: one learnt
   * after a result was made (a token issued late) is in no report either.
   */
  finish(of: ReportOf, results: Result[], out: string, traffic?: Traffic): Reported {
    const report = buildReport(of, traffic ? results.map((r) => redactedAgain(r, traffic.redactor)) : results);
    const files = writeReports(report, this.reporters, out, traffic);
    for (const follower of this.followers) follower.summary(report, files);
    return { exitCode: exitCodeOf(report), report, files };
  }
}

/** The words every report uses for the verdict and the coverage, so that they say the same thing. */
import path from 'node:path';
import { CAPABILITIES } from '../core/adapter.ts';
import { shellWord } from '../core/http.ts';
import { type Coverage, type ErrorCause, failsRun, type Report, type Result } from '../core/outcome.ts';

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** Failed checks that fail the run, and those that do not (`should` ones). */
export function failuresOf(report: Report): { gating: Result[]; soft: Result[] } {
  const failed = report.results.filter((r) => r.status === 'failed');
  return {
    gating: failed.filter((r) => failsRun(r.level, report.strictAssumptions)),
    soft: failed.filter((r) => !failsRun(r.level, report.strictAssumptions)),
  };
}

/** Checks whose target did what the document allows but not what our modelling chose. */
export function differencesOf(report: Report): Result[] {
  return report.results.filter((r) => r.status === 'differs');
}

export type Verdict = { kind: 'failed' | 'error' | 'passed'; text: string };

/** What kept a check in error from a verdict, in words. */
export const CAUSE_TEXT: Record<ErrorCause, string> = {
  adapter: 'an adapter call failed',
  'no-verdict': 'the run left nothing to judge (throttled, or the suite too late)',
  setup: 'the run could not set it up (the delivery preflight)',
  required: 'not judged, and --require-capabilities all asks for every must check',
};

/** "1 an adapter call failed; 6 not judged, and --require-capabilities all ..." */
export function errorCausesText(results: Result[]): string {
  const counts = new Map<ErrorCause, number>();
  for (const r of results)
    if (r.status === 'error') counts.set(r.cause ?? 'adapter', (counts.get(r.cause ?? 'adapter') ?? 0) + 1);
  return [...counts.entries()].map(([cause, n]) => `${n}: ${CAUSE_TEXT[cause]}`).join('; ');
}

export function verdictOf(report: Report): Verdict {
  const { gating, soft } = failuresOf(report);
  const differs = differencesOf(report).length;
  const also = [
    soft.length > 0 ? `${plural(soft.length, 'should check')} failed without failing the run` : '',
    differs > 0
      ? `${plural(differs, 'check')} ${differs === 1 ? 'differs' : 'differ'} from our modelling only (--strict-assumptions fails ${differs === 1 ? 'it' : 'them'})`
      : '',
  ]
    .filter(Boolean)
    .map((text) => `; ${text}`)
    .join('');
  if (gating.length > 0) {
    const which = report.strictAssumptions ? 'must or assumption check' : 'must check';
    return { kind: 'failed', text: `FAILED: ${plural(gating.length, which)} failed${also}` };
  }
  const errors = report.summary.error;
  if (errors > 0) {
    return {
      kind: 'error',
      text: `ERROR: ${plural(errors, 'check')} could not be judged (${errorCausesText(report.results)})${also}`,
    };
  }
  const { judged, total } = report.coverage.must;
  // "PASSED" alone says every must check was judged: fewer, and the banner says how many, and why not the rest.
  if (judged < total)
    return {
      kind: 'passed',
      text: `PASSED (${judged} of ${total} must checks judged): no must check failed; not judged: ${unjudgedText(report.results)}${also}`,
    };
  return { kind: 'passed', text: `PASSED: no must check failed${also}` };
}

/** What kept must checks from a verdict: "42 need createOrganisation, 19 need attempt, 1 in error". */
export function unjudgedText(results: readonly Result[]): string {
  const counts = new Map<string, number>();
  for (const r of results) {
    if (r.level !== 'must' || r.status === 'passed' || r.status === 'failed' || r.status === 'differs') continue;
    // A check lacking several capabilities is counted under the first: the sum is the number left out.
    const why =
      r.status === 'error' ? 'in error' : r.missing[0] ? `need ${r.missing[0]}` : 'skipped for another reason';
    counts.set(why, (counts.get(why) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([why, n]) => `${n} ${why}`)
    .join(', ');
}

/** "114 checks: 100 passed, 2 failed, 1 differs, 10 skipped, 2 errors". */
export function countsOf(report: Report): string {
  const { passed, failed, differs, skipped, error } = report.summary;
  const parts = [`${passed} passed`, `${failed} failed`];
  if (differs > 0) parts.push(`${differs} differs`);
  parts.push(`${skipped} skipped`);
  if (error > 0) parts.push(plural(error, 'error'));
  return `${plural(report.results.length, 'check')}: ${parts.join(', ')}`;
}

/**
 * Skips by what was missing: capabilities in the order they are listed, then the driver's
 * operations, then the other skips.
 */
export function skipGroups(coverage: Coverage): Array<{ what: string; count: number }> {
  const named = [
    ...CAPABILITIES.filter((c) => c in coverage.skippedFor),
    ...Object.keys(coverage.skippedFor).filter((c) => !(CAPABILITIES as readonly string[]).includes(c)),
  ];
  const groups: Array<{ what: string; count: number }> = named
    .filter((c) => (coverage.skippedFor[c] ?? 0) > 0)
    .map((c) => ({ what: c, count: coverage.skippedFor[c]! }));
  if (coverage.skippedOther > 0) groups.push({ what: 'another reason', count: coverage.skippedOther });
  return groups;
}

/** "Coverage: 67 of 114 checks judged; skipped for advanceClock: 9 checks, attempt: 30 checks". */
export function coverageText(coverage: Coverage): string {
  const groups = skipGroups(coverage);
  const skips =
    groups.length === 0
      ? 'none skipped'
      : `skipped for ${groups.map((g) => `${g.what}: ${plural(g.count, 'check')}`).join(', ')}`;
  return `Coverage: ${coverage.judged} of ${plural(coverage.total, 'check')} judged; ${skips}`;
}

/** How much of a received body a failure shows on the console (the JSON and HTML reports keep more). */
export const BODY_SHOWN = 300;

/**
 * The command that reproduces a failed check, runnable as printed once the shell has the
 * variables its secrets are shown as: `repro` of the JSON report when one was written (it
 * provisions afresh, replays and shows each exchange beside the recorded one), else the
 * check alone with the run's seed and budget. Undefined for a report that does not say how
 * its run was asked for.
 */
export function reproductionOf(report: Report, id: string, jsonFile: string | undefined): string | undefined {
  const invocation = report.invocation;
  if (!invocation) return undefined;
  // A run made as a library call has no command line: the reader fills in the target.
  const target = ` ${invocation.targetFlags ?? '<the run’s target flags>'}`.trimEnd();
  if (jsonFile) {
    // Run from where the run was: a report under it is named as a person would type it.
    const relative = path.relative(process.cwd(), jsonFile);
    const shown = relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : jsonFile;
    return `npx --no -- payment-conformance repro ${shellWord(shown)} ${id}${target}`;
  }
  const shape = [`--only ${id}`];
  if (invocation.seed !== undefined) shape.push(`--seed ${invocation.seed}`);
  if (invocation.explore && 'cases' in invocation.explore) shape.push(`--explore-cases ${invocation.explore.cases}`);
  else if (invocation.explore) shape.push(`--explore ${invocation.explore.seconds}`);
  if (invocation.legacy) shape.push(`--legacy ${invocation.legacy}`);
  if (invocation.strictAssumptions) shape.push('--strict-assumptions');
  return `npx --no -- payment-conformance ${invocation.command}${target} ${shape.join(' ')}`;
}

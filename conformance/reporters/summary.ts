/** The words every report uses for the verdict and the coverage, so that they say the same thing. */
import { CAPABILITIES } from '../adapter.ts';
import { type Coverage, failsRun, type Report, type Result } from '../outcome.ts';

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** Failed checks that fail the run, and those that do not (should, or assumption without --strict-assumptions). */
export function failuresOf(report: Report): { gating: Result[]; soft: Result[] } {
  const failed = report.results.filter((r) => r.status === 'failed');
  return {
    gating: failed.filter((r) => failsRun(r.level, report.strictAssumptions)),
    soft: failed.filter((r) => !failsRun(r.level, report.strictAssumptions)),
  };
}

export type Verdict = { kind: 'failed' | 'error' | 'passed'; text: string };

export function verdictOf(report: Report): Verdict {
  const { gating, soft } = failuresOf(report);
  const alsoSoft = soft.length > 0 ? `; ${plural(soft.length, 'other check')} failed without failing the run` : '';
  if (gating.length > 0) {
    const which = report.strictAssumptions ? 'must or assumption check' : 'must check';
    return { kind: 'failed', text: `FAILED: ${plural(gating.length, which)} failed${alsoSoft}` };
  }
  const errors = report.summary.error;
  if (errors > 0) {
    return {
      kind: 'error',
      text: `ERROR: ${plural(errors, 'check')} could not be judged: an adapter call failed${alsoSoft}`,
    };
  }
  return { kind: 'passed', text: `PASSED: no must check failed${alsoSoft}` };
}

/** "114 checks: 100 passed, 2 failed, 10 skipped, 2 errors". */
export function countsOf(report: Report): string {
  const { passed, failed, skipped, error } = report.summary;
  const parts = [`${passed} passed`, `${failed} failed`, `${skipped} skipped`];
  if (error > 0) parts.push(plural(error, 'error'));
  return `${plural(report.results.length, 'check')}: ${parts.join(', ')}`;
}

/** Skips by missing capability, in the order capabilities are listed, then the other skips. */
export function skipGroups(coverage: Coverage): Array<{ what: string; count: number }> {
  const groups: Array<{ what: string; count: number }> = CAPABILITIES.filter(
    (c) => (coverage.skippedFor[c] ?? 0) > 0,
  ).map((c) => ({ what: c, count: coverage.skippedFor[c]! }));
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

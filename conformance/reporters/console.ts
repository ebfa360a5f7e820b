/**
 * The console reporter: one line per check as it finishes (live progress), then a
 * summary grouped by document section and the reasons of every failure. Colour only on
 * a TTY and without NO_COLOR (picocolors decides).
 */
import pc from 'picocolors';
import { failsRun, type Report, type Result } from '../types.ts';

export interface Output {
  write(text: string): void;
}

const mark = (r: Result, strict: boolean) =>
  r.status === 'passed'
    ? pc.green('✓')
    : r.status === 'skipped'
      ? pc.dim('-')
      : failsRun(r.level, strict)
        ? pc.red('✗')
        : pc.yellow('!');

export class ConsoleReporter {
  private done = 0;

  constructor(
    private readonly out: Output,
    private readonly total: number,
    private readonly strict: boolean,
  ) {}

  start(target: string): void {
    this.out.write(`${pc.bold('payment-conformance')} ${target}: ${this.total} checks\n`);
  }

  result(r: Result): void {
    this.done += 1;
    const counter = pc.dim(`[${String(this.done).padStart(String(this.total).length)}/${this.total}]`);
    const level = r.level === 'must' ? '' : pc.dim(` (${r.level})`);
    const tail =
      r.status === 'skipped'
        ? pc.dim(` skipped: ${r.reason}`)
        : r.status === 'failed'
          ? ` ${pc.red(r.reason.split('\n')[0]!.slice(0, 200))}`
          : pc.dim(` ${r.durationMs} ms`);
    this.out.write(`${counter} ${mark(r, this.strict)} ${pc.bold(r.id)} ${r.title}${level}${tail}\n`);
  }

  summary(report: Report, files: string[]): void {
    const sections = new Map<string, Result[]>();
    for (const r of report.results) sections.set(r.section, [...(sections.get(r.section) ?? []), r]);
    this.out.write(`\n${pc.bold('By section of the service document')}\n`);
    for (const [name, results] of sections) {
      const count = (s: Result['status']) => results.filter((r) => r.status === s).length;
      const failed = count('failed');
      const line = `${String(count('passed')).padStart(3)} passed  ${String(failed).padStart(2)} failed  ${String(count('skipped')).padStart(2)} skipped  ${name}`;
      this.out.write(`  ${failed > 0 ? pc.red(line) : line}\n`);
    }
    const failures = report.results.filter((r) => r.status === 'failed');
    if (failures.length > 0) {
      this.out.write(`\n${pc.bold('Failures')}\n`);
      for (const r of failures) {
        const gate = failsRun(r.level, report.strictAssumptions)
          ? ''
          : pc.yellow(` [${r.level}: does not fail the run]`);
        this.out.write(`\n${pc.red(pc.bold(r.id))} ${r.title}${gate}\n  rule: ${r.rule}\n  ${r.reason}\n`);
        if (r.evidence?.curl) this.out.write(`  reproduce: ${pc.dim(r.evidence.curl)}\n`);
      }
    }
    const { passed, failed, skipped } = report.summary;
    const gating = failures.filter((r) => failsRun(r.level, report.strictAssumptions)).length;
    const verdict =
      gating > 0
        ? pc.red(pc.bold(`FAILED: ${gating} required check${gating === 1 ? '' : 's'} failed`))
        : pc.green(pc.bold('PASSED: every must check passed'));
    this.out.write(
      `\n${verdict}  (${passed} passed, ${failed} failed, ${skipped} skipped in ${(report.durationMs / 1000).toFixed(1)} s)\n`,
    );
    for (const file of files) this.out.write(`report: ${file}\n`);
  }
}

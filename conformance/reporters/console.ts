/**
 * The console reporter: one line per check as it finishes (live progress), then a
 * summary by document section, the coverage, every failure led by its reason (what was
 * received, the command that reproduces it, the requests sent, then the clauses), every
 * error, and the verdict. Colour only on a TTY and without NO_COLOR
 * (picocolors decides).
 */
import { explainClauses } from '../core/clauses.ts';
import path from 'node:path';
import pc from 'picocolors';
import type { Capability } from '../core/adapter.ts';
import { failsRun, type Output, type Report, type Result } from '../core/outcome.ts';
import { descriptionCoverageText } from './description-coverage.ts';
import { inputCoverageText } from './input-coverage.ts';
import {
  BODY_SHOWN,
  CAUSE_TEXT,
  countsOf,
  coverageText,
  differencesOf,
  failuresOf,
  reproductionOf,
  verdictOf,
} from './summary.ts';
import type { Follower, ReporterRecord } from './reporter.ts';

const mark = (r: Result, strict: boolean) =>
  r.status === 'passed'
    ? pc.green('✓')
    : r.status === 'skipped'
      ? pc.dim('-')
      : r.status === 'error'
        ? pc.magenta('E')
        : r.status === 'differs'
          ? pc.yellow('≠')
          : failsRun(r.level, strict)
            ? pc.red('✗')
            : pc.yellow('!');

const firstLine = (text: string) => text.split('\n')[0]!.slice(0, 200);
const indent = (text: string) => text.replace(/^/gm, '  ');
/** The lines of a multi-step transcript the console shows; the file reports keep every step. */
const TRANSCRIPT_SHOWN = 24;

/**
 * "received: HTTP/1.1 200, body (first 300 characters):" and the body, from an evidence
 * that holds an HTTP answer; nothing when it holds none (a client's transcript).
 */
function receivedOf(r: Result): string | undefined {
  const response = r.evidence?.response;
  if (!response?.startsWith('HTTP/')) return undefined;
  const blank = response.indexOf('\n\n');
  const status = response.split('\n')[0]!;
  const body = blank < 0 ? '' : response.slice(blank + 2);
  if (!body) return `  received: ${status}, no body\n`;
  const cut = body.length > BODY_SHOWN;
  const what = cut ? `body, first ${BODY_SHOWN} of ${body.length} characters` : 'body';
  return `  received: ${status}, ${what} (secrets replaced):\n${pc.dim(indent(indent(cut ? `${body.slice(0, BODY_SHOWN)}…` : body)))}\n`;
}

export class ConsoleReporter implements Follower {
  private done = 0;

  constructor(
    private readonly out: Output,
    private readonly total: number,
    private readonly strict: boolean,
  ) {}

  start(target: string, adapter: string, capabilities: Capability[]): void {
    const offers = capabilities.length === 0 ? 'no capability' : capabilities.join(', ');
    this.out.write(`${pc.bold('payment-conformance')} ${target}: ${this.total} checks\n`);
    this.out.write(pc.dim(`adapter: ${adapter} (${offers})\n`));
  }

  result(r: Result): void {
    this.done += 1;
    const counter = pc.dim(`[${String(this.done).padStart(String(this.total).length)}/${this.total}]`);
    const level = r.level === 'must' ? '' : pc.dim(` (${r.level})`);
    const tail =
      r.status === 'skipped'
        ? pc.dim(` skipped: ${r.reason}`)
        : r.status === 'failed'
          ? ` ${pc.red(firstLine(r.reason))}`
          : r.status === 'differs'
            ? ` ${pc.yellow(`differs from our modelling: ${firstLine(r.reason)}`)}`
            : r.status === 'error'
              ? ` ${pc.magenta(`error: ${firstLine(r.reason)}`)}`
              : pc.dim(` ${r.durationMs} ms${r.reason ? `: ${firstLine(r.reason)}` : ''}`);
    this.out.write(`${counter} ${mark(r, this.strict)} ${pc.bold(r.id)} ${r.title}${level}${tail}\n`);
  }

  /**
   * What a failure's reader needs after the reason: what was received (its body redacted,
   * cut at a stated length), the command that reproduces it, then the requests as sent.
   */
  private evidence(r: Result, report: Report, json: string | undefined, shown: Map<string, string>): void {
    const received = receivedOf(r);
    if (received) this.out.write(received);
    const again = reproductionOf(report, r.id, json);
    if (again) this.out.write(`  reproduce: ${again}\n`);
    const scenario = r.evidence?.request.startsWith('scenario: ') ? r.evidence.request.split('\n')[0] : undefined;
    if (scenario) this.out.write(`  ${scenario}\n`);
    const curl = r.evidence?.curl;
    if (!curl) return;
    const first = curl.includes('\n') ? shown.get(curl) : undefined;
    if (first) {
      this.out.write(pc.dim(`  sent: the requests shown under ${first}\n`));
      return;
    }
    shown.set(curl, r.id);
    // The run's own organisations and tokens are not kept: a line names them by shell
    // variables, and `repro` makes its own.
    const note = pc.dim(' (credentials: those of organisations the run made, shown as shell variables)');
    if (!curl.includes('\n')) {
      this.out.write(`  sent: ${pc.dim(curl)}\n`);
      return;
    }
    const lines = curl.split('\n');
    const more =
      lines.length > TRANSCRIPT_SHOWN
        ? `\n    … ${lines.length - TRANSCRIPT_SHOWN} more lines: the JSON and HTML reports hold them all`
        : '';
    this.out.write(`  sent:${note}\n${pc.dim(indent(indent(lines.slice(0, TRANSCRIPT_SHOWN).join('\n'))) + more)}\n`);
  }

  /** The clause ids a failure breaks; their words with --verbose. */
  private clauses(r: Result): void {
    if (r.clauses.length === 0) return;
    if (this.out.verbose) {
      for (const line of explainClauses(r.clauses)) this.out.write(`  ${pc.dim(line)}\n`);
      return;
    }
    this.out.write(pc.dim(`  clauses: ${r.clauses.join(', ')} (their words: --verbose, or the HTML report)\n`));
  }

  summary(report: Report, files: string[]): void {
    const sections = new Map<string, Result[]>();
    for (const r of report.results) sections.set(r.section, [...(sections.get(r.section) ?? []), r]);
    this.out.write(`\n${pc.bold('By section of the service document')}\n`);
    for (const [name, results] of sections) {
      const count = (s: Result['status']) => results.filter((r) => r.status === s).length;
      const failed = count('failed');
      const errors = count('error');
      const differs = count('differs');
      const line = `${String(count('passed')).padStart(3)} passed  ${String(failed).padStart(2)} failed  ${String(count('skipped')).padStart(2)} skipped${differs > 0 ? `  ${differs} differs` : ''}${errors > 0 ? `  ${errors} error` : ''}  ${name}`;
      this.out.write(`  ${failed > 0 ? pc.red(line) : errors > 0 ? pc.magenta(line) : line}\n`);
    }
    this.out.write(`\n${coverageText(report.coverage)}\n`);
    if (report.descriptionCoverage) this.out.write(`\n${descriptionCoverageText(report.descriptionCoverage)}`);
    if (report.inputCoverage) this.out.write(`\n${inputCoverageText(report.inputCoverage)}`);
    const { gating, soft } = failuresOf(report);
    const json = files.find((file) => path.basename(file) === 'conformance.json');
    // A transcript several checks judge (one client scenario) is shown once, under the first.
    const shown = new Map<string, string>();
    if (gating.length + soft.length > 0) {
      this.out.write(`\n${pc.bold('Failures')}\n`);
      for (const r of [...gating, ...soft]) {
        const gate = failsRun(r.level, report.strictAssumptions)
          ? ''
          : pc.yellow(` [${r.level}: does not fail the run]`);
        this.out.write(`\n${pc.red(pc.bold(r.id))} ${r.title}${gate}\n${indent(r.reason)}\n`);
        this.evidence(r, report, json, shown);
        this.clauses(r);
      }
    }
    const differences = differencesOf(report);
    if (differences.length > 0) {
      this.out.write(
        `\n${pc.bold('Differences from our modelling')} ${pc.dim('(the document allows it; a rule of ours does not: failures only with --strict-assumptions)')}\n`,
      );
      for (const r of differences) {
        this.out.write(
          `\n${pc.yellow(pc.bold(r.id))} ${r.title}\n  ${pc.dim(`assumption: ${r.assumption ?? 'our modelling'}`)}\n  ${r.reason}\n`,
        );
        this.evidence(r, report, json, shown);
        this.clauses(r);
      }
    }
    const errors = report.results.filter((r) => r.status === 'error');
    if (errors.length > 0) {
      this.out.write(`\n${pc.bold('Errors')} ${pc.dim('(no verdict on the target, either way)')}\n`);
      for (const r of errors)
        this.out.write(
          `\n${pc.magenta(pc.bold(r.id))} ${r.title}\n  ${pc.dim(CAUSE_TEXT[r.cause ?? 'adapter'])}\n  ${r.reason}\n`,
        );
    }
    const verdict = verdictOf(report);
    const colour = verdict.kind === 'failed' ? pc.red : verdict.kind === 'error' ? pc.magenta : pc.green;
    this.out.write(
      `\n${colour(pc.bold(verdict.text))}\n${countsOf(report)} in ${(report.durationMs / 1000).toFixed(1)} s\n`,
    );
    for (const file of files) this.out.write(`report: ${file}\n`);
    const { must } = report.coverage;
    this.out.write(`${must.judged} of ${must.total} must checks judged\n`);
  }
}

export const consoleReporter = {
  name: 'console',
  follow: (output, total, strictAssumptions) => new ConsoleReporter(output, total, strictAssumptions),
} as const satisfies ReporterRecord;

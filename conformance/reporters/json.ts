/**
 * The JSON report (DIR/conformance.json), in its fixed format (conformance/README.md,
 * "Reports"), with the adapter that drove the target and the run's coverage beside it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Report } from '../core/outcome.ts';
import type { ReporterRecord } from './reporter.ts';

export function jsonReport(report: Report): string {
  return `${JSON.stringify(
    {
      target: report.target,
      startedAt: report.startedAt,
      durationMs: report.durationMs,
      tool: report.tool,
      adapter: report.adapter,
      summary: report.summary,
      coverage: report.coverage,
      ...(report.descriptionCoverage ? { descriptionCoverage: report.descriptionCoverage } : {}),
      ...(report.inputCoverage ? { inputCoverage: report.inputCoverage } : {}),
      ...(report.invocation ? { invocation: report.invocation } : {}),
      results: report.results.map((r) => ({
        id: r.id,
        clauses: r.clauses,
        rule: r.rule,
        level: r.level,
        title: r.title,
        status: r.status,
        reason: r.reason,
        ...(r.assumption ? { assumption: r.assumption } : {}),
        ...(r.status === 'error' ? { cause: r.cause ?? 'adapter' } : {}),
        requires: r.requires,
        ...(r.evidence ? { evidence: r.evidence } : {}),
      })),
    },
    null,
    2,
  )}\n`;
}

export function writeJsonReport(report: Report, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'conformance.json');
  writeFileSync(file, jsonReport(report));
  return file;
}

export const jsonReporter = { name: 'json', write: writeJsonReport } as const satisfies ReporterRecord;

/** The JSON report, exactly in the format the design fixes (DIR/conformance.json). */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Report } from '../types.ts';

export function jsonReport(report: Report): string {
  return `${JSON.stringify(
    {
      target: report.target,
      startedAt: report.startedAt,
      durationMs: report.durationMs,
      summary: report.summary,
      results: report.results.map((r) => ({
        id: r.id,
        rule: r.rule,
        level: r.level,
        title: r.title,
        status: r.status,
        reason: r.reason,
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

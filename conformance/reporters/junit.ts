/**
 * JUnit XML for CI (DIR/conformance.junit.xml): one testsuite per document section, one
 * testcase per check. Only failures that fail the run are <failure>; a failed `should`
 * or `assumption` check is reported as <skipped> with the reason, so CI stays green
 * exactly when the exit status is 0.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { failsRun, type Report, type Result } from '../types.ts';

/** Any character XML 1.0 forbids (https://www.w3.org/TR/xml/#charsets). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the allowed set names the three control characters XML keeps
const NOT_XML = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

export function xmlEscape(text: string): string {
  // Characters XML 1.0 forbids are dropped; the five special ones escaped.
  return text
    .replace(NOT_XML, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

function testcase(r: Result, strict: boolean): string {
  const head = `    <testcase classname="${xmlEscape(`conformance.${r.section}`)}" name="${xmlEscape(`${r.id} [${r.level}] ${r.title}`)}" time="${(r.durationMs / 1000).toFixed(3)}">`;
  if (r.status === 'passed') return `${head}</testcase>`;
  if (r.status === 'skipped') return `${head}\n      <skipped message="${xmlEscape(r.reason)}"/>\n    </testcase>`;
  const detail = [
    r.reason,
    r.evidence?.request && `--- request\n${r.evidence.request}`,
    r.evidence?.response && `--- response\n${r.evidence.response}`,
    r.evidence?.curl && `--- reproduce\n${r.evidence.curl}`,
  ]
    .filter(Boolean)
    .join('\n\n');
  if (!failsRun(r.level, strict))
    return `${head}\n      <skipped message="${xmlEscape(`${r.level} check failed (does not fail the run): ${r.reason}`)}"/>\n      <system-out>${xmlEscape(detail)}</system-out>\n    </testcase>`;
  return `${head}\n      <failure message="${xmlEscape(r.reason)}" type="${r.level}">${xmlEscape(detail)}</failure>\n    </testcase>`;
}

export function junitReport(report: Report): string {
  const sections = new Map<string, Result[]>();
  for (const r of report.results) sections.set(r.section, [...(sections.get(r.section) ?? []), r]);
  const suites = [...sections.entries()].map(([name, results]) => {
    const failures = results.filter((r) => r.status === 'failed' && failsRun(r.level, report.strictAssumptions)).length;
    const skipped = results.filter(
      (r) => r.status === 'skipped' || (r.status === 'failed' && !failsRun(r.level, report.strictAssumptions)),
    ).length;
    const time = results.reduce((sum, r) => sum + r.durationMs, 0) / 1000;
    return `  <testsuite name="${xmlEscape(name)}" tests="${results.length}" failures="${failures}" errors="0" skipped="${skipped}" time="${time.toFixed(3)}" timestamp="${xmlEscape(report.startedAt)}">\n${results.map((r) => testcase(r, report.strictAssumptions)).join('\n')}\n  </testsuite>`;
  });
  const failures = report.results.filter(
    (r) => r.status === 'failed' && failsRun(r.level, report.strictAssumptions),
  ).length;
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="${xmlEscape(`payment-conformance ${report.target}`)}" tests="${report.results.length}" failures="${failures}" time="${(report.durationMs / 1000).toFixed(3)}">\n${suites.join('\n')}\n</testsuites>\n`;
}

export function writeJunitReport(report: Report, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'conformance.junit.xml');
  writeFileSync(file, junitReport(report));
  return file;
}

/**
 * JUnit XML for CI (DIR/conformance.junit.xml): a first testsuite "coverage" with the
 * run's coverage as properties, for `run` a testsuite "description-coverage" with what the
 * run exercised of the description, then one testsuite per document section, one testcase
 * per check. Only failures that fail the run are <failure>; a failed `should` check, and one
 * that differs from our modelling, is <skipped> with the reason (and a `status` property),
 * and a check that could not be judged is <error>, so CI agrees with the exit status.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { failsRun, type Report, type Result } from '../core/outcome.ts';
import type { DescriptionCoverage } from '../core/description-coverage.ts';
import type { InputCoverage } from '../core/input-coverage.ts';
import { descriptionCoverageProperties, descriptionCoverageSystemOut } from './description-coverage.ts';
import { inputCoverageProperties, inputCoverageText } from './input-coverage.ts';
import { coverageText, reproductionOf, skipGroups } from './summary.ts';
import type { ReporterRecord, Written } from './reporter.ts';

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

function testcase(r: Result, strict: boolean, reproduce: string | undefined): string {
  // The clauses ride as a testcase property (read by Jenkins, GitLab and most JUnit readers).
  const properties = [
    ['clauses', r.clauses.join(',')],
    ['status', r.status],
    ...(r.assumption ? [['assumption', r.assumption]] : []),
    ...(r.status === 'error' ? [['cause', r.cause ?? 'adapter']] : []),
  ]
    .map(([name, value]) => `<property name="${name}" value="${xmlEscape(value!)}"/>`)
    .join('');
  const head = `    <testcase classname="${xmlEscape(`conformance.${r.section}`)}" name="${xmlEscape(`${r.id} [${r.level}] ${r.title}`)}" time="${(r.durationMs / 1000).toFixed(3)}">\n      <properties>${properties}</properties>`;
  if (r.status === 'passed') return `${head}\n    </testcase>`;
  if (r.status === 'skipped') return `${head}\n      <skipped message="${xmlEscape(r.reason)}"/>\n    </testcase>`;
  if (r.status === 'error')
    return `${head}\n      <error message="${xmlEscape(r.reason)}" type="${r.cause === 'adapter' || r.cause === undefined ? 'AdapterError' : 'NoVerdict'}">${xmlEscape(r.reason)}</error>\n    </testcase>`;
  const detail = [
    r.reason,
    r.evidence?.request && `--- request\n${r.evidence.request}`,
    r.evidence?.response && `--- response\n${r.evidence.response}`,
    reproduce && `--- reproduce\n${reproduce}`,
    r.evidence?.curl && `--- sent (credentials of organisations the run made, as shell variables)\n${r.evidence.curl}`,
  ]
    .filter(Boolean)
    .join('\n\n');
  if (r.status === 'differs')
    return `${head}\n      <skipped message="${xmlEscape(`differs from our modelling (${r.assumption ?? 'assumption'}; fails only with --strict-assumptions): ${r.reason}`)}"/>\n      <system-out>${xmlEscape(detail)}</system-out>\n    </testcase>`;
  if (!failsRun(r.level, strict))
    return `${head}\n      <skipped message="${xmlEscape(`${r.level} check failed (does not fail the run): ${r.reason}`)}"/>\n      <system-out>${xmlEscape(detail)}</system-out>\n    </testcase>`;
  return `${head}\n      <failure message="${xmlEscape(r.reason)}" type="${r.level}">${xmlEscape(detail)}</failure>\n    </testcase>`;
}

function coverageSuite(report: Report): string {
  const { coverage } = report;
  const properties = [
    ['adapter', report.adapter.name],
    ['tool.version', `${report.tool.name} ${report.tool.version}`],
    ['clause-register.version', report.tool.clauseRegisterVersion],
    ['adapter.capabilities', report.adapter.capabilities.join(',')],
    ['coverage.judged', String(coverage.judged)],
    ['coverage.total', String(coverage.total)],
    ['coverage.must.judged', String(coverage.must.judged)],
    ['coverage.must.total', String(coverage.must.total)],
    ...skipGroups(coverage).map((g) => [`coverage.skipped.${g.what.replace(/ /g, '-')}`, String(g.count)]),
  ];
  const lines = properties.map(
    ([name, value]) => `      <property name="${xmlEscape(name!)}" value="${xmlEscape(value!)}"/>`,
  );
  return `  <testsuite name="coverage" tests="0" failures="0" errors="0" skipped="0" time="0" timestamp="${xmlEscape(report.startedAt)}">\n    <properties>\n${lines.join('\n')}\n    </properties>\n    <system-out>${xmlEscape(coverageText(coverage))}</system-out>\n  </testsuite>`;
}

/** What the run exercised of the description, as properties of a testsuite with no testcase (README, "Description coverage"). */
function inputCoverageSuite(report: Report, c: InputCoverage): string {
  const lines = inputCoverageProperties(c).map(
    ([name, value]) => `      <property name="${xmlEscape(name)}" value="${xmlEscape(value)}"/>`,
  );
  return `  <testsuite name="input-coverage" tests="0" failures="0" errors="0" skipped="0" time="0" timestamp="${xmlEscape(report.startedAt)}">\n    <properties>\n${lines.join('\n')}\n    </properties>\n    <system-out>${xmlEscape(inputCoverageText(c))}</system-out>\n  </testsuite>`;
}

function descriptionCoverageSuite(report: Report, c: DescriptionCoverage): string {
  const lines = descriptionCoverageProperties(c).map(
    ([name, value]) => `      <property name="${xmlEscape(name)}" value="${xmlEscape(value)}"/>`,
  );
  return `  <testsuite name="description-coverage" tests="0" failures="0" errors="0" skipped="0" time="0" timestamp="${xmlEscape(report.startedAt)}">\n    <properties>\n${lines.join('\n')}\n    </properties>\n    <system-out>${xmlEscape(descriptionCoverageSystemOut(c))}</system-out>\n  </testsuite>`;
}

export function junitReport(report: Report, jsonFile?: string): string {
  const strict = report.strictAssumptions;
  const sections = new Map<string, Result[]>();
  for (const r of report.results) sections.set(r.section, [...(sections.get(r.section) ?? []), r]);
  const failuresIn = (results: Result[]) =>
    results.filter((r) => r.status === 'failed' && failsRun(r.level, strict)).length;
  const errorsIn = (results: Result[]) => results.filter((r) => r.status === 'error').length;
  const suites = [...sections.entries()].map(([name, results]) => {
    const skipped = results.filter(
      (r) => r.status === 'skipped' || r.status === 'differs' || (r.status === 'failed' && !failsRun(r.level, strict)),
    ).length;
    const time = results.reduce((sum, r) => sum + r.durationMs, 0) / 1000;
    return `  <testsuite name="${xmlEscape(name)}" tests="${results.length}" failures="${failuresIn(results)}" errors="${errorsIn(results)}" skipped="${skipped}" time="${time.toFixed(3)}" timestamp="${xmlEscape(report.startedAt)}">\n${results.map((r) => testcase(r, strict, reproductionOf(report, r.id, jsonFile))).join('\n')}\n  </testsuite>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="${xmlEscape(`payment-conformance ${report.target}`)}" tests="${report.results.length}" failures="${failuresIn(report.results)}" errors="${errorsIn(report.results)}" time="${(report.durationMs / 1000).toFixed(3)}">\n${[coverageSuite(report), ...(report.descriptionCoverage ? [descriptionCoverageSuite(report, report.descriptionCoverage)] : []), ...(report.inputCoverage ? [inputCoverageSuite(report, report.inputCoverage)] : []), ...suites].join('\n')}\n</testsuites>\n`;
}

export function writeJunitReport(report: Report, dir: string, others: Written = {}): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'conformance.junit.xml');
  writeFileSync(file, junitReport(report, others.json));
  return file;
}

export const junitReporter = {
  name: 'junit',
  write: (report, dir, _traffic, others) => writeJunitReport(report, dir, others),
} as const satisfies ReporterRecord;

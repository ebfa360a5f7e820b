/**
 * A single self-contained HTML report (DIR/conformance.html): results by document
 * section, each failure with its evidence (the request, the response) and a curl line
 * that reproduces it. No external resource of any kind; every value is escaped.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { failsRun, type Report, type Result } from '../types.ts';

export function htmlEscape(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const STYLE = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1b1f24}
h1{font-size:1.4rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin:2rem 0 .5rem;border-bottom:1px solid #d0d7de;padding-bottom:.25rem}
.meta{color:#57606a}.verdict{font-weight:700;padding:.5rem .75rem;border-radius:6px;display:inline-block;margin:.75rem 0}
.ok{background:#dafbe1;color:#116329}.bad{background:#ffebe9;color:#a40e26}
table{border-collapse:collapse;width:100%;table-layout:fixed}td:nth-child(1){width:5rem}td:nth-child(2){width:9.5rem}
table.summary{width:auto;table-layout:auto}table.summary td{width:auto}td,th{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #eaeef2;vertical-align:top}
.passed{color:#116329}.failed{color:#a40e26}.soft{color:#9a6700}.skipped{color:#57606a}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}pre{background:#f6f8fa;padding:.5rem;overflow:auto;white-space:pre-wrap;word-break:break-all;margin:.25rem 0}
details{margin:.25rem 0}summary{cursor:pointer;color:#0969da}.level{font-size:11px;color:#57606a;border:1px solid #d0d7de;border-radius:3px;padding:0 .3rem}
`;

function row(r: Result, strict: boolean): string {
  const cls = r.status === 'failed' && !failsRun(r.level, strict) ? 'soft' : r.status;
  const evidence = r.evidence
    ? `<details><summary>evidence</summary><div>request</div><pre>${htmlEscape(r.evidence.request)}</pre><div>response</div><pre>${htmlEscape(r.evidence.response)}</pre>${r.evidence.curl ? `<div>reproduce</div><pre>${htmlEscape(r.evidence.curl)}</pre>` : ''}</details>`
    : '';
  return `<tr id="${htmlEscape(r.id)}"><td class="${cls}">${htmlEscape(r.status)}</td><td><code>${htmlEscape(r.id)}</code> <span class="level">${htmlEscape(r.level)}</span></td><td>${htmlEscape(r.title)}<div class="meta">${htmlEscape(r.rule)}</div>${r.reason ? `<div class="${cls}">${htmlEscape(r.reason)}</div>` : ''}${evidence}</td></tr>`;
}

export function htmlReport(report: Report): string {
  const sections = new Map<string, Result[]>();
  for (const r of report.results) sections.set(r.section, [...(sections.get(r.section) ?? []), r]);
  const gating = report.results.filter(
    (r) => r.status === 'failed' && failsRun(r.level, report.strictAssumptions),
  ).length;
  const body = [...sections.entries()]
    .map(([name, results]) => {
      const failed = results.filter((r) => r.status === 'failed').length;
      return `<h2>${htmlEscape(name)} <span class="meta">${results.length - failed} of ${results.length} not failed</span></h2><table><tbody>${results.map((r) => row(r, report.strictAssumptions)).join('')}</tbody></table>`;
    })
    .join('\n');
  const overview = [...sections.entries()]
    .map(([name, results]) => {
      const n = (s: Result['status']) => results.filter((r) => r.status === s).length;
      return `<tr><td class="passed">${n('passed')}</td><td class="${n('failed') > 0 ? 'failed' : 'meta'}">${n('failed')}</td><td class="skipped">${n('skipped')}</td><td>${htmlEscape(name)}</td></tr>`;
    })
    .join('');
  const { passed, failed, skipped } = report.summary;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Conformance report: ${htmlEscape(report.target)}</title><style>${STYLE}</style></head>
<body><h1>Conformance report</h1>
<div class="meta">target <code>${htmlEscape(report.target)}</code>, started ${htmlEscape(report.startedAt)}, ${(report.durationMs / 1000).toFixed(1)} s</div>
<div class="verdict ${gating > 0 ? 'bad' : 'ok'}">${gating > 0 ? `FAILED: ${gating} required check${gating === 1 ? '' : 's'} failed` : 'PASSED: every must check passed'} (${passed} passed, ${failed} failed, ${skipped} skipped)</div>
<table class="summary"><thead><tr><th>passed</th><th>failed</th><th>skipped</th><th>section of the service document</th></tr></thead><tbody>${overview}</tbody></table>
${body}
</body></html>
`;
}

export function writeHtmlReport(report: Report, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'conformance.html');
  writeFileSync(file, htmlReport(report));
  return file;
}

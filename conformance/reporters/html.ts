/**
 * A single self-contained HTML report (DIR/conformance.html): the verdict, the coverage,
 * a failures-first list linking to each check, then the results by document section, each
 * failure with its evidence (the request, the response) and a curl line that reproduces
 * it. Every check and section has an anchor; a filter shows one status or what matches a
 * text. No external resource of any kind; every value is escaped.
 */
import { clause, wordsOf } from '../core/clauses.ts';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { failsRun, type Report, type Result } from '../core/outcome.ts';
import { descriptionCoverageHtml } from './description-coverage.ts';
import { inputCoverageHtml } from './input-coverage.ts';
import {
  CAUSE_TEXT,
  countsOf,
  coverageText,
  differencesOf,
  failuresOf,
  reproductionOf,
  skipGroups,
  verdictOf,
} from './summary.ts';
import type { ReporterRecord, Written } from './reporter.ts';

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
.meta{color:#57606a;font-weight:400;font-size:13px}.verdict{font-weight:700;padding:.5rem .75rem;border-radius:6px;display:inline-block;margin:.75rem 0 .25rem}
.ok{background:#dafbe1;color:#116329}.bad{background:#ffebe9;color:#a40e26}.err{background:#fbefff;color:#8250df}
table{border-collapse:collapse;width:100%;table-layout:fixed}td:nth-child(1){width:5rem}td:nth-child(2){width:9.5rem}
table.plain{width:auto;table-layout:auto}table.plain td{width:auto}td,th{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #eaeef2;vertical-align:top}
.passed{color:#116329}.failed{color:#a40e26}.soft,.differs{color:#9a6700}.skipped{color:#57606a}.error{color:#8250df}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}pre{background:#f6f8fa;padding:.5rem;overflow:auto;white-space:pre-wrap;word-break:break-all;margin:.25rem 0}
details{margin:.25rem 0}summary{cursor:pointer;color:#0969da}.level{font-size:11px;color:#57606a;border:1px solid #d0d7de;border-radius:3px;padding:0 .3rem}
a{color:#0969da}tr:target{background:#fff8c5}[id]{scroll-margin-top:6rem}ol.attention li{margin:.2rem 0}
.filter{position:sticky;top:0;background:#fff;padding:.5rem 0;border-bottom:1px solid #d0d7de;display:flex;gap:.75rem;flex-wrap:wrap;align-items:center}
.filter input[type=search]{font:inherit;padding:.2rem .4rem;min-width:16rem}
`;

/** Shows the rows of the chosen status that match the text; hides emptied sections. */
const FILTER_SCRIPT = `
const form = document.getElementById('filter');
function apply() {
  const status = form.elements.status.value;
  const words = form.elements.text.value.trim().toLowerCase();
  for (const row of document.querySelectorAll('tr[data-status]')) {
    const shown = (status === 'all' || row.dataset.status === status) && (!words || row.textContent.toLowerCase().includes(words));
    row.hidden = !shown;
  }
  for (const section of document.querySelectorAll('section.results')) {
    section.hidden = !section.querySelector('tr[data-status]:not([hidden])');
  }
}
form.addEventListener('input', apply);
form.addEventListener('submit', (event) => event.preventDefault());
`;

const slug = (text: string) =>
  `section-${text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')}`;

/** The class a result's status is shown in: a failure that does not fail the run is "soft". */
function statusClass(r: Result, strict: boolean): string {
  return r.status === 'failed' && !failsRun(r.level, strict) ? 'soft' : r.status;
}

function row(r: Result, strict: boolean, reproduce: string | undefined): string {
  const cls = statusClass(r, strict);
  const judgedAgainst = r.status === 'failed' || r.status === 'differs';
  const again = judgedAgainst && reproduce ? `<div>reproduce</div><pre>${htmlEscape(reproduce)}</pre>` : '';
  const evidence = r.evidence
    ? `<details><summary>evidence</summary><div>request</div><pre>${htmlEscape(r.evidence.request)}</pre><div>response</div><pre>${htmlEscape(r.evidence.response)}</pre>${again}${r.evidence.curl ? `<div>sent (credentials of organisations the run made, as shell variables)</div><pre>${htmlEscape(r.evidence.curl)}</pre>` : ''}</details>`
    : again;
  const words = judgedAgainst
    ? `<details><summary>clauses, in the document’s words</summary><ul>${r.clauses.map((id) => `<li><code>${htmlEscape(id)}</code> ${htmlEscape(wordsOf(clause(id)))}</li>`).join('')}</ul></details>`
    : '';
  const requires = r.requires.length > 0 ? `<div class="meta">requires ${htmlEscape(r.requires.join(', '))}</div>` : '';
  const assumption = r.assumption ? `<div class="meta">assumption: ${htmlEscape(r.assumption)}</div>` : '';
  const cause = r.status === 'error' ? `<div class="meta">${htmlEscape(CAUSE_TEXT[r.cause ?? 'adapter'])}</div>` : '';
  return `<tr id="${htmlEscape(r.id)}" data-status="${htmlEscape(r.status)}"><td class="${cls}">${htmlEscape(r.status)}</td><td><a href="#${htmlEscape(r.id)}"><code>${htmlEscape(r.id)}</code></a> <span class="level">${htmlEscape(r.level)}</span></td><td>${htmlEscape(r.title)}<div class="meta">${r.clauses.map((id) => `<abbr class="clause" title="${htmlEscape(wordsOf(clause(id)))}">${htmlEscape(id)}</abbr>`).join(', ')}</div>${requires}${assumption}${cause}${r.reason ? `<div class="${cls}">${htmlEscape(r.reason)}</div>` : ''}${evidence}${words}</td></tr>`;
}

function counts(results: Result[]): string {
  const n = (s: Result['status']) => results.filter((r) => r.status === s).length;
  const parts = [`${n('passed')} passed`, `${n('failed')} failed`];
  if (n('differs') > 0) parts.push(`${n('differs')} differs`);
  parts.push(`${n('skipped')} skipped`);
  if (n('error') > 0) parts.push(`${n('error')} error`);
  return `${results.length} check${results.length === 1 ? '' : 's'}: ${parts.join(', ')}`;
}

/** What a result in the failures-first list is called. */
function label(r: Result, strict: boolean): string {
  if (r.status === 'error') return 'error';
  if (r.status === 'differs') return 'differs from our modelling';
  return statusClass(r, strict) === 'soft' ? `${r.level}, does not fail the run` : 'failed';
}

/** Failures that fail the run, then the other failures, the differences and the errors: each a link to its check. */
function attention(report: Report): string {
  const { gating, soft } = failuresOf(report);
  const errors = report.results.filter((r) => r.status === 'error');
  const items = [...gating, ...soft, ...differencesOf(report), ...errors];
  if (items.length === 0) return '';
  const item = (r: Result) =>
    `<li><a href="#${htmlEscape(r.id)}"><code>${htmlEscape(r.id)}</code></a> <span class="${statusClass(r, report.strictAssumptions)}">${htmlEscape(label(r, report.strictAssumptions))}</span> ${htmlEscape(r.title)}<div class="meta">${htmlEscape(r.reason.split('\n')[0]!.slice(0, 300))}</div></li>`;
  return `<section id="attention"><h2>Failures first <span class="meta">${items.length}</span></h2><ol class="attention">${items.map(item).join('')}</ol></section>`;
}

function coverage(report: Report): string {
  const groups = skipGroups(report.coverage);
  const rows = groups.map((g) => `<tr><td>${htmlEscape(g.what)}</td><td>${g.count}</td></tr>`).join('');
  const table =
    groups.length > 0
      ? `<table class="plain"><thead><tr><th>skipped for</th><th>checks</th></tr></thead><tbody>${rows}</tbody></table>`
      : '';
  return `<section id="coverage"><h2>Coverage</h2><p>${htmlEscape(coverageText(report.coverage))}.</p>${table}</section>`;
}

export function htmlReport(report: Report, jsonFile?: string): string {
  const strict = report.strictAssumptions;
  const sections = new Map<string, Result[]>();
  for (const r of report.results) sections.set(r.section, [...(sections.get(r.section) ?? []), r]);
  const verdict = verdictOf(report);
  const verdictClass = verdict.kind === 'failed' ? 'bad' : verdict.kind === 'error' ? 'err' : 'ok';
  const body = [...sections.entries()]
    .map(
      ([name, results]) =>
        `<section class="results" id="${slug(name)}"><h2><a href="#${slug(name)}">${htmlEscape(name)}</a> <span class="meta">${counts(results)}</span></h2><table><tbody>${results.map((r) => row(r, strict, reproductionOf(report, r.id, jsonFile))).join('')}</tbody></table></section>`,
    )
    .join('\n');
  const overview = [...sections.entries()]
    .map(([name, results]) => {
      const n = (s: Result['status']) => results.filter((r) => r.status === s).length;
      return `<tr><td class="passed">${n('passed')}</td><td class="${n('failed') > 0 ? 'failed' : 'meta'}">${n('failed')}</td><td class="${n('differs') > 0 ? 'differs' : 'meta'}">${n('differs')}</td><td class="skipped">${n('skipped')}</td><td class="${n('error') > 0 ? 'error' : 'meta'}">${n('error')}</td><td><a href="#${slug(name)}">${htmlEscape(name)}</a></td></tr>`;
    })
    .join('');
  const capabilities =
    report.adapter.capabilities.length > 0 ? report.adapter.capabilities.join(', ') : 'no capability';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Conformance report: ${htmlEscape(report.target)}</title><style>${STYLE}</style></head>
<body><h1>Conformance report</h1>
<div class="meta">target <code>${htmlEscape(report.target)}</code>, adapter ${htmlEscape(report.adapter.name)} (${htmlEscape(capabilities)}), started ${htmlEscape(report.startedAt)}, ${(report.durationMs / 1000).toFixed(1)} s; ${htmlEscape(report.tool.name)} ${htmlEscape(report.tool.version)}, clause register ${htmlEscape(report.tool.clauseRegisterVersion)}</div>
<div class="verdict ${verdictClass}">${htmlEscape(verdict.text)}</div>
<div class="meta">${htmlEscape(countsOf(report))}</div>
${attention(report)}
${coverage(report)}
${report.descriptionCoverage ? descriptionCoverageHtml(report.descriptionCoverage, htmlEscape) : ''}
${report.inputCoverage ? inputCoverageHtml(report.inputCoverage, htmlEscape) : ''}
<section id="sections"><h2>By section of the service document</h2><table class="plain"><thead><tr><th>passed</th><th>failed</th><th>differs</th><th>skipped</th><th>error</th><th>section</th></tr></thead><tbody>${overview}</tbody></table></section>
<form class="filter" id="filter" aria-label="Filter the results"><strong>Show</strong>
${['all', 'failed', 'differs', 'error', 'skipped', 'passed'].map((s) => `<label><input type="radio" name="status" value="${s}"${s === 'all' ? ' checked' : ''}> ${s}</label>`).join('\n')}
<input type="search" name="text" placeholder="id, title or reason" aria-label="Text to match"></form>
${body}
<script>${FILTER_SCRIPT}</script>
</body></html>
`;
}

export function writeHtmlReport(report: Report, dir: string, others: Written = {}): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'conformance.html');
  writeFileSync(file, htmlReport(report, others.json));
  return file;
}

export const htmlReporter = {
  name: 'html',
  write: (report, dir, _traffic, others) => writeHtmlReport(report, dir, others),
} as const satisfies ReporterRecord;

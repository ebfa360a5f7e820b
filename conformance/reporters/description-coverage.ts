/**
 * The description-coverage section of every report (description-coverage.ts computes it):
 * for the console a compact table of each operation's documented statuses exercised, the
 * totals per category and the percentage; for JUnit a testsuite of properties of its own;
 * for HTML a section with every item and the checks that exercised it.
 */
import {
  CATEGORIES,
  CATEGORY_NAMES,
  categoriesText,
  constraintName,
  type DescriptionCoverage,
  notExercised,
} from '../core/description-coverage.ts';

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The operations in the description's order, each with its documented statuses, exercised or not. */
function byOperation(coverage: DescriptionCoverage): Map<string, { exercised: string[]; not: string[] }> {
  const rows = new Map<string, { exercised: string[]; not: string[] }>();
  for (const r of coverage.responses) {
    const row = rows.get(r.operation) ?? { exercised: [], not: [] };
    (r.exercised ? row.exercised : row.not).push(r.status);
    rows.set(r.operation, row);
  }
  return rows;
}

const headline = (c: DescriptionCoverage) =>
  `Description coverage: ${c.percent}% (${c.exercised} of ${c.total} items of ${c.description.title} ${c.description.version})`;

/** The console's section: one line per operation, the totals, and what the target answered beyond the description. */
export function descriptionCoverageText(c: DescriptionCoverage): string {
  const rows = byOperation(c);
  const width = Math.max(...[...rows.keys()].map((k) => k.length));
  const lines = [headline(c)];
  for (const [operation, row] of rows) {
    const total = row.exercised.length + row.not.length;
    const seen = row.exercised.length > 0 ? `  exercised ${row.exercised.join(' ')}` : '';
    const not = row.not.length > 0 ? `  not ${row.not.join(' ')}` : '';
    lines.push(`  ${operation.padEnd(width)}  ${row.exercised.length} of ${total}${seen}${not}`);
  }
  lines.push(`  ${categoriesText(c)}`);
  const events = c.webhookEvents
    .filter((e) => e.exercised)
    .map((e) => `${e.event} ${plural(e.deliveries, 'delivery', 'deliveries')}, ${e.signed} signed`);
  if (events.length > 0) lines.push(`  webhooks received: ${events.join('; ')}`);
  const beyond = [
    ...c.undocumented.responses.map((u) => `${u.operation} ${u.status}`),
    ...c.undocumented.errorCodes.map((u) => `code ${u.code}`),
    ...c.undocumented.webhookEvents.map((u) => `event ${u.event}`),
  ];
  if (beyond.length > 0) lines.push(`  answered by the target, not in the description: ${beyond.join(', ')}`);
  return `${lines.join('\n')}\n`;
}

/** JUnit properties, named `description-coverage.*`. */
export function descriptionCoverageProperties(c: DescriptionCoverage): Array<[string, string]> {
  return [
    ['description-coverage.description', `${c.description.title} ${c.description.version}`],
    ['description-coverage.percent', String(c.percent)],
    ['description-coverage.exercised', String(c.exercised)],
    ['description-coverage.total', String(c.total)],
    ...CATEGORIES.map((k): [string, string] => [
      `description-coverage.${CATEGORY_NAMES[k].replace(/ /g, '-')}`,
      `${c.categories[k].exercised}/${c.categories[k].total}`,
    ]),
    [
      'description-coverage.undocumented',
      String(c.undocumented.responses.length + c.undocumented.errorCodes.length + c.undocumented.webhookEvents.length),
    ],
  ];
}

/** The text under the JUnit testsuite: the console's section and every item not exercised. */
export function descriptionCoverageSystemOut(c: DescriptionCoverage): string {
  const missing = notExercised(c);
  const lines = CATEGORIES.filter((k) => missing[k].length > 0).map(
    (k) => `not exercised, ${CATEGORY_NAMES[k]}: ${missing[k].join(k === 'responses' ? '; ' : ', ')}`,
  );
  return `${descriptionCoverageText(c)}${lines.join('\n')}`;
}

type Escape = (text: string) => string;

/** The HTML section: operations × statuses, then error codes, webhook events, constraints and what lies beyond. */
export function descriptionCoverageHtml(c: DescriptionCoverage, esc: Escape): string {
  const checks = (ids: string[]) =>
    ids.length === 0
      ? ''
      : `<span class="meta" title="${esc(ids.join(', '))}">${esc(plural(ids.length, 'check'))}</span>`;
  const mark = (exercised: boolean) => (exercised ? '<span class="passed">✓</span>' : '<span class="skipped">–</span>');
  const assumed = (a: boolean | undefined) => (a ? ' <span class="level">assumption</span>' : '');
  const statuses = [...new Set(c.responses.map((r) => r.status))].sort();
  const rows = byOperation(c);
  const operationRows = [...rows.keys()]
    .map((operation) => {
      const cells = statuses.map((status) => {
        const r = c.responses.find((x) => x.operation === operation && x.status === status);
        return r
          ? `<td>${mark(r.exercised)} ${checks(r.checks)}${assumed(r.assumption)}</td>`
          : '<td class="meta">n/a</td>';
      });
      return `<tr><td><code>${esc(operation)}</code></td>${cells.join('')}</tr>`;
    })
    .join('');
  const table = (head: string[], body: string[]) =>
    `<table class="plain"><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${body.join('')}</tbody></table>`;
  const part = (title: string, k: (typeof CATEGORIES)[number], content: string) =>
    `<details><summary>${esc(title)} <span class="meta">${c.categories[k].exercised} of ${c.categories[k].total}</span></summary>${content}</details>`;
  const codes = table(
    ['', 'code', 'status', 'answered on', 'checks'],
    c.errorCodes.map(
      (e) =>
        `<tr><td>${mark(e.exercised)}</td><td><code>${esc(e.code)}</code></td><td>${e.status ?? ''}</td><td>${esc(e.operations.join(', '))}</td><td>${checks(e.checks)}</td></tr>`,
    ),
  );
  const events = table(
    ['', 'event', 'deliveries', 'signed', 'checks'],
    c.webhookEvents.map(
      (e) =>
        `<tr><td>${mark(e.exercised)}</td><td><code>${esc(e.event)}</code>${assumed(e.assumption)}</td><td>${e.deliveries}</td><td>${e.signed}</td><td>${checks(e.checks)}</td></tr>`,
    ),
  );
  const constraints = table(
    ['', 'constraint', 'exercised on', 'checks'],
    c.constraints.map(
      (k) =>
        `<tr><td>${mark(k.exercised)}</td><td><code>${esc(constraintName(k))}</code></td><td>${esc(k.exercisedOn.join(', '))}</td><td>${checks(k.checks)}</td></tr>`,
    ),
  );
  const beyond = [
    ...c.undocumented.responses.map(
      (u) => `<li><code>${esc(`${u.operation} ${u.status}`)}</code> ${checks(u.checks)}</li>`,
    ),
    ...c.undocumented.errorCodes.map((u) => `<li>code <code>${esc(u.code)}</code> ${checks(u.checks)}</li>`),
    ...c.undocumented.webhookEvents.map((u) => `<li>event <code>${esc(u.event)}</code> ${checks(u.checks)}</li>`),
  ];
  return `<section id="description-coverage"><h2>Description coverage</h2><p>${esc(`${c.percent}% of ${c.description.title} ${c.description.version} exercised: ${c.exercised} of ${c.total} items (${categoriesText(c)}).`)}</p>
${table(['operation', ...statuses], [operationRows])}
${part('Error codes', 'errorCodes', codes)}
${part('Webhook events', 'webhookEvents', events)}
${part('Constraints of the request bodies', 'constraints', constraints)}
${beyond.length > 0 ? `<h3>Answered by the target, not in the description</h3><ul>${beyond.join('')}</ul>` : ''}</section>`;
}

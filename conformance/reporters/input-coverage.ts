/**
 * The input coverage section of every reporter: what the run exercised of the input space
 * (modes/run/input-space.ts), by operation, and of the configuration table's cells.
 */
import type { InputCoverage } from '../core/input-coverage.ts';

type Escape = (text: string) => string;

const headline = (c: InputCoverage) =>
  `Input coverage: ${c.percent}% (${c.exercised} of ${c.total} input classes; configuration cells ${c.cells.exercised} of ${c.cells.total})`;

/** The console's section: the headline, then one line per operation. */
export function inputCoverageText(c: InputCoverage): string {
  const width = Math.max(...c.byOperation.map((o) => o.operation.length));
  const lines = [headline(c)];
  for (const o of c.byOperation) {
    const not =
      o.notExercised.length > 0
        ? `  not ${o.notExercised.slice(0, 6).join(', ')}${o.notExercised.length > 6 ? ', …' : ''}`
        : '';
    lines.push(`  ${o.operation.padEnd(width)}  ${o.exercised} of ${o.total}${not}`);
  }
  return `${lines.join('\n')}\n`;
}

/** JUnit properties, named `input-coverage.*`. */
export function inputCoverageProperties(c: InputCoverage): Array<[string, string]> {
  return [
    ['input-coverage.percent', String(c.percent)],
    ['input-coverage.exercised', String(c.exercised)],
    ['input-coverage.total', String(c.total)],
    ['input-coverage.cells', `${c.cells.exercised} of ${c.cells.total}`],
    ...c.byOperation.map((o): [string, string] => [`input-coverage.${o.operation}`, `${o.exercised} of ${o.total}`]),
  ];
}

/** The HTML report's section. */
export function inputCoverageHtml(c: InputCoverage, esc: Escape): string {
  const rows = c.byOperation
    .map(
      (o) =>
        `<tr><td><code>${esc(o.operation)}</code></td><td>${o.exercised} of ${o.total}</td><td>${esc(o.notExercised.join(', '))}</td></tr>`,
    )
    .join('');
  return `<section id="input-coverage"><h2>${esc(headline(c))}</h2><table><thead><tr><th>operation</th><th>input classes exercised</th><th>not exercised</th></tr></thead><tbody>${rows}</tbody></table></section>`;
}

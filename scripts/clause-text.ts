/**
 * The words of the service document's clauses, for the suite's register
 * (conformance/core/clause-text.ts, written by `npm run generate`): SERVICE.md is their one
 * home, and the register's version is raised whenever they, or the suite's reading of them
 * (conformance/core/clauses.ts), change.
 */
import { createHash } from 'node:crypto';
import { READING, SECTIONS } from '../conformance/core/clauses.ts';

/**
 * Each anchored clause of SERVICE.md with its words: from its anchor to its end mark
 * (`<!-- /id -->`), the next anchor, or the end of its line; in a table row, the row's
 * cells from the anchor on, joined by " | " (an empty last cell kept as an empty one).
 */
export function clauseText(service: string): Array<[id: string, words: string]> {
  const found: Array<[string, string]> = [];
  for (const line of service.split('\n')) {
    for (const anchor of line.matchAll(/<a id="([^"]+)"><\/a>/g)) {
      const id = anchor[1]!;
      const rest = line.slice(anchor.index + anchor[0].length);
      const ends = [rest.indexOf(`<!-- /${id} -->`), rest.indexOf('<a id=')].filter((i) => i >= 0);
      if (ends.length > 0) found.push([id, rest.slice(0, Math.min(...ends)).trimEnd()]);
      else if (line.startsWith('|'))
        found.push([
          id,
          rest
            .split('|')
            .slice(0, -1)
            .map((cell) => cell.trim())
            .join(' | '),
        ]);
      else found.push([id, rest.trimEnd()]);
    }
  }
  return found;
}

/**
 * The file's text: the clauses' words, and the register's version, raised from the one of
 * the `committed` file whenever the words, the sections or the reading change (a digest of
 * them, kept in the file, says whether they did).
 */
export function clauseTextFile(service: string, committed: string, marker: string): string {
  const text = clauseText(service);
  const ids = new Set(text.map(([id]) => id));
  const unknown = [...SECTIONS.map(([id]) => id), ...Object.keys(READING)].filter((id) => !ids.has(id));
  if (unknown.length > 0)
    throw new Error(`conformance/core/clauses.ts reads clauses SERVICE.md does not anchor: ${unknown.join(', ')}`);
  const digest = createHash('sha256').update(JSON.stringify({ text, SECTIONS, READING })).digest('hex');
  const was = {
    version: /CLAUSE_REGISTER_VERSION = '(\d+)'/.exec(committed)?.[1] ?? '0',
    digest: /CLAUSE_REGISTER_DIGEST = '([0-9a-f]+)'/.exec(committed)?.[1],
  };
  const version = was.digest === digest ? was.version : String(Number(was.version) + 1);
  return [
    `// ${marker}`,
    '/** Every anchored clause of SERVICE.md in document order: its id, and its words as written. */',
    'export const CLAUSE_TEXT: ReadonlyArray<readonly [id: string, words: string]> = [',
    ...text.map(([id, words]) => `  [${JSON.stringify(id)}, ${JSON.stringify(words)}],`),
    '];',
    '',
    '/** Raised by `npm run generate` whenever a clause is added, removed or reworded, or read otherwise (clauses.ts). */',
    `export const CLAUSE_REGISTER_VERSION = '${version}';`,
    '/** What that version is made of: the words, the sections and the reading, digested. */',
    `export const CLAUSE_REGISTER_DIGEST = '${digest}';`,
    '',
  ].join('\n');
}

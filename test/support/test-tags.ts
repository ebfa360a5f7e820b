/**
 * What a test file says of itself, in its opening comment, on a line `@tags a, b`: which
 * runs it belongs to. The configuration and the sequencer read these lines, so that which
 * files run on PostgreSQL too, which start first and which the inner loop leaves out is
 * written where each file is, not in lists elsewhere.
 *
 * - `postgres`: a server test that runs a second time with the PostgreSQL store (it uses
 *   the default test database of test/support/server.ts).
 * - `long`: ten seconds or more; started first on a fresh clone, before vitest has its own
 *   durations (test/support/sequencer.ts).
 * - `slow`: waits on real webhook answers or real time, so `npm run test:fast` leaves it
 *   out. The end-to-end files (`test/e2e/`), the browser tests (`*.browser.test.ts`) and
 *   the packaging and registry tests are left out by where they are and what they are called.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const TAGS = ['postgres', 'long', 'slow'] as const;
export type Tag = (typeof TAGS)[number];

/** The tags of one test file, from the `@tags` line of its opening comment. */
export function tagsOf(file: string): Tag[] {
  const text = readFileSync(file, 'utf8');
  const opening = /^\/\*\*([\s\S]*?)\*\//.exec(text)?.[1] ?? '';
  const line = /^\s*\*\s*@tags\s+(.+)$/m.exec(opening)?.[1];
  if (!line) return [];
  const tags = line.split(',').map((t) => t.trim());
  const unknown = tags.filter((t) => !(TAGS as readonly string[]).includes(t));
  if (unknown.length > 0) throw new Error(`${file}: unknown @tags ${unknown.join(', ')} (known: ${TAGS.join(', ')})`);
  return tags as Tag[];
}

/** Every test file under `root/test`, relative to `root`, with its tags. */
export function testFiles(root: string): Array<{ file: string; tags: Tag[] }> {
  return readdirSync(path.join(root, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => path.join('test', name).split(path.sep).join('/'))
    .sort()
    .map((file) => ({ file, tags: tagsOf(path.join(root, file)) }));
}

/** The files `npm run test:fast` leaves out: slow ones, and those left out by where they are. */
export function outsideFast(file: string, tags: readonly Tag[]): boolean {
  return (
    tags.includes('slow') ||
    file.startsWith('test/e2e/') ||
    file.endsWith('.browser.test.ts') ||
    file === 'test/packaging.test.ts' ||
    file === 'test/registry.test.ts'
  );
}

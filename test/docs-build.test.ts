/**
 * `npm run build` builds the docs only when their inputs changed (the descriptions, the
 * page renderers, Redocly's version): an unchanged tree costs no rebuild at start.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from './support/description.ts';
import { paced } from './support/pace.ts';

const run = promisify(execFile);
const out = mkdtempSync(path.join(tmpdir(), 'docs-build-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

const build = async () =>
  (await run(process.execPath, ['--import', 'tsx', 'scripts/build-docs.ts', '--out', out], { cwd: repoRoot })).stdout;
const mtime = (file: string) => statSync(path.join(out, file)).mtimeMs;

describe('the docs build', () => {
  it(
    'builds once, skips while nothing changed, and rebuilds when an input did',
    async () => {
      expect(await build()).toMatch(/^docs written to .* \(\d+ error codes\)\n$/);
      const pages = ['index.html', 'sandbox/index.html', 'errors/index.html'];
      const first = pages.map(mtime);

      expect(await build()).toBe('');
      expect(pages.map(mtime)).toEqual(first);

      // As if an input had changed: the kept hash no longer matches.
      const stamp = path.join(out, '.inputs.json');
      writeFileSync(stamp, JSON.stringify({ hash: 'stale' }));
      expect(await build()).toMatch(/^docs written/);
      expect(JSON.parse(readFileSync(stamp, 'utf8')).hash).toMatch(/^[0-9a-f]{64}$/);
    },
    paced(60_000),
  );
});

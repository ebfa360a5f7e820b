/**
 * `npm run build` builds the docs only when their inputs changed (the descriptions, the
 * page renderers, Redocly's version): an unchanged tree costs no rebuild at start. The text
 * Redoc's search quotes keeps a space where a description's line or block ends (the search
 * itself, in a browser: test/e2e/docs.browser.test.ts).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { spaceSearchText } from '../scripts/docs-search-text.ts';
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
      const pages = [
        'index.html',
        'sandbox/index.html',
        'client/index.html',
        'errors/index.html',
        'changelog/index.html',
      ];
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

/** A Markdoc node, as Redoc's search reads a description. */
type Node = { type: string; attributes?: { content?: string }; children?: Node[] };
const text = (content: string): Node => ({ type: 'text', attributes: { content } });
const inline = (...children: Node[]): Node => ({ type: 'inline', children });
const paragraph = (...children: Node[]): Node => ({ type: 'paragraph', children: [inline(...children)] });

describe('the text Redoc’s search quotes', () => {
  // Redoc's bundle as `redocly build-docs --inlineBundle` puts it in each page.
  const bundle = readFileSync(path.join(repoRoot, 'node_modules/@redocly/cli/lib/chunks/redoc.standalone.js'), 'utf8');
  /** The bundle's text-of-a-tree function, after the build's change, run on its own. */
  function searchText(): (node: Node) => string {
    const patched = spaceSearchText(bundle);
    const start = /function ([\w$]+)\(node\)\{const blocks=/.exec(patched)!;
    const end =
      patched.indexOf('return visit(node),parts.join("")}', start.index) + 'return visit(node),parts.join("")}'.length;
    const source = patched.slice(start.index, end);
    const skip = /if\(([\w$]+)\(n\)\)return/.exec(source)![1]!;
    return new Function(skip, `${source}; return ${start[1]};`)(() => false);
  }

  it('keeps a space where a line or a block ends, and the words of one line as they were', () => {
    const of = searchText();
    // "to send⏎the payer": Markdoc's soft break between the two lines.
    expect(of(paragraph(text('the page url to send'), { type: 'softbreak' }, text('the payer to.')))).toBe(
      'the page url to send the payer to.',
    );
    expect(
      of({
        type: 'document',
        children: [paragraph(text('On success the payer’s')), paragraph(text('browser is sent'))],
      }),
    ).toBe('On success the payer’s browser is sent');
    const cell = (content: string): Node => ({ type: 'td', children: [inline(text(content))] });
    expect(of({ type: 'table', children: [{ type: 'tr', children: [cell('Base URL'), cell('{base_url}')] }] })).toBe(
      'Base URL {base_url}',
    );
    // Inline pieces (code, emphasis) join as written: a heading's text, and the id made of it, are unchanged.
    expect(
      of({
        type: 'heading',
        children: [inline(text('The '), { type: 'code', attributes: { content: 'url' } }, text(' field'))],
      }),
    ).toBe('The url field');
    expect(of(paragraph(text('a '), text('b')))).toBe('a b');
  });

  it('fails the build when the bundle no longer has the function it changes', () => {
    expect(() => spaceSearchText('<html>no Redoc here</html>')).toThrow(/found 0 times/);
  });
});

/**
 * A check is found by its id: in a mode whose checks share one id prefix, its checks/ folder
 * is that prefix's (receiver: RCV-, client: CLIENT-); in a mode of several prefixes (run),
 * each prefix has a file of its own name (`checks/idem.ts` for IDEM-) or a folder of them
 * (`checks/hook/` for HOOK-). A check folder holds checks only: every file in it (but the
 * registration, index.ts) defines at least one, and helpers live beside the folder.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MODES } from '../../conformance/modes/index.ts';

const modes = fileURLToPath(new URL('../../conformance/modes/', import.meta.url));

/** The check files of a mode, each with its text, by path within checks/. */
function checkFiles(mode: string): Map<string, string> {
  const dir = path.join(modes, mode, 'checks');
  return new Map(
    readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && file !== 'index.ts')
      .map((file) => [file.split(path.sep).join('/'), readFileSync(path.join(dir, file), 'utf8')]),
  );
}

/** The file that defines a check: the one where its id stands as a string of its own. */
const definedIn = (files: Map<string, string>, id: string) =>
  [...files].filter(([, text]) => text.includes(`'${id}'`)).map(([file]) => file);

const prefixOf = (id: string) => id.replace(/-\d+$/, '');

describe('where a check stands', () => {
  for (const mode of MODES) {
    const checks = mode.checks();
    const files = checkFiles(mode.name);
    const prefixes = new Set(checks.map((c) => prefixOf(c.id)));

    it(`${mode.name}: each check in one file, of its id prefix where the mode has several`, () => {
      const misplaced = checks.flatMap((check) => {
        const where = definedIn(files, check.id);
        const home = prefixOf(check.id).toLowerCase();
        const fits = (file: string) => prefixes.size === 1 || file === `${home}.ts` || file.startsWith(`${home}/`);
        return where.length === 1 && fits(where[0]!) ? [] : [`${check.id}: ${where.join(', ') || 'no file'}`];
      });
      expect(misplaced).toEqual([]);
    });

    it(`${mode.name}: a check folder holds checks only`, () => {
      const ids = checks.map((c) => c.id);
      const helpers = [...files].filter(([, text]) => !ids.some((id) => text.includes(`'${id}'`))).map(([f]) => f);
      expect(helpers).toEqual([]);
    });
  }
});

/**
 * The repository root (where generated/ and dist/ live), found from this module whether
 * it runs from the TypeScript sources (server/) or compiled (build/server/): the nearest
 * folder upwards with a package.json.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(start, '..');
  }
}

export const root = findRoot(path.dirname(fileURLToPath(import.meta.url)));

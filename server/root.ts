/**
 * The server package's own folder (where site/ lives), found from this module whether it
 * runs from the TypeScript sources (server/) or compiled (server/dist/): the nearest
 * folder upwards with a package.json.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return start;
  }
}

export const packageRoot = findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));

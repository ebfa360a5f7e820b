// Whether build/ (the compiled server) matches the TypeScript sources it was built from.
// build-server.js records, after a successful `tsc`, a hash of every source file the
// compiler read from this repository; the server is started from build/ only while that
// hash still holds, so an edited source never runs as stale JavaScript.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const buildDir = path.join(root, 'build');
export const stampPath = path.join(buildDir, 'sources.json');
export const entry = path.join(buildDir, 'server/cli.js');

/** One hash over the files' paths and contents; throws when one cannot be read. */
export function hashSources(files) {
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(file).update('\0').update(readFileSync(path.join(root, file))).update('\0');
  }
  return hash.digest('hex');
}

/** True when build/ was built from exactly the current sources. */
export function isFresh() {
  try {
    const stamp = JSON.parse(readFileSync(stampPath, 'utf8'));
    return Array.isArray(stamp.files) && typeof stamp.hash === 'string' && hashSources(stamp.files) === stamp.hash;
  } catch {
    return false;
  }
}

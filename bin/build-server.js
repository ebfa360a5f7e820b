#!/usr/bin/env node
// `npm run build:server`: compiles the server to build/ (tsconfig.build.json) and records
// which sources it was built from (see compiled.js). Does nothing when build/ is fresh.
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { buildDir, hashSources, isFresh, root, stampPath } from './compiled.js';

if (isFresh()) process.exit(0);

// Without the compiler (an install without dev dependencies) or with a failed build, the
// server still runs, from the sources through tsx: this only says so.
const skip = (why) => {
  process.stderr.write(`build:server: ${why}; payment-server will run the TypeScript sources through tsx.\n`);
  process.exit(0);
};
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  skip('TypeScript is not installed');
}
const project = path.join(root, 'tsconfig.build.json');
// The sources are listed (and hashed) before compiling: an edit during the build then
// makes the stamp stale, never the reverse.
const listed = spawnSync(process.execPath, [tsc, '-p', project, '--listFilesOnly'], { cwd: root, encoding: 'utf8' });
if (listed.status !== 0) {
  process.stderr.write(listed.stdout + listed.stderr);
  skip('could not list the sources');
}
const files = listed.stdout
  .split('\n')
  .map((line) => line.trim())
  .filter((file) => file !== '' && !file.split(path.sep).includes('node_modules'))
  .map((file) => path.relative(root, file))
  .filter((file) => !file.startsWith('..'))
  .concat(['tsconfig.json', 'tsconfig.build.json'])
  .sort();
const hash = hashSources(files);

rmSync(buildDir, { recursive: true, force: true });
const built = spawnSync(process.execPath, [tsc, '-p', project], { cwd: root, stdio: 'inherit' });
if (built.status !== 0) {
  rmSync(buildDir, { recursive: true, force: true });
  skip('the build failed (see above)');
}
writeFileSync(stampPath, `${JSON.stringify({ hash, files }, null, 2)}\n`);

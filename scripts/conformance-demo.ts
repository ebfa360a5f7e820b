/**
 * `npm run conformance:demo`: starts the reference server (its own CLI, in-memory
 * database, a fresh sandbox token) and runs the whole conformance suite against it,
 * printing the console report and writing every report to reports/conformance/.
 * Extra arguments are passed to `payment-conformance run` (e.g. `-- --only 'HOOK-*'`).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sandboxToken = `sbx_demo_${randomBytes(12).toString('hex')}`;

const server = spawn(
  process.execPath,
  [path.join(root, 'server/dist/cli.js'), '--port', '0', '--db', ':memory:', '--sandbox-token', sandboxToken],
  {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);

const baseUrl = await new Promise<string>((resolve, reject) => {
  const lines = createInterface({ input: server.stdout! });
  lines.on('line', (line) => {
    const match = /^payment-server listening on (\S+)/.exec(line);
    if (match) resolve(match[1]!);
  });
  server.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening`)));
});

const suite = spawn(
  process.execPath,
  [
    path.join(root, 'conformance/dist/cli.js'),
    'run',
    '--base-url',
    baseUrl,
    '--sandbox-token',
    sandboxToken,
    '--reporter',
    'console,json,junit,html',
    '--out',
    'reports/conformance',
    ...process.argv.slice(2),
  ],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
const [code] = (await once(suite, 'exit')) as [number | null];
server.kill('SIGTERM');
await once(server, 'exit');
process.exit(code ?? 2);

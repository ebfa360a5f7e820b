/**
 * The README's five-minute tour, run as a newcomer runs it: the server started as `npm
 * start` starts it (its built command, default flags, a fresh data directory), the values
 * it prints exported, then every shell block of the tour in one bash session, in order.
 * Only the port differs: the tour's 4010 becomes the server's free port. And every doc
 * calls the project's commands with `npx --no --`, so npm never fetches a registry package
 * of the same name in their place, nor takes their flags for its own.
 *
 * @tags long, slow
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from './support/description.ts';
import { paced } from './support/pace.ts';

const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
const tour = readme.slice(readme.indexOf('## A five-minute tour'), readme.indexOf('## Install'));
const blocks = [...tour.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);

let server: ChildProcess;
let printed = '';
let port = '';
const cwd = mkdtempSync(path.join(tmpdir(), 'readme-tour-'));

beforeAll(async () => {
  // The newcomer's shell is in the repository: its node_modules (and its bins) are there.
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(cwd, 'node_modules'));
  server = spawn(process.execPath, [path.join(repoRoot, 'server/bin/payment-server.js'), '--port', '0'], {
    cwd,
    env: { ...process.env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  server.stdout!.setEncoding('utf8').on('data', (chunk: string) => (printed += chunk));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${printed}`)), 30_000);
    server.stdout!.on('data', () => {
      if (!/^docs: /m.test(printed)) return;
      clearTimeout(timer);
      resolve();
    });
    server.once('exit', (code) => reject(new Error(`the server exited ${code}:\n${printed}`)));
  });
  port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(printed)![1]!;
}, paced(60_000));
afterAll(() => {
  server?.kill('SIGTERM');
  rmSync(cwd, { recursive: true, force: true });
});

const value = (pattern: RegExp) => {
  const found = pattern.exec(printed)?.[1];
  if (!found) throw new Error(`the server did not print ${pattern}:\n${printed}`);
  return found;
};

describe('the README tour', () => {
  it(
    'runs as written against the server npm start starts, block after block',
    async () => {
      expect(blocks.length).toBeGreaterThanOrEqual(6);
      // The first block asks the reader to copy what the server printed.
      const [copy, ...steps] = blocks;
      expect(copy).toMatch(/^export CLIENT_ID=\S+ CLIENT_SECRET=\S+ WEBHOOK_SECRET=\S+ SANDBOX_TOKEN=\S+\n$/);
      const exported = [
        `export CLIENT_ID=${value(/test clientId:\s+(\S+)/)}`,
        `CLIENT_SECRET=${value(/test clientSecret:\s+(\S+)/)}`,
        `WEBHOOK_SECRET=${value(/webhook secret:\s+(\S+)/)}`,
        `SANDBOX_TOKEN=${value(/sandbox token:\s+(\S+)/)}`,
      ].join(' ');
      const script = [
        'set -euo pipefail',
        exported,
        ...steps.map((s) => s.replace(/(localhost|127\.0\.0\.1):4010/g, `$1:${port}`)),
      ]
        .map((step, i) => `echo "--- step ${i}"\n${step}`)
        .join('\n');
      const { stdout } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) =>
        execFile(
          'bash',
          ['-c', script],
          { cwd, env: { ...process.env, NO_COLOR: '1' }, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 },
          (error, out, err) =>
            error ? reject(new Error(`${error.message}\n${out}\n${err}`)) : resolve({ stdout: out, stderr: err }),
        ),
      );
      // Created, paid by card (the payer sent on to redirectUrl with both ids), read back
      // completed, its delivery recorded, and the suite passing the server.
      expect(stdout).toMatch(/"id":"cs_[^"]+","status":"created"/);
      expect(stdout).toMatch(
        /^303 https:\/\/shop\.example\/thanks\?transactionId=[0-9a-f-]{36}&checkoutSessionId=cs_\S+$/m,
      );
      expect(stdout).toMatch(/"status":"completed".*"transactionType":"card"/);
      // The retried create replays the first answer: the same session, as it was when created.
      const session = /"id":"(cs_[^"]+)","status":"created"/.exec(stdout)![1]!;
      const replayed = stdout.slice(stdout.indexOf('"status":"completed"'));
      expect(replayed).toContain(`{"id":"${session}","status":"created"`);
      expect(stdout).toMatch(/"deliveries":\[\{"transactionId"/);
      expect(stdout).toContain('PASSED: no must check failed');
    },
    paced(180_000),
  );
});

describe('the docs', () => {
  const docs = [
    'README.md',
    'client/README.md',
    'conformance/README.md',
    ...readdirSync(path.join(repoRoot, 'conformance/docs')).map((page) => `conformance/docs/${page}`),
    'server/README.md',
    'test/README.md',
    'test/conformance.md',
  ];
  // `--no` keeps npm from fetching a registry package of the name; `--` keeps npm from
  // taking the command's own flags (npm reads `--version`, `--help` and `--port 0` as its own).
  it.each(docs)('%s calls the project’s commands with npx --no --, never a bare npx', (doc) => {
    const text = readFileSync(path.join(repoRoot, doc), 'utf8');
    expect(text.match(/npx (?!--no -- )(?:\S+ )*(payment-server|payment-conformance)\b.*/g) ?? []).toEqual([]);
  });
});

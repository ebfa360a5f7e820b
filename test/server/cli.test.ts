/**
 * The `payment-server` command as a user runs it (server/README.md, "Flags"): spawned as
 * the bin (server/bin/payment-server.js) with the design's flags and environment variables, read
 * through its stdout and spoken to over HTTP. Covers the start line and the demo
 * organisation's credentials, kept across restarts, clean stops on SIGTERM and SIGINT,
 * data surviving a restart on the same file, pretty logs on a terminal, `--sandbox-token`, `--no-sandbox`,
 * `PORT`/`HOST`, a bad flag, and `--version`. What keeps its secrets is cli-security.test.ts.
 *
 * @tags long
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/description.ts';
import { freePort } from '../support/mutating-proxy.ts';
import { killServerProcesses, LISTENING, SERVER_BIN, START_TIMEOUT_MS } from '../support/server-process.ts';
import { paced, until } from '../support/pace.ts';
import {
  STOP_TIMEOUT_MS,
  getToken,
  json,
  printed,
  run,
  sandboxCreateOrganisation,
  start,
  stop,
  withTimeout,
} from './cli-helpers.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'payment-cli-'));
/** The processes started other than through server-process.ts (the one on a terminal). */
const children = new Set<ChildProcess>();

afterAll(() => {
  killServerProcesses();
  for (const child of children) child.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
});

describe('payment-server on a database file, across a restart', () => {
  const db = path.join(tmp, 'restart', 'payment.sqlite');
  const first = { clientId: '', clientSecret: '', webhookSecret: '', sandboxToken: '', sessionId: '' };

  it(
    'on an empty database prints where it listens, then the demo organisation’s credentials, the sandbox token and the docs URL',
    async () => {
      mkdirSync(path.dirname(db));
      const server = await start(['--port', '0', '--db', db]);
      try {
        expect(server.lines[0]).toMatch(LISTENING);
        expect(server.host).toBe('127.0.0.1');
        expect(server.port).toBeGreaterThan(0);
        expect(server.lines[0]).toBe(`payment-server listening on http://127.0.0.1:${server.port}`);
        const health = await json(`${server.url}/healthz`);
        expect(health.status).toBe(200);

        const clientId = printed(server.lines, /test clientId:\s+(\S+)$/);
        const clientSecret = printed(server.lines, /test clientSecret:\s+(\S+)$/);
        const webhookSecret = printed(server.lines, /webhook secret:\s+(\S+)$/);
        const sandboxToken = printed(server.lines, /^sandbox token: (\S+)$/);
        const docs = printed(server.lines, /^docs: (\S+)/);
        expect(clientId, server.lines.join('\n')).toMatch(/\S/);
        expect(clientSecret).toMatch(/\S/);
        expect(webhookSecret).toMatch(/^whsec_\S+$/);
        expect(sandboxToken).toMatch(/\S/);
        expect(docs).toBe(`${server.url}/docs/`);
        expect((await fetch(docs!)).status).toBe(200);
        expect((await fetch(`${server.url}/docs/errors/`)).status).toBe(200);
        // The secrets are printed once each, never in the listening line.
        expect(server.lines.filter((l) => l.includes(clientSecret!))).toHaveLength(1);

        // The test credentials work, and in test mode.
        const token = await getToken(server.url, clientId!, clientSecret!);
        expect(token.status).toBe(200);
        expect(token.body.tokenType).toBe('Bearer');
        const created = await json(`${server.url}/api/checkout-sessions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token.body.accessToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            type: 'single',
            amount: { total: 12.34 },
            creditorReference: { reference: 'CLI-1' },
            redirectUrl: 'https://shop.example.com/done',
            checkoutMethod: 'both',
          }),
        });
        expect(created.status).toBe(200);
        expect(created.body.testMode).toBe(true);
        expect(created.body.id).toMatch(/^cs_/);
        // The random sandbox token printed is the one the sandbox API takes.
        expect((await sandboxCreateOrganisation(server.url, sandboxToken)).status).toBe(200);
        Object.assign(first, { clientId, clientSecret, webhookSecret, sandboxToken, sessionId: created.body.id });
      } finally {
        const exit = await stop(server, 'SIGTERM');
        expect(exit).toEqual({ code: 0, signal: null });
      }
      expect(server.stderr()).toBe('');
    },
    paced(40_000),
  );

  it(
    'restarted on the same file, prints the same demo organisation again, and the data is still there',
    async () => {
      expect(first.sessionId, 'the first start must have run').toMatch(/^cs_/);
      const server = await start(['--port', '0', '--db', db]);
      try {
        expect(server.lines[0]).toBe(`payment-server listening on http://127.0.0.1:${server.port}`);
        expect(printed(server.lines, /test clientId:\s+(\S+)$/)).toBe(first.clientId);
        expect(printed(server.lines, /test clientSecret:\s+(\S+)$/)).toBe(first.clientSecret);
        expect(printed(server.lines, /webhook secret:\s+(\S+)$/)).toBe(first.webhookSecret);
        // The random sandbox token is kept with the data, like the credentials.
        expect(printed(server.lines, /^sandbox token: (\S+)$/)).toBe(first.sandboxToken);
        expect((await sandboxCreateOrganisation(server.url, first.sandboxToken)).status).toBe(200);
        expect(server.lines).toContain(`  kept in ${db}; to start afresh, stop the server and delete ${db}*`);
        const token = await getToken(server.url, first.clientId, first.clientSecret);
        expect(token.status).toBe(200);
        const read = await json(`${server.url}/api/checkout-sessions/${first.sessionId}`, {
          headers: { authorization: `Bearer ${token.body.accessToken}` },
        });
        expect(read.status).toBe(200);
        expect(read.body).toMatchObject({
          id: first.sessionId,
          status: 'created',
          amount: { total: 12.34, currency: 'NZD' },
          reference: 'CLI-1',
          testMode: true,
        });
      } finally {
        expect(await stop(server, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
    },
    paced(40_000),
  );
});

describe('payment-server on a database file whose demo key was deleted', () => {
  it(
    'makes the demo organisation a new test key on the next start, and prints it',
    async () => {
      const db = path.join(tmp, 'demo-key.sqlite');
      const first = await start(['--port', '0', '--db', db, '--sandbox-token', 'sbx']);
      const orgLine = first.lines.find((l) => l.startsWith('demo organisation '));
      const clientId = printed(first.lines, /test clientId:\s+(\S+)$/)!;
      try {
        const deleted = await json(`${first.url}/sandbox/api-keys/${clientId}`, {
          method: 'DELETE',
          headers: { authorization: 'Bearer sbx' },
        });
        expect(deleted.status).toBe(200);
      } finally {
        expect(await stop(first, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
      const again = await start(['--port', '0', '--db', db]);
      try {
        expect(again.lines).toContain(orgLine);
        const newId = printed(again.lines, /test clientId:\s+(\S+)$/)!;
        expect(newId).not.toBe(clientId);
        const token = await getToken(again.url, newId, printed(again.lines, /test clientSecret:\s+(\S+)$/)!);
        expect(token.status).toBe(200);
      } finally {
        expect(await stop(again, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
    },
    paced(40_000),
  );
});

describe('payment-server logs', () => {
  it(
    'keeps serving when the reader of its output goes away (piped into head), and still stops on SIGTERM',
    async () => {
      // As `payment-server 2>&1 | head -1` runs it: head exits after the first line, so every
      // later write of the server meets a pipe without a reader.
      const child = spawn(
        '/bin/sh',
        [
          '-c',
          '( "$0" "$@" 2>&1 & echo "pid $!" >&2; wait ) | head -1',
          process.execPath,
          SERVER_BIN,
          '--port',
          '0',
          '--db',
          ':memory:',
        ],
        { cwd: repoRoot, env: { ...process.env, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      children.add(child);
      let out = '';
      let err = '';
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
      const deadline = Date.now() + paced(START_TIMEOUT_MS);
      while (!/listening on (\S+)/.test(out) || !/pid (\d+)/.test(err)) {
        if (Date.now() > deadline) throw new Error(`no start line:\n${out}\n${err}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const url = /listening on (\S+)/.exec(out)![1]!;
      const pid = Number(/pid (\d+)/.exec(err)![1]);
      const alive = () => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      try {
        // Its later lines (and a request's log line) went to the closed pipe.
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect((await fetch(`${url}/healthz`)).status).toBe(200);
        process.kill(pid, 'SIGTERM');
        const stopBy = Date.now() + STOP_TIMEOUT_MS;
        while (alive() && Date.now() < stopBy) await new Promise((resolve) => setTimeout(resolve, 50));
        expect(alive()).toBe(false);
      } finally {
        if (alive()) process.kill(pid, 'SIGKILL');
        children.delete(child);
      }
    },
    paced(40_000),
  );

  it(
    'writes pretty lines when stderr is a terminal (JSON lines otherwise, below)',
    async () => {
      // script(1) gives the server a pseudo-terminal for stdout and stderr alike.
      const command = [process.execPath, SERVER_BIN, '--port', '0', '--db', ':memory:'].map((a) => `'${a}'`).join(' ');
      const child = spawn('script', ['-qfec', command, '/dev/null'], {
        cwd: repoRoot,
        env: { ...process.env, LOG_LEVEL: 'info', NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      children.add(child);
      let output = '';
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      const waitFor = async (pattern: RegExp) => {
        const deadline = Date.now() + paced(START_TIMEOUT_MS);
        while (!pattern.test(output)) {
          if (Date.now() > deadline) throw new Error(`no ${pattern} in:\n${output}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        return pattern.exec(output)!;
      };
      try {
        const [, url] = await waitFor(/payment-server listening on (\S+)\r?\n/);
        await fetch(`${url}/healthz`, { headers: { 'x-request-id': 'pretty-line' } });
        const [line] = await waitFor(/^.*pretty-line.*$/m);
        expect(line).toMatch(
          /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: request: GET \/healthz 200 in [\d.]+ ms \(pretty-line\)\r?$/,
        );
      } finally {
        process.kill(-child.pid!, 'SIGTERM');
        children.delete(child);
      }
    },
    paced(40_000),
  );
});

describe('payment-server flags and environment', () => {
  it(
    '--sandbox-token is the sandbox API’s bearer token',
    async () => {
      const server = await start([
        '--port',
        '0',
        '--db',
        path.join(tmp, 'sandbox-token.sqlite'),
        '--sandbox-token',
        'abc',
      ]);
      try {
        expect(server.lines).toContain('sandbox token: abc');
        expect((await sandboxCreateOrganisation(server.url, 'abc')).status).toBe(200);
        const without = await sandboxCreateOrganisation(server.url);
        expect(without.status).toBe(401);
        expect(without.body.error.code).toBe('unauthorized');
        expect((await sandboxCreateOrganisation(server.url, 'abcd')).status).toBe(401);
      } finally {
        expect(await stop(server, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
    },
    paced(40_000),
  );

  it(
    '--no-sandbox turns the sandbox API off: its paths answer 404 in the error envelope; SIGINT stops it cleanly',
    async () => {
      const server = await start(['--port', '0', '--db', path.join(tmp, 'no-sandbox.sqlite'), '--no-sandbox'], {
        SANDBOX_TOKEN: 'from-env',
      });
      try {
        expect(server.lines.join('\n')).not.toMatch(/^sandbox token:/m);
        for (const token of [undefined, 'from-env']) {
          const answer = await sandboxCreateOrganisation(server.url, token);
          expect(answer.status).toBe(404);
          expect(answer.contentType).toMatch(/^application\/json/);
          expect(answer.body).toEqual({
            error: {
              code: 'not_found',
              message: expect.any(String),
              param: null,
              doc_url: `${server.url}/docs/errors/#not_found`,
            },
          });
        }
        // The public API is still there.
        expect((await json(`${server.url}/healthz`)).status).toBe(200);
      } finally {
        expect(await stop(server, 'SIGINT')).toEqual({ code: 0, signal: null });
      }
      // Nothing listens there any more.
      await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    },
    paced(40_000),
  );

  it(
    'PORT and HOST set where it listens; SANDBOX_TOKEN and DATABASE_URL are read too',
    async () => {
      const port = await freePort();
      const db = path.join(tmp, 'from-env.sqlite');
      expect(existsSync(db)).toBe(false);
      const server = await start([], {
        PORT: String(port),
        HOST: 'localhost',
        SANDBOX_TOKEN: 'env-token',
        DATABASE_URL: db,
      });
      try {
        expect(server.lines[0]).toBe(`payment-server listening on http://localhost:${port}`);
        expect((await json(`http://localhost:${port}/healthz`)).status).toBe(200);
        expect(server.lines).toContain('sandbox token: env-token');
        expect((await sandboxCreateOrganisation(server.url, 'env-token')).status).toBe(200);
        expect(existsSync(db)).toBe(true);
      } finally {
        expect(await stop(server, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
    },
    paced(40_000),
  );

  it(
    'a bad flag value exits non-zero with a usage message on stderr',
    async () => {
      const server = run(['--port', 'abc', '--db', path.join(tmp, 'bad-flag.sqlite')]);
      const exit = await withTimeout(server.exited, START_TIMEOUT_MS, 'payment-server --port abc did not exit');
      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBeNull();
      expect(server.stderr()).toMatch(/--port/);
      expect(server.stderr()).toMatch(/Usage: payment-server/);
      expect(server.lines.join('\n')).not.toMatch(/listening/);
    },
    paced(40_000),
  );

  // A supervisor may stop the server as soon as /healthz answers (a readiness probe), before
  // it has printed anything: the signal must still get the clean stop, not the default action.
  it(
    'SIGTERM as soon as /healthz answers 200 still stops cleanly (exit code 0)',
    async () => {
      const port = await freePort();
      const server = run(['--port', String(port), '--db', path.join(tmp, 'early-signal.sqlite')]);
      const deadline = Date.now() + paced(START_TIMEOUT_MS);
      for (;;) {
        const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) break;
        if (Date.now() > deadline) throw new Error('never answered /healthz');
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(await stop(server, 'SIGTERM')).toEqual({ code: 0, signal: null });
    },
    paced(40_000),
  );

  it(
    'an empty HOST, PORT or SANDBOX_TOKEN counts as unset: loopback, not every interface; a random sandbox token',
    async () => {
      const server = await start(['--port', String(await freePort()), '--db', ':memory:'], {
        HOST: '',
        SANDBOX_TOKEN: '',
        PUBLIC_URL: '',
      });
      try {
        expect(server.host).toBe('127.0.0.1');
        expect(printed(server.lines, /^sandbox token: (\S+)$/)).toMatch(/^sbx_/);
      } finally {
        expect(await stop(server, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
    },
    paced(40_000),
  );

  // Refusals listen nowhere: they run side by side.
  it.concurrent.each([
    [['--port', '0x1282'], /--port/],
    [['--port', ''], /--port/],
    [['--host', ''], /--host/],
    [['--sandbox-token', ''], /--sandbox-token/],
    [['--public-url', 'not a url'], /--public-url/],
    [['--no-sandbox', '--sandbox-token', 'abc'], /cannot be used with/],
  ])(
    'refuses %j with a usage message',
    async (args, message) => {
      const server = run([...args, '--db', ':memory:']);
      const exit = await withTimeout(server.exited, START_TIMEOUT_MS, `payment-server ${args.join(' ')} did not exit`);
      expect(exit.code).not.toBe(0);
      expect(server.stderr()).toMatch(message);
      expect(server.lines.join('\n')).not.toMatch(/listening/);
    },
    paced(40_000),
  );

  it(
    'a start that fails (its port taken) leaves no demo organisation behind: the next start prints one',
    async () => {
      const db = path.join(tmp, 'port-taken.sqlite');
      const taken = createServer();
      const port = await new Promise<number>((resolve) =>
        taken.listen(0, '127.0.0.1', () => resolve((taken.address() as { port: number }).port)),
      );
      const failed = run(['--port', String(port), '--db', db]);
      const exit = await withTimeout(failed.exited, START_TIMEOUT_MS, 'payment-server on a taken port did not exit');
      await new Promise((resolve) => taken.close(resolve));
      expect(exit.code).toBe(2);
      expect(failed.stderr()).toMatch(/EADDRINUSE/);
      const server = await start(['--port', String(port), '--db', db]);
      try {
        expect(printed(server.lines, /^ {2}test clientSecret: (\S+)$/)).toMatch(/^sk_/);
      } finally {
        expect(await stop(server, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
    },
    paced(40_000),
  );

  it(
    "writes each request's log line to stderr soon after, even when the server is quiet",
    async () => {
      const server = await start(['--port', String(await freePort()), '--db', ':memory:'], {
        LOG_LEVEL: 'info',
        HOST: '127.0.0.1',
      });
      try {
        await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'quiet-line' } });
        const line = (
          await until(
            () => server.stderr(),
            (stderr) => stderr.includes('quiet-line'),
            3_000,
          )
        )
          .split('\n')
          .find((l) => l.includes('"quiet-line"'));
        expect(line && JSON.parse(line)).toMatchObject({ reqId: 'quiet-line', path: '/healthz', status: 200 });
      } finally {
        expect(await stop(server, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
    },
    paced(40_000),
  );
});

// Each on a port the kernel picks and a database of its own: they run side by side.

describe('payment-server --version', () => {
  it(
    'prints the server package’s version and exits 0',
    async () => {
      const { version } = JSON.parse(readFileSync(path.join(repoRoot, 'server/package.json'), 'utf8')) as {
        version: string;
      };
      const server = run(['--version']);
      const exit = await withTimeout(server.exited, START_TIMEOUT_MS, 'payment-server --version did not exit');
      expect(exit).toEqual({ code: 0, signal: null });
      expect(server.lines.filter(Boolean)).toEqual([version]);
    },
    paced(40_000),
  );
});

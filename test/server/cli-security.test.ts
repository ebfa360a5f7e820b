/**
 * The `payment-server` command as a user runs it, for what keeps its secrets: the sandbox
 * refused to the network without a long token of the operator's, the database's files
 * private, `--db` values refused rather than guessed at, a database URL never printed, the
 * random sandbox token kept with the data, and a broken PostgreSQL connection logged without
 * its client.
 *
 * @tags long
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/description.ts';
import { ADMIN_URL, freshDatabase, postgresAvailable } from '../support/postgres.ts';
import { killServerProcesses, START_TIMEOUT_MS } from '../support/server-process.ts';
import { paced, until } from '../support/pace.ts';
import { printed, run, sandboxCreateOrganisation, start, stop, withTimeout } from './cli-helpers.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'payment-cli-'));

afterAll(() => {
  killServerProcesses();
  rmSync(tmp, { recursive: true, force: true });
});

describe('payment-server on an address other than loopback', { concurrent: true }, () => {
  const token32 = 'a-sandbox-token-of-32-characters';

  it.each([
    ['0.0.0.0', 'no sandbox token', [], {}],
    ['::', 'no sandbox token', [], {}],
    ['0.0.0.0', 'a 31-character --sandbox-token', ['--sandbox-token', token32.slice(1)], {}],
    ['0.0.0.0', 'a 31-character SANDBOX_TOKEN', [], { SANDBOX_TOKEN: token32.slice(1) }],
  ])(
    '--host %s with %s is refused (exit 2), saying why, before anything is made',
    async (host, _case, args, env) => {
      const db = path.join(
        tmp,
        `exposed-${host === '::' ? 'v6' : 'v4'}-${args.length}-${Object.keys(env).length}.sqlite`,
      );
      const server = run(['--port', '0', '--host', host, '--db', db, ...args], env);
      const exit = await withTimeout(server.exited, START_TIMEOUT_MS, `payment-server --host ${host} did not exit`);
      expect(exit).toEqual({ code: 2, signal: null });
      expect(server.stderr()).toMatch(
        new RegExp(
          `--host ${host} is not a loopback address.*--sandbox-token \\(or SANDBOX_TOKEN\\) of at least 32 characters, or --no-sandbox`,
        ),
      );
      expect(server.stderr()).not.toContain(token32.slice(1));
      expect(server.lines.join('\n')).not.toMatch(/listening|sandbox token/);
      expect(existsSync(db)).toBe(false);
    },
    paced(40_000),
  );

  it(
    '--host 0.0.0.0 starts with a --sandbox-token of 32 characters, which the sandbox API then takes',
    async () => {
      const server = await start(['--port', '0', '--host', '0.0.0.0', '--db', ':memory:'], { SANDBOX_TOKEN: token32 });
      try {
        expect(server.host).toBe('0.0.0.0');
        const local = `http://127.0.0.1:${server.port}`;
        expect((await sandboxCreateOrganisation(local, token32)).status).toBe(200);
        expect((await sandboxCreateOrganisation(local)).status).toBe(401);
      } finally {
        expect(await stop(server, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
    },
    paced(40_000),
  );

  it(
    '--host 0.0.0.0 with --no-sandbox needs no token',
    async () => {
      const server = await start(['--port', '0', '--host', '0.0.0.0', '--db', ':memory:', '--no-sandbox']);
      try {
        expect(server.lines).toContain('sandbox API: off');
      } finally {
        expect(await stop(server, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
    },
    paced(40_000),
  );

  it(
    'any loopback address keeps the random sandbox token',
    async () => {
      const server = await start(['--port', '0', '--host', '127.0.0.2', '--db', ':memory:']);
      try {
        const token = printed(server.lines, /^sandbox token: (\S+)$/);
        expect(token).toMatch(/^sbx_/);
        expect((await sandboxCreateOrganisation(server.url, token)).status).toBe(200);
      } finally {
        expect(await stop(server, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
    },
    paced(40_000),
  );
});

describe('payment-server’s files', () => {
  const mode = (file: string) => statSync(file).mode & 0o777;

  it(
    'makes the default .data/ 0700 and the database’s files 0600, and keeps its random sandbox token there',
    async () => {
      const cwd = mkdtempSync(path.join(tmp, 'default-'));
      const data = path.join(cwd, '.data');
      const first = await start(['--port', '0'], {}, cwd);
      let token: string | undefined;
      try {
        token = printed(first.lines, /^sandbox token: (\S+)$/);
        expect(token).toMatch(/^sbx_/);
        expect(mode(data)).toBe(0o700);
        const files = readdirSync(data);
        // The WAL and its index exist while the server runs, as do the lock's files.
        expect(files).toEqual(
          expect.arrayContaining([
            'payment-service.sqlite',
            'payment-service.sqlite-wal',
            'payment-service.sqlite-shm',
          ]),
        );
        for (const file of files) expect([file, mode(path.join(data, file))]).toEqual([file, 0o600]);
      } finally {
        expect(await stop(first, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
      // A .data/ an earlier version left open is closed at the next start.
      chmodSync(data, 0o755);
      const again = await start(['--port', '0'], {}, cwd);
      try {
        expect(mode(data)).toBe(0o700);
        expect(printed(again.lines, /^sandbox token: (\S+)$/)).toBe(token);
        expect((await sandboxCreateOrganisation(again.url, token)).status).toBe(200);
      } finally {
        expect(await stop(again, 'SIGTERM')).toEqual({ code: 0, signal: null });
      }
    },
    paced(40_000),
  );

  it(
    'makes a database file given by --db 0600, and one an earlier version left 0644 too',
    async () => {
      const folder = mkdtempSync(path.join(tmp, 'given-'));
      const made = path.join(folder, 'new.sqlite');
      const old = path.join(folder, 'old.sqlite');
      writeFileSync(old, '', { mode: 0o644 });
      for (const db of [made, old]) {
        const server = await start(['--port', '0', '--db', db]);
        try {
          for (const file of [db, `${db}-wal`, `${db}-shm`]) expect([file, mode(file)]).toEqual([file, 0o600]);
        } finally {
          expect(await stop(server, 'SIGTERM')).toEqual({ code: 0, signal: null });
        }
      }
    },
    paced(40_000),
  );

  it.each([
    [
      'an unknown scheme',
      'mysql://payments:hunter2@db.example/payments',
      /--db mysql:… is not a database this server can use/,
    ],
    ['an unknown scheme without slashes', 'sqlite:payments.db', /--db sqlite:… is not a database this server can use/],
    [
      'a path whose folder is missing',
      path.join(tmp, 'missing-folder', 'payment.sqlite'),
      /payment\.sqlite: the folder \S+missing-folder does not exist/,
    ],
  ])(
    '--db with %s is refused (exit 2), saying why, and makes nothing',
    async (_case, db, message) => {
      const server = run(['--port', '0', '--db', db]);
      const exit = await withTimeout(server.exited, START_TIMEOUT_MS, `payment-server --db ${db} did not exit`);
      expect(exit).toEqual({ code: 2, signal: null });
      expect(server.stderr()).toMatch(message);
      // A URL's password is never repeated.
      expect(server.stderr()).not.toContain('hunter2');
      expect(server.lines.join('\n')).not.toMatch(/listening/);
      expect(existsSync(path.join(tmp, 'missing-folder'))).toBe(false);
      expect(existsSync(path.join(repoRoot, 'sqlite:payments.db'))).toBe(false);
    },
    paced(40_000),
  );
});

describe.skipIf(!postgresAvailable())('payment-server on PostgreSQL', () => {
  it(
    'names the database, never its URL; keeps its random sandbox token in it across a restart, and logs a broken connection without the client',
    async () => {
      const db = await freshDatabase();
      try {
        // A password in the URL (the test server trusts the role without one) is never printed.
        const url = new URL(db.url);
        url.password = 'hunter2-of-the-url';
        const first = await start(['--port', '0', '--db', url.toString()]);
        const token = printed(first.lines, /^sandbox token: (\S+)$/);
        expect(await stop(first, 'SIGTERM')).toEqual({ code: 0, signal: null });
        expect(token).toMatch(/^sbx_/);
        expect(first.lines).toContain('  created now and kept in the PostgreSQL database');
        expect(first.lines.filter((l) => l.includes('hunter2-of-the-url'))).toEqual([]);

        const again = await start(['--port', '0', '--db', db.url], { LOG_LEVEL: 'warn' });
        try {
          expect(printed(again.lines, /^sandbox token: (\S+)$/)).toBe(token);
          expect(again.lines).toContain('  kept in the PostgreSQL database');
          expect((await sandboxCreateOrganisation(again.url, token)).status).toBe(200);
          // Its pooled connections are cut by the database, as at a restart of it.
          const admin = new pg.Client({ connectionString: ADMIN_URL });
          await admin.connect();
          try {
            await admin.query(
              'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
              [db.name],
            );
          } finally {
            await admin.end();
          }
          const broke = (
            await until(
              () => again.stderr(),
              (stderr) => stderr.includes('a database connection broke'),
              5_000,
            )
          )
            .split('\n')
            .filter((l) => l.includes('a database connection broke'))
            .map((l) => JSON.parse(l) as { err: Record<string, unknown> });
          expect(broke.length).toBeGreaterThan(0);
          for (const line of broke) {
            expect(line.err.message).toEqual(expect.any(String));
            expect(line.err).not.toHaveProperty('client');
          }
          expect(again.stderr()).not.toMatch(/secretKey|processID|connectionParameters/);
          expect(again.stderr()).not.toContain(token);
        } finally {
          expect(await stop(again, 'SIGTERM')).toEqual({ code: 0, signal: null });
        }
      } finally {
        await db.drop();
      }
    },
    paced(60_000),
  );
});

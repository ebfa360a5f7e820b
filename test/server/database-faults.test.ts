/**
 * The SQLite file under faults from outside the server: a write lock held by another
 * process, a second server on the same file, and a damaged file. The server keeps
 * answering what it can, says so on /healthz, fails creates at once with the documented
 * 500, and refuses to start on a file it cannot own or trust.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createPaymentServer } from '../../server/app.ts';
import { repoRoot } from '../support/description.ts';
import { type Org, sessionRequest, startTestServer, type TestServer } from '../support/server.ts';
import { until } from '../support/pace.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'database-faults-'));
let n = 0;
const newFile = () => path.join(dir, `db-${++n}.sqlite`);
const running: TestServer[] = [];
const quiet = pino({ level: 'silent' });
const children = new Set<ChildProcess>();

afterEach(async () => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  await Promise.all(running.splice(0).map((t) => t.close()));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function serverOn(file: string, logger?: pino.Logger): Promise<TestServer> {
  const t = await startTestServer({ db: file, ...(logger && { logger }) });
  running.push(t);
  return t;
}

/** Another process holding SQLite's write lock on `file` until released. */
async function lockHolder(file: string): Promise<{ release(): Promise<void> }> {
  const script = `
    const db = new (require('better-sqlite3'))(process.argv[1]);
    db.exec('BEGIN IMMEDIATE');
    console.log('locked');
    process.stdin.once('data', () => { db.exec('COMMIT'); db.close(); console.log('released'); process.exit(0); });`;
  const child = spawn(process.execPath, ['-e', script, file], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'inherit'] });
  children.add(child);
  const line = (text: string) =>
    new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk;
        if (out.includes(text)) resolve();
      });
      child.once('exit', () => reject(new Error(`lock holder exited before "${text}"`)));
    });
  await line('locked');
  return {
    async release() {
      child.stdin!.write('go\n');
      await line('released');
      children.delete(child);
    },
  };
}

const health = async (t: TestServer) => {
  const res = await fetch(`${t.url}/healthz`);
  return { status: res.status, body: (await res.json()) as { ok: boolean; problem?: string } };
};

const create = (t: TestServer, org: Org) =>
  t.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() });

describe('a write lock held by another process', () => {
  it('leaves health and reads answering, makes creates fail at once with 500, and passes when released', async () => {
    const logged: Array<{ msg: string; problem?: string }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const t = await serverOn(newFile(), logger);
    const org = await t.organisation();
    const before = await create(t, org);
    expect(before.status).toBe(200);

    const lock = await lockHolder(path.join(dir, `db-${n}.sqlite`));
    // Reads go on: WAL readers never wait for a writer.
    let healthDone = false;
    const pendingCreate = create(t, org).then((answer) => ({ answer, healthAnsweredFirst: healthDone }));
    const sick = await health(t);
    healthDone = true;
    expect(sick.status).toBe(503);
    // Anyone may ask /healthz: it says degraded, and why goes to the log only.
    expect(sick.body).toEqual({ ok: false, problem: 'the database cannot be written' });
    expect(logged).toContainEqual(
      expect.objectContaining({ msg: 'health: the database cannot be written', problem: 'database is locked' }),
    );
    const read = await t.request('GET', `/api/checkout-sessions/${before.body.id}`, { token: org.testToken });
    expect(read.status).toBe(200);
    // The create waits a moment for the lock, off the event loop: health was answered meanwhile.
    const { answer: failed, healthAnsweredFirst } = await pendingCreate;
    expect(healthAnsweredFirst).toBe(true);
    expect(failed.status).toBe(500);
    expect(failed.body.error.code).toBe('internal_error');
    expect(failed.text).not.toMatch(/SQLITE|locked|sql/i);

    await lock.release();
    expect((await create(t, org)).status).toBe(200);
    // A health answer stands for up to a second.
    const healthy = await until(
      () => health(t),
      (answer) => answer.status === 200,
    );
    expect(healthy).toEqual({ status: 200, body: { ok: true } });
    expect(logged).toContainEqual(expect.objectContaining({ msg: 'health: the database can be written again' }));
    expect(await t.server.store.countPayments(org.id)).toBe(2);
  });
});

describe('one server per SQLite file', () => {
  it('refuses to start a second server on a file in use, and starts once the first has stopped', async () => {
    const file = newFile();
    const first = await serverOn(file);
    await expect(createPaymentServer({ port: 0, db: file, logger: quiet })).rejects.toThrow(
      /is in use by another payment-server/,
    );
    await first.close();
    running.splice(running.indexOf(first), 1);
    const second = await serverOn(file);
    expect((await health(second)).status).toBe(200);
  });

  it('says so on the command line, exit code 2', async () => {
    const file = newFile();
    await serverOn(file);
    const cli = await runCli(['--db', file, '--port', '0']);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toMatch(/could not start: .*is in use by another payment-server/);
  });
});

describe('a damaged database file', () => {
  /** A database with `sessions` sessions, closed. */
  async function filled(sessions: number): Promise<string> {
    const file = newFile();
    const t = await serverOn(file);
    const org = await t.organisation();
    for (let i = 0; i < sessions; i += 100)
      await Promise.all(Array.from({ length: Math.min(100, sessions - i) }, () => create(t, org)));
    await t.close();
    running.splice(running.indexOf(t), 1);
    return file;
  }

  /** Overwrites one page of `table`'s b-tree (found with SQLite's dbstat) with random bytes. */
  function damage(file: string, table: string) {
    const db = new Database(file, { readonly: true });
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const pages = db.prepare("select pageno from dbstat where name = ? and pagetype = 'leaf'").pluck().all(table);
    db.close();
    const page = pages[Math.floor(pages.length / 2)] as number;
    const fd = openSync(file, 'r+');
    writeSync(fd, randomBytes(pageSize - 200), 0, pageSize - 200, (page - 1) * pageSize + 100);
    closeSync(fd);
  }

  it.each([
    ['an index', 'sqlite_autoindex_payments_2'],
    ['a table', 'payments'],
  ])('refuses to start on a file with a damaged page of %s, naming the file', async (_what, table) => {
    const file = await filled(1000);
    damage(file, table);
    const start = createPaymentServer({ port: 0, db: file, logger: quiet });
    await expect(start).rejects.toThrow(/is damaged \(SQLite integrity check: .+\); restore it from a backup/);
    await expect(start).rejects.toThrow(file);
    // Nothing was written into it, and it is not held: it can be moved aside and replaced.
    const cli = await runCli(['--db', file, '--port', '0']);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toMatch(/could not start: .*is damaged/);
  });

  it('refuses a file that is not a database at all', async () => {
    const file = newFile();
    writeFileSync(file, 'these are not the pages you are looking for\n'.repeat(200));
    await expect(createPaymentServer({ port: 0, db: file, logger: quiet })).rejects.toThrow(
      /is damaged .*not a database/,
    );
  });
});

function runCli(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'server/bin/payment-server.js'), ...args], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      children.delete(child);
      resolve({ code, stderr });
    }),
  );
}

/**
 * The store failing while a webhook attempt is in flight (service document: Events,
 * Response and retry behaviour). The receiver holds its answer; meanwhile the store is
 * made to fail, on SQLite by another process holding the write lock, on PostgreSQL by a
 * TCP relay that resets every connection or stalls them all, by a table lock that
 * outlasts the statement timeout, and by a role with a tiny connection limit. Each time: the process does not
 * end (no unhandled rejection), it keeps answering, and once the store is back the
 * delivery carries on under the card rail's rules until the receiver has it.
 *
 * @tags long, slow
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/description.ts';
import { ADMIN_URL, freshDatabase, postgresAvailable, relay } from '../support/postgres.ts';
import { startReceiver } from '../support/receiver.ts';
import { type Org, sessionRequest, startTestServer, type TestServer } from '../support/server.ts';
import { paced, until } from '../support/pace.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Unhandled rejections while the file runs: each one would have ended the server's process.
 * The tests run side by side (each on a store of its own, most of their time spent waiting),
 * so one list serves them all and every test ends by finding it empty.
 */
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(() => {
  process.on('unhandledRejection', onUnhandled);
});
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
});

/**
 * A receiver whose first answer waits until `answerFirst` is called (then 500, so a retry
 * is due); later deliveries get 200 at once.
 */
async function holdingReceiver() {
  const arrivals: number[] = [];
  let arrived: () => void = () => undefined;
  const firstArrived = new Promise<void>((resolve) => (arrived = resolve));
  let release: () => void = () => undefined;
  const answerGate = new Promise<void>((resolve) => (release = resolve));
  const receiver = await startReceiver({
    handle: async () => {
      arrivals.push(Date.now());
      if (arrivals.length > 1) return 200;
      arrived();
      await answerGate;
      return 500;
    },
  });
  return {
    url: `${receiver.url}/hooks`,
    arrivals,
    firstArrived,
    answerFirst: () => release(),
    close: receiver.close,
  };
}

/**
 * Pays a card session whose webhook goes to the receiver, breaks the store while the
 * first attempt waits for its answer, lets the answer go, keeps the store broken for
 * `brokenMs`, mends it, and moves the clock until the second attempt arrives.
 */
async function deliveryThroughFailure(
  t: TestServer,
  org: Org,
  breakStore: () => Promise<void>,
  mendStore: () => Promise<void>,
  brokenMs: number,
) {
  const receiver = await holdingReceiver();
  try {
    const created = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      body: sessionRequest({ checkoutMethod: 'card', webhookUrl: receiver.url }),
    });
    expect(created.status).toBe(200);
    await t.sandbox('POST', `/sandbox/checkout-sessions/${created.body.id}/attempts`, {
      rail: 'card',
      outcome: 'succeeded',
    });
    await receiver.firstArrived;
    await breakStore();
    receiver.answerFirst();
    await sleep(brokenMs);
    // Still up while the store is down: the process answers what needs no store.
    expect((await fetch(`${t.url}/`)).status).toBe(200);
    await mendStore();
    // The attempt whose outcome could not be recorded counts as failed once its lease
    // ends; the retry is due a minute later on the organisation's clock.
    const arrivals = await until(
      async () => {
        await t.advanceClock(org.id, 60).catch(() => undefined);
        return receiver.arrivals.length;
      },
      (n) => n >= 2,
      30_000,
    );
    expect(arrivals).toBeGreaterThanOrEqual(2);
    const health = await fetch(`${t.url}/healthz`);
    expect(health.status).toBe(200);
    expect(unhandled).toEqual([]);
  } finally {
    await receiver.close();
  }
}

describe('SQLite: another process holds the write lock during a card delivery', { concurrent: true }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'delivery-lock-'));
  const children = new Set<ChildProcess>();
  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'keeps the process up, and delivers on the retry once the lock is gone',
    async () => {
      const file = path.join(dir, 'db.sqlite');
      const t = await startTestServer({ db: file, webhookPollIntervalMs: 25 });
      let child: ChildProcess | undefined;
      try {
        const org = await t.organisation();
        const script = `
        const db = new (require('better-sqlite3'))(process.argv[1]);
        db.exec('BEGIN IMMEDIATE');
        console.log('locked');
        process.stdin.once('data', () => { db.exec('COMMIT'); db.close(); process.exit(0); });`;
        await deliveryThroughFailure(
          t,
          org,
          async () => {
            child = spawn(process.execPath, ['-e', script, file], {
              cwd: repoRoot,
              stdio: ['pipe', 'pipe', 'inherit'],
            });
            children.add(child);
            await new Promise<void>((resolve) => child!.stdout!.once('data', () => resolve()));
          },
          async () => {
            child!.stdin!.write('go\n');
            await new Promise((resolve) => child!.once('exit', resolve));
            children.delete(child!);
          },
          8000,
        );
      } finally {
        await t.close();
      }
    },
    paced(120_000),
  );
});

describe.skipIf(!postgresAvailable())('PostgreSQL fails during a card delivery', { concurrent: true }, () => {
  /** A server reaching its database through a TCP relay that is broken (`down` or `stall`) during the delivery. */
  async function throughRelay(breakWith: 'down' | 'stall', brokenMs: number) {
    const db = await freshDatabase();
    const link = await relay(new URL(db.url));
    const url = new URL(db.url);
    url.host = `127.0.0.1:${link.port}`;
    const t = await startTestServer({ db: url.toString(), webhookPollIntervalMs: 25 });
    try {
      await deliveryThroughFailure(t, await t.organisation(), link[breakWith], link.up, brokenMs);
    } finally {
      await t.close();
      await link.close();
      await db.drop();
    }
  }

  it(
    'connections reset: the process stays up and delivers on the retry',
    () => throughRelay('down', 6000),
    paced(120_000),
  );

  it(
    'the network stalls (no byte either way, connections left open): the process stays up and delivers on the retry',
    () => throughRelay('stall', 12_000),
    paced(120_000),
  );

  it(
    'a table lock outlasts the statement timeout: the process stays up and delivers on the retry',
    async () => {
      const db = await freshDatabase();
      const t = await startTestServer({ db: db.url, webhookPollIntervalMs: 25 });
      const locker = new pg.Client({ connectionString: db.url });
      await locker.connect();
      try {
        const org = await t.organisation();
        await deliveryThroughFailure(
          t,
          org,
          async () => {
            await locker.query('begin');
            await locker.query('lock table webhook_deliveries, webhook_outbox in access exclusive mode');
          },
          () => locker.query('rollback').then(() => undefined),
          7000,
        );
      } finally {
        await locker.end();
        await t.close();
        await db.drop();
      }
    },
    paced(120_000),
  );

  it(
    'a role allowed two connections, both taken: the process stays up and delivers on the retry',
    async () => {
      const db = await freshDatabase();
      const role = `payment_small_${randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: ADMIN_URL });
      await admin.connect();
      // Room enough while the organisation is set up (the server's pool opens several); the
      // limit drops to two when the store is broken.
      await admin.query(`create role ${role} login connection limit 10`);
      await admin.query(`grant all on database ${db.name} to ${role}`);
      const owner = new pg.Client({ connectionString: db.url });
      await owner.connect();
      await owner.query(`grant all on schema public to ${role}`);
      await owner.end();
      const url = new URL(db.url);
      url.username = role;
      const t = await startTestServer({ db: url.toString(), webhookPollIntervalMs: 25 });
      const hogs: pg.Client[] = [];
      try {
        const org = await t.organisation();
        await deliveryThroughFailure(
          t,
          org,
          async () => {
            // Every connection the server holds is ended, and the role's two slots are taken.
            // The server's pool may connect again in between: its connections are ended again
            // until both slots are the hogs'.
            await admin.query(`alter role ${role} connection limit 2`);
            while (hogs.length < 2) {
              await admin.query(
                'select pg_terminate_backend(pid) from pg_stat_activity where usename = $1 and pid <> all($2::int[])',
                [role, hogs.map((hog) => (hog as unknown as { processID: number }).processID)],
              );
              const hog = new pg.Client({ connectionString: url.toString() });
              try {
                await hog.connect();
                hogs.push(hog);
              } catch {
                await hog.end().catch(() => undefined);
              }
            }
          },
          async () => {
            await Promise.all(hogs.splice(0).map((hog) => hog.end()));
          },
          6000,
        );
      } finally {
        await Promise.all(hogs.map((hog) => hog.end()));
        await t.close();
        await db.drop();
        await admin.query(`drop role if exists ${role}`);
        await admin.end();
      }
    },
    paced(120_000),
  );
});

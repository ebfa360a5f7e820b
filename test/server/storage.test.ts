/**
 * Storage behaviour seen from outside: a server on a real SQLite file with a fast periodic
 * clean-up, driven through the API and the sandbox clock, with the file inspected through
 * a second, read-only connection.
 *
 * - Idempotency records are remembered 24 hours on the organisation's clock (service
 *   document, Limits) and then deleted by the clean-up, so a key can be used anew and
 *   nothing accumulates on disk; a record inside its 24 hours stays, and so does every
 *   record of an organisation whose clock did not move.
 * - The clean-up deletes idempotency records only: the sessions stay readable.
 * - The database runs in WAL mode, and under a steady stream of creates the WAL is
 *   rewound whenever it passes its length (a small one here), so the file stays bounded
 *   and every create is kept.
 *
 * The row counts read the `idempotency_keys` table (org_id column) of server/store.
 */
import { closeSync, existsSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionRequest, startTestServer, type Org, type TestServer } from '../support/server.ts';
import { CLEANUP_CHUNK } from '../../server/store/sqlite/store.ts';
import { paced, until } from '../support/pace.ts';

const DAY_SECONDS = 24 * 60 * 60;
const CLEANUP_INTERVAL_MS = 50;

const dir = mkdtempSync(path.join(os.tmpdir(), 'payment-storage-'));
const file = path.join(dir, 'payment.sqlite');
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ db: file, cleanupIntervalMs: CLEANUP_INTERVAL_MS });
});

afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a query on a read-only connection of its own to the server's database file. */
function readOnly<T>(query: (db: Database.Database) => T): T {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return query(db);
  } finally {
    db.close();
  }
}

function keyRows(orgId: string): number {
  return readOnly(
    (db) => (db.prepare('select count(*) as n from idempotency_keys where org_id = ?').get(orgId) as { n: number }).n,
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `read()` gives `want` or the (paced) time is up; returns the last value read. */
const eventually = <T>(read: () => T, want: T, timeoutMs = 3_000): Promise<T> =>
  until(read, (value) => value === want, timeoutMs);

/** Creates a session with a key, using a fresh token (the org's clock may have moved past the last one). */
async function create(org: Org, key: string, body: Record<string, unknown> = sessionRequest()) {
  const token = await t.token(org.apiKeys.test.clientId, org.apiKeys.test.clientSecret);
  return t.request('POST', '/api/checkout-sessions', { token, body, headers: { 'idempotency-key': key } });
}

describe('idempotency records on disk', () => {
  it('a record older than 24 hours on the organisation’s clock is deleted by the clean-up, and its key is then new', async () => {
    const [org, bystander] = await Promise.all([t.organisation(), t.organisation()]);
    const first = await create(org, 'order-1001');
    expect(first.status).toBe(200);
    expect((await create(bystander, 'order-1001')).status).toBe(200);
    expect(keyRows(org.id)).toBe(1);
    expect(keyRows(bystander.id)).toBe(1);

    await t.advanceClock(org.id, DAY_SECONDS + 1);
    await sleep(4 * CLEANUP_INTERVAL_MS);
    expect(await eventually(() => keyRows(org.id), 0)).toBe(0);
    // Only the organisation whose clock passed 24 hours loses its record.
    expect(keyRows(bystander.id)).toBe(1);

    // Through the API: the same key with a different body is a new request, not idempotency_error.
    const again = await create(org, 'order-1001', sessionRequest({ amount: { total: 99.99 } }));
    expect(again.status, again.text).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.body.id).not.toBe(first.body.id);
    expect(again.body.amount.total).toBe(99.99);
    expect(keyRows(org.id)).toBe(1);

    // The clean-up deleted the record only: the first session is still there (expired by now).
    const token = await t.token(org.apiKeys.test.clientId, org.apiKeys.test.clientSecret);
    const read = await t.request('GET', `/api/checkout-sessions/${first.body.id}`, { token });
    expect(read.status).toBe(200);
    expect(read.body.status).toBe('expired');
  });

  it('a record inside its 24 hours is kept, and the key still replays or refuses', async () => {
    const org = await t.organisation();
    const first = await create(org, 'order-2002');
    expect(first.status).toBe(200);

    await t.advanceClock(org.id, DAY_SECONDS - 60);
    await sleep(6 * CLEANUP_INTERVAL_MS); // several clean-up rounds
    expect(keyRows(org.id)).toBe(1);

    const replay = await create(org, 'order-2002');
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.id).toBe(first.body.id);
    const different = await create(org, 'order-2002', sessionRequest({ amount: { total: 1.23 } }));
    expect(different.status).toBe(400);
    expect(different.body.error.code).toBe('idempotency_error');
    expect(keyRows(org.id)).toBe(1);

    // One more minute and a second: past 24 hours, gone.
    await t.advanceClock(org.id, 61);
    expect(await eventually(() => keyRows(org.id), 0)).toBe(0);
    const fresh = await create(org, 'order-2002', sessionRequest({ amount: { total: 1.23 } }));
    expect(fresh.status).toBe(200);
    expect(fresh.body.id).not.toBe(first.body.id);
  });

  // More records than one clean-up statement deletes, so that it takes several.
  const BULK = CLEANUP_CHUNK + 250;

  it(
    `stays flat: ${BULK} keyed creates leave ${BULK} records, and none once 24 hours have passed`,
    async () => {
      const org = await t.organisation();
      const token = await t.token(org.apiKeys.test.clientId, org.apiKeys.test.clientSecret);
      const ids = new Set<string>();
      for (let i = 0; i < BULK; i += 25) {
        const answers = await Promise.all(
          Array.from({ length: 25 }, (_, j) =>
            t.request('POST', '/api/checkout-sessions', {
              token,
              body: sessionRequest({ creditorReference: { reference: `INV-${i + j}` } }),
              headers: { 'idempotency-key': `bulk-${i + j}` },
            }),
          ),
        );
        for (const answer of answers) {
          expect(answer.status).toBe(200);
          ids.add(answer.body.id);
        }
      }
      expect(ids.size).toBe(BULK);
      expect(keyRows(org.id)).toBe(BULK);
      expect(await t.server.store.countPayments(org.id)).toBe(BULK);

      await t.advanceClock(org.id, DAY_SECONDS + 1);
      expect(await eventually(() => keyRows(org.id), 0)).toBe(0);
      // The payments are kept; only the idempotency memory is gone.
      expect(await t.server.store.countPayments(org.id)).toBe(BULK);
    },
    paced(60_000),
  );
});

describe('the database file', () => {
  it('is in WAL mode', () => {
    expect(readOnly((db) => db.pragma('journal_mode', { simple: true }))).toBe('wal');
    expect(existsSync(`${file}-wal`)).toBe(true);
  });
});

describe('the WAL under a steady stream of creates', () => {
  const REWIND_FRAMES = 64;
  const CREATES = 2_000;
  const FRAME_BYTES = 4096 + 24;
  const walDir = mkdtempSync(path.join(os.tmpdir(), 'payment-wal-'));
  const walDb = path.join(walDir, 'payment.sqlite');
  let w: TestServer;

  beforeAll(async () => {
    w = await startTestServer({ db: walDb, walRewindFrames: REWIND_FRAMES });
  });

  afterAll(async () => {
    await w?.close();
    rmSync(walDir, { recursive: true, force: true });
  });

  /** The WAL header's checkpoint sequence number: SQLite adds one each time it rewinds the WAL. */
  function rewinds(): number {
    const fd = openSync(`${walDb}-wal`, 'r');
    try {
      const header = Buffer.alloc(16);
      readSync(fd, header, 0, 16, 0);
      return header.readUInt32BE(12);
    } finally {
      closeSync(fd);
    }
  }

  // A fixed amount of work, however long the machine takes over it: a create writes several
  // frames, so a WAL never rewound ends up holding more than a frame per create of the
  // stream, and is not rewound once. Rewound on length (or by SQLite's own checkpoint, the
  // backstop), it is rewound every few hundred creates and stays about half that size; on a
  // slower machine more checkpoints fall within the stream, so it is rewound more often.
  it(
    'is rewound again and again, stays bounded, and loses no create',
    async () => {
      const org = await w.organisation();
      const token = await w.token(org.apiKeys.test.clientId, org.apiKeys.test.clientSecret);
      const before = rewinds();
      let largest = 0;
      const watch = setInterval(() => {
        largest = Math.max(largest, statSync(`${walDb}-wal`).size);
      }, 5);
      // 40 clients on a thread of their own, each sending its next create as soon as the last
      // is answered: commits follow each other closely, so a checkpoint alone seldom finds
      // the WAL quiet enough to rewind it.
      const load = new Worker(STREAM_OF_CREATES, {
        eval: true,
        workerData: { url: w.url, token, body: sessionRequest(), clients: 40, creates: CREATES },
      });
      const [outcome] = (await once(load, 'message')) as [{ created: number; failures: string[] }];
      clearInterval(watch);
      expect(outcome.failures).toEqual([]);
      expect(outcome.created).toBe(CREATES);
      const rewound = rewinds() - before;
      console.log('REWOUND', rewound, largest / FRAME_BYTES);
      expect(rewound).toBeGreaterThanOrEqual(CREATES / 400);
      expect(largest).toBeLessThan(CREATES * FRAME_BYTES);
      expect(await w.server.store.countPayments(org.id)).toBe(CREATES);
    },
    paced(60_000),
  );
});

/** The load of the WAL test, run on a worker thread: `creates` keyed creates from `clients` loops. */
const STREAM_OF_CREATES = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, token, body, clients, creates } = workerData;
let sent = 0;
let created = 0;
const failures = [];
async function client(n) {
  for (let i = 0; sent < creates; i++) {
    sent += 1;
    const res = await fetch(url + '/api/checkout-sessions', {
      method: 'POST',
      headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json', 'idempotency-key': 'wal-' + n + '-' + i },
      body: JSON.stringify(body),
    });
    await res.arrayBuffer();
    if (res.status === 200) created++;
    else failures.push(String(res.status));
  }
}
Promise.all(Array.from({ length: clients }, (_, n) => client(n))).then(() => parentPort.postMessage({ created, failures }));
`;

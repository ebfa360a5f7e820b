/**
 * The Store contract (server/store/types.ts), the same tests against each store: SQLite
 * (a file) and PostgreSQL (a fresh database; skipped, said once, where none answers).
 * Through the stores' own API, as the server uses them: settings, organisations and keys,
 * creates with idempotency records (claimed, held, replaced once expired, racing),
 * payment updates with their queued webhook, the outbox's leases and deliveries, faults,
 * and the clean-up.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Background } from '../../server/background/thread.ts';
import { Ids } from '../../server/domain/ids.ts';
import { openStore } from '../../server/store/open.ts';
import { CLEANUP_CHUNK } from '../../server/store/sql-store.ts';
import type { IdempotencyRecord, Lease, Organisation, Payment, Store } from '../../server/store/types.ts';
import { type FreshDatabase, freshDatabase, postgresAvailable } from '../support/postgres.ts';

const DAY = 24 * 60 * 60 * 1000;
const ids = new Ids();

function organisation(overrides: Partial<Organisation> = {}): Organisation {
  return {
    id: `org_${randomUUID()}`,
    name: 'Contract',
    settlementCurrency: 'NZD',
    cardEnabled: true,
    openBankingApproved: true,
    settlementAccount: true,
    webhookSecret: 'whsec_contract',
    clockOffsetMs: 0,
    ...overrides,
  };
}

function payment(org: Organisation, overrides: Partial<Payment> = {}): Payment {
  const now = Date.now();
  return {
    transactionId: ids.transactionId(),
    kind: 'checkout_session',
    sessionId: ids.sessionId(),
    orgId: org.id,
    mode: 'test',
    status: 'created',
    amountTotal: 9999.99,
    currency: 'NZD',
    checkoutMethod: 'both',
    reference: 'ORDER-1',
    particulars: '',
    code: 'ABC',
    redirectUrl: 'https://shop.example/done',
    webhookUrl: 'https://shop.example/hooks',
    foreignTransactionId: null,
    description: null,
    transactionType: 'open_banking',
    createdAt: now,
    updatedAt: now,
    expiresAt: now + DAY,
    completedAt: null,
    ...overrides,
  };
}

function record(org: Organisation, key: string, createdAt: number, body = '{"id":"x"}'): IdempotencyRecord {
  return {
    orgId: org.id,
    mode: 'test',
    key,
    kind: 'checkout_session',
    fingerprint: 'fp',
    status: 200,
    body,
    createdAt,
    expiresAt: createdAt + DAY,
  };
}

const lease = (owner: string, ms = 10_000): Lease => ({ owner, until: Date.now() + ms });

const stores: Array<
  [name: string, available: () => boolean, open: () => Promise<{ url: string; done(): Promise<void> }>]
> = [
  [
    'SQLite',
    () => true,
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'store-contract-'));
      return { url: path.join(dir, 'db.sqlite'), done: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  ],
  [
    'PostgreSQL',
    postgresAvailable,
    async () => {
      const db: FreshDatabase = await freshDatabase();
      return { url: db.url, done: db.drop };
    },
  ],
];

describe.each(stores)('the %s store', (_name, available, open) => {
  let store: Store;
  let background: Background;
  let done: () => Promise<void>;
  let org: Organisation;

  beforeAll(async () => {
    if (!available()) return;
    const target = await open();
    done = target.done;
    background = new Background();
    store = await openStore(target.url, { background, log: pino({ level: 'silent' }) });
    await store.migrate();
    org = organisation();
    await store.createOrganisation(org);
  });
  afterAll(async () => {
    if (!available()) return;
    await store.close();
    await background.close();
    await done();
  });

  it.skipIf(!available())('keeps settings, and the first value of a setting ensured twice', async () => {
    expect(await store.getSetting('missing')).toBeUndefined();
    await store.putSetting('a', '1');
    await store.putSetting('a', '2');
    expect(await store.getSetting('a')).toBe('2');
    const [first, second] = await Promise.all([store.ensureSetting('b', 'x'), store.ensureSetting('b', 'y')]);
    expect(first).toBe(second);
    expect(await store.ensureSetting('b', 'z')).toBe(first);
    expect(await store.writeProblem()).toBeUndefined();
  });

  it.skipIf(!available())(
    'keeps organisations and keys, their clock and secret as last set, and deletes keys',
    async () => {
      const other = organisation({ settlementCurrency: 'AUD', cardEnabled: false, clockOffsetMs: 5 });
      await store.createOrganisation(other);
      expect(await store.getOrganisation(other.id)).toEqual(other);
      await store.setClockOffset(other.id, 3 * DAY);
      await store.setWebhookSecret(other.id, 'whsec_new');
      expect(await store.getOrganisation(other.id)).toMatchObject({
        clockOffsetMs: 3 * DAY,
        webhookSecret: 'whsec_new',
      });
      expect(await store.getOrganisation('org_none')).toBeUndefined();
      const key = {
        clientId: `ck_test_${randomUUID()}`,
        orgId: other.id,
        mode: 'test' as const,
        secretHash: 'scrypt$a$b',
      };
      await store.createApiKey(key);
      expect(await store.getApiKey(key.clientId)).toEqual(key);
      expect(await store.deleteApiKey(key.clientId)).toBe(true);
      expect(await store.getApiKey(key.clientId)).toBeUndefined();
      expect(await store.deleteApiKey(key.clientId)).toBe(false);
    },
  );

  it.skipIf(!available())(
    'stores a payment exactly, and finds it by session, by transaction and in any organisation',
    async () => {
      const p = payment(org, { amountTotal: 0.07, foreignTransactionId: 'f-1', description: 'x', particulars: 'p' });
      expect(await store.createPayment(p)).toBeUndefined();
      expect(await store.getPaymentBySessionId(org.id, p.sessionId!)).toEqual(p);
      expect(await store.getPayment(org.id, p.transactionId)).toEqual(p);
      expect(await store.findPayment({ sessionId: p.sessionId! })).toEqual(p);
      expect(await store.findPayment({ transactionId: p.transactionId })).toEqual(p);
      expect(await store.getPaymentBySessionId('org_other', p.sessionId!)).toBeUndefined();
    },
  );

  it.skipIf(!available())(
    'claims an idempotency key once; a live record holds it, an expired one gives way',
    async () => {
      const key = randomUUID();
      const now = Date.now();
      const first = payment(org);
      expect(await store.createPayment(first, record(org, key, now, '{"first":1}'))).toBeUndefined();
      const second = payment(org);
      const holder = await store.createPayment(second, record(org, key, now + 1000, '{"second":1}'));
      expect(holder).toMatchObject({ key, body: '{"first":1}', createdAt: now });
      expect(await store.findPayment({ transactionId: second.transactionId })).toBeUndefined();
      const later = payment(org);
      expect(await store.createPayment(later, record(org, key, now + DAY, '{"later":1}'))).toBeUndefined();
      expect(await store.findPayment({ transactionId: later.transactionId })).toBeDefined();
    },
  );

  it.skipIf(!available())(
    'of 20 creates racing with one key, exactly one inserts; the others get its record',
    async () => {
      const key = randomUUID();
      const now = Date.now();
      const creates = Array.from({ length: 20 }, (_, i) => payment(org, { reference: `RACE-${i}` }));
      const answers = await Promise.all(
        creates.map((p, i) => store.createPayment(p, record(org, key, now, `{"n":${i}}`))),
      );
      const inserted = answers.filter((a) => a === undefined);
      expect(inserted).toHaveLength(1);
      const winner = creates[answers.indexOf(undefined)]!;
      for (const a of answers) if (a) expect(a.body).toBe(`{"n":${creates.indexOf(winner)}}`);
      const found = await Promise.all(creates.map((p) => store.findPayment({ transactionId: p.transactionId })));
      expect(found.filter(Boolean)).toHaveLength(1);
    },
  );

  it.skipIf(!available())('updates a payment with its webhook in one step, never once completed', async () => {
    const p = payment(org);
    await store.createPayment(p);
    const completedAt = Date.now();
    const queued = await store.updatePayment(
      p.transactionId,
      { status: 'completed', transactionType: 'card', updatedAt: completedAt, completedAt },
      {
        entry: {
          transactionId: p.transactionId,
          orgId: org.id,
          mode: 'test',
          rail: 'card',
          url: p.webhookUrl!,
          body: '{"event":"checkout_session.completed"}',
          legacy: false,
          nextAttemptAt: completedAt,
        },
        lease: lease('me'),
      },
    );
    expect(queued).toMatchObject({ transactionId: p.transactionId, attemptsMade: 0, state: 'pending', rail: 'card' });
    expect(await store.findPayment({ transactionId: p.transactionId })).toMatchObject({
      status: 'completed',
      transactionType: 'card',
      completedAt,
    });
    const again = await store.updatePayment(p.transactionId, {
      status: 'failed',
      transactionType: 'open_banking',
      updatedAt: completedAt,
      completedAt: null,
    });
    expect(again).toBe(false);
  });

  it.skipIf(!available())(
    'leases each due webhook to one claimer, due on its organisation clock, until it is finished',
    async () => {
      const ahead = organisation({ clockOffsetMs: DAY });
      await store.createOrganisation(ahead);
      const entries = [];
      for (const [o, dueIn] of [
        [org, 0],
        [org, 0],
        [org, DAY / 2],
        [ahead, DAY / 2],
      ] as const) {
        const p = payment(o);
        await store.createPayment(p);
        // Times in real time: half a day ahead is due only on `ahead`'s clock, a day ahead of real time.
        const now = Date.now();
        const entry = await store.updatePayment(
          p.transactionId,
          { status: 'completed', transactionType: 'card', updatedAt: now, completedAt: now },
          {
            entry: {
              transactionId: p.transactionId,
              orgId: o.id,
              mode: 'test',
              rail: 'card',
              url: 'https://shop.example/hooks',
              body: '{}',
              legacy: false,
              nextAttemptAt: now + dueIn,
            },
            // An ended lease: the entry is free to claim.
            lease: lease('gone', -1),
          },
        );
        entries.push(entry as Exclude<typeof entry, false | undefined>);
      }
      // Ten claimers at once: the due ones (two on org's clock now, one on ahead's) each go to one.
      const claims = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.claimDueWebhooks(lease(`c${i}`), Date.now(), 50)),
      );
      const claimed = claims.flat().map((e) => e.id);
      expect(claimed.sort()).toEqual([entries[0]!.id, entries[1]!.id, entries[3]!.id].sort());
      // Leased: nobody else gets them until the lease ends or the attempt is finished.
      expect(await store.claimDueWebhooks(lease('late'), Date.now(), 50)).toEqual([]);
      const entry = (await store.getWebhook(entries[0]!.id))!;
      const deliveryId = await store.startDelivery(entry, {
        outboxId: entry.id,
        transactionId: entry.transactionId,
        url: entry.url,
        attempt: 1,
        at: Date.now(),
        signed: true,
      });
      expect(await store.unfinishedDelivery(entry.id)).toMatchObject({ id: deliveryId, attempt: 1 });
      await store.finishDelivery(
        deliveryId,
        { responseStatus: 500, error: null, final: false },
        { state: 'pending', nextAttemptAt: Date.now() - 1 },
      );
      expect(await store.unfinishedDelivery(entry.id)).toBeUndefined();
      // A late second conclusion (a server that took the entry up as interrupted, or the
      // first server's write after its lease ended) changes nothing: the first one stands.
      await store.finishDelivery(
        deliveryId,
        { responseStatus: null, error: 'interrupted', final: true },
        { state: 'failed', nextAttemptAt: Date.now() },
      );
      expect(await store.listDeliveries(entry.transactionId)).toEqual([
        expect.objectContaining({ attempt: 1, responseStatus: 500, final: false, signed: true }),
      ]);
      // Finished: its lease is free, and it is due again.
      expect((await store.claimDueWebhooks(lease('next'), Date.now(), 50)).map((e) => e.id)).toEqual([entry.id]);
      expect((await store.getWebhook(entry.id))!.attemptsMade).toBe(1);
      // Released leases (a store's only user, at start) free the rest.
      await store.releaseWebhookLeases();
      const freed = (await store.claimDueWebhooks(lease('again'), Date.now(), 50)).map((e) => e.id);
      expect(freed).toEqual(expect.arrayContaining([entries[0]!.id, entries[1]!.id, entries[3]!.id]));
      expect(freed).not.toContain(entries[2]!.id);
    },
  );

  it.skipIf(!available())('arms faults per organisation and kind, and uses each arming once', async () => {
    const o = organisation();
    await store.createOrganisation(o);
    expect(await store.takeFault(o.id, 'internal_error_after_commit')).toBe(false);
    await store.setFault(o.id, 'internal_error_after_commit', 2);
    expect(await store.organisationsWithFaults()).toContain(o.id);
    const takes = await Promise.all([1, 2, 3, 4].map(() => store.takeFault(o.id, 'internal_error_after_commit')));
    expect(takes.filter(Boolean)).toHaveLength(2);
    expect(await store.takeFault(o.id, 'signing_secret_unavailable')).toBe(false);
    expect(await store.organisationsWithFaults()).not.toContain(o.id);
  });

  it.skipIf(!available())(
    `deletes expired idempotency records on each organisation's clock, ${CLEANUP_CHUNK} at a time`,
    async () => {
      const o = organisation();
      const ahead = organisation({ clockOffsetMs: 2 * DAY });
      await store.createOrganisation(o);
      await store.createOrganisation(ahead);
      const now = Date.now();
      const expired = CLEANUP_CHUNK + 10;
      await Promise.all(
        Array.from({ length: expired }, (_, i) =>
          store.createPayment(payment(o), record(o, `old-${i}`, now - 2 * DAY)),
        ),
      );
      await store.createPayment(payment(o), record(o, 'live', now));
      // Live on real time, expired on its organisation's clock.
      await store.createPayment(payment(ahead), record(ahead, 'ahead', now));
      const before = await store.deleteExpired(now);
      expect(before.idempotencyRecords).toBeGreaterThanOrEqual(expired + 1);
      const held = await store.createPayment(payment(o), record(o, 'live', now + 1));
      expect(held).toMatchObject({ key: 'live' });
      expect(await store.createPayment(payment(o), record(o, 'old-0', now))).toBeUndefined();
      expect(await store.createPayment(payment(ahead), record(ahead, 'ahead', now + 1))).toBeUndefined();
    },
  );
});

/**
 * How the PostgreSQL store commits its creates: those of one turn of the event loop
 * batched (perTurn, connection.ts) into one transaction. A create's idempotency key is
 * claimed by a unique constraint in that transaction, so creates racing with one key on
 * any number of servers meet in the database.
 */
import type DataLoader from 'dataloader';
import type { Kysely, Transaction } from 'kysely';
import { type IdempotencyKeysTable, idempotencyRow, paymentRow, type Tables, toIdempotency } from '../schema.ts';
import { replaceExpiredKey } from '../sql-store.ts';
import type { IdempotencyRecord, Payment } from '../types.ts';
import { perTurn } from './connection.ts';

/** A create as the store is given it: the payment, and the key it claims if any. */
export interface Create {
  payment: Payment;
  idempotency: IdempotencyRecord | undefined;
}

/** One create in a transaction of its own (the store's `insertPayment`): what a failed batch falls back to. */
export type InsertOne = (trx: Transaction<Tables>, create: Create) => Promise<IdempotencyRecord | undefined>;

const keyOf = (r: { org_id: string; mode: string; key: string }) => `${r.org_id}\u0000${r.mode}\u0000${r.key}`;

/** The creates of each turn, committed together: each resolves to the record holding its key, or undefined once stored. */
export function createsPerTurn(
  db: Kysely<Tables>,
  insertOne: InsertOne,
): DataLoader<Create, IdempotencyRecord | undefined> {
  return perTurn<Create, IdempotencyRecord | undefined>((batch) => commitCreates(db, batch, insertOne));
}

/**
 * The creates of one turn in one transaction: their keys claimed in one statement, the
 * payments of the claimed keys (and of creates without a key) inserted in another, and
 * the records holding the other keys read back. Creates racing with one key, on any
 * server, meet at the unique key of `idempotency_keys`: the later ones wait for the first
 * to commit, then find its record and write nothing. If the batch fails, each create is
 * tried in a transaction of its own, so only a faulty one fails.
 */
async function commitCreates(
  db: Kysely<Tables>,
  batch: readonly Create[],
  insertOne: InsertOne,
): Promise<Array<IdempotencyRecord | undefined | Error>> {
  try {
    return await db.transaction().execute((trx) => insertCreates(trx, batch));
  } catch {
    return Promise.all(
      batch.map((c) =>
        db
          .transaction()
          .execute((trx) => insertOne(trx, c))
          .catch((error: unknown) => (error instanceof Error ? error : new Error(String(error)))),
      ),
    );
  }
}

async function insertCreates(trx: Transaction<Tables>, batch: readonly Create[]) {
  const records = batch.map((c) => c.idempotency && idempotencyRow(c.idempotency));
  const keys = records.map((r) => r && keyOf(r));
  const claims = records.filter((r) => r !== undefined);
  const claimed = new Set<string>();
  if (claims.length > 0) {
    const rows = await trx
      .insertInto('idempotency_keys')
      .values(claims)
      .onConflict(replaceExpiredKey)
      .returning(['org_id', 'mode', 'key'])
      .execute();
    for (const row of rows) claimed.add(keyOf(row));
  }
  const held = keys.map((key) => key !== undefined && !claimed.has(key));
  const inserts = batch.filter((_, i) => !held[i]).map((c) => paymentRow(c.payment));
  if (inserts.length > 0) await trx.insertInto('payments').values(inserts).execute();
  const holders = new Map<string, IdempotencyRecord>();
  const unclaimed = records.filter((r, i): r is IdempotencyKeysTable => r !== undefined && held[i] === true);
  if (unclaimed.length > 0) {
    const rows = await trx
      .selectFrom('idempotency_keys')
      .selectAll()
      .where(({ eb, refTuple, tuple }) =>
        eb(
          refTuple('org_id', 'mode', 'key'),
          'in',
          unclaimed.map((r) => tuple(r.org_id, r.mode, r.key)),
        ),
      )
      .execute();
    for (const row of rows) holders.set(keyOf(row), toIdempotency(row));
  }
  // A key's holder cannot vanish before this read (ON CONFLICT locks the row even when its
  // WHERE declines the update), but were it missing, that create fails rather than being
  // answered as stored: undefined here means the payment was inserted.
  return keys.map((key, i) => (held[i] ? (holders.get(key!) ?? new Error('idempotency record not found')) : undefined));
}

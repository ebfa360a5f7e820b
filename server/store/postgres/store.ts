/**
 * The PostgreSQL store: node-postgres's pool behind Kysely, the shared queries of
 * SqlStore. Any number of servers may share one database, so nothing is kept in memory
 * (`exclusive` is false: every read asks the database), a create's idempotency key is
 * claimed by a unique constraint in the create's own transaction, and due webhooks are
 * claimed with `FOR UPDATE SKIP LOCKED`.
 *
 * What every request asks (its key and organisation, a polled session, whether a fault is
 * armed) and the creates are batched per turn of the event loop (DataLoader, nothing
 * cached): each round trip to the database costs the server a socket write and the
 * database a wake-up, so the requests of one turn share their round trips (figures in
 * bench/README.md).
 *
 * While the database is unreachable every query fails within the connection timeout, so
 * a request is answered 500 and never hangs; the pool connects again by itself once the
 * database is back.
 */
import DataLoader from 'dataloader';
import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import {
  type IdempotencyKeysTable,
  idempotencyRow,
  paymentRow,
  type Tables,
  toIdempotency,
  toOrganisation,
  toPayment,
} from '../schema.ts';
import { replaceExpiredKey, SqlStore } from '../sql-store.ts';
import type { ApiKey, FaultKind, IdempotencyRecord, Organisation, Payment } from '../types.ts';

/** Connections per server: with N servers, N × this must stay under the database's `max_connections`. */
export const POOL_SIZE = 10;
/** Longest a statement may run on the database (its `statement_timeout`). */
export const STATEMENT_TIMEOUT_MS = 5000;
/** Longest a request waits for a connection, or for a new one to open. */
export const CONNECT_TIMEOUT_MS = 5000;
/** Loads or creates in one batch, at most. */
const BATCH_SIZE = 100;

const INT8 = 20;

/**
 * `bigint` columns (times in milliseconds, row ids) and counts read as numbers, as the
 * SQLite store reads them: every value they hold is below 2^53.
 */
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8 ? Number : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

type Account = { apiKey: ApiKey; org: Organisation };

interface Create {
  payment: Payment;
  idempotency: IdempotencyRecord | undefined;
}

const keyOf = (r: { org_id: string; mode: string; key: string }) => `${r.org_id}\u0000${r.mode}\u0000${r.key}`;

/** Batches of the loads made in one turn of the event loop; nothing kept between turns. */
function perTurn<K, V>(load: (keys: readonly K[]) => Promise<ArrayLike<V | Error>>): DataLoader<K, V> {
  return new DataLoader(load, { cache: false, maxBatchSize: BATCH_SIZE, batchScheduleFn: (run) => setImmediate(run) });
}

export class PostgresStore extends SqlStore {
  readonly exclusive = false;

  private readonly accounts = perTurn<string, Account | undefined>(async (clientIds) => {
    const rows = await this.db
      .selectFrom('api_keys')
      .innerJoin('organisations', 'organisations.id', 'api_keys.org_id')
      .selectAll('organisations')
      .select(['api_keys.client_id', 'api_keys.org_id', 'api_keys.mode', 'api_keys.secret_hash'])
      .where('api_keys.client_id', 'in', [...new Set(clientIds)])
      .execute();
    const found = new Map(
      rows.map((row) => [
        row.client_id,
        {
          apiKey: { clientId: row.client_id, orgId: row.org_id, mode: row.mode, secretHash: row.secret_hash },
          org: toOrganisation(row),
        },
      ]),
    );
    return clientIds.map((id) => found.get(id));
  });

  private readonly sessions = perTurn<{ orgId: string; sessionId: string }, Payment | undefined>(async (wanted) => {
    const rows = await this.db
      .selectFrom('payments')
      .selectAll()
      .where('session_id', 'in', [...new Set(wanted.map((w) => w.sessionId))])
      .execute();
    const found = new Map(rows.map((row) => [row.session_id, toPayment(row)]));
    return wanted.map((w) => {
      const payment = found.get(w.sessionId);
      return payment?.orgId === w.orgId ? payment : undefined;
    });
  });

  /** Organisations with some armed fault, asked per turn: most creates then make no write for it. */
  private readonly armed = perTurn<string, boolean>(async (orgIds) => {
    const rows = await this.db
      .selectFrom('faults')
      .select('org_id')
      .distinct()
      .where('org_id', 'in', [...new Set(orgIds)])
      .where('remaining', '>', 0)
      .execute();
    const armed = new Set(rows.map((row) => row.org_id));
    return orgIds.map((id) => armed.has(id));
  });

  private readonly creates = perTurn<Create, IdempotencyRecord | undefined>((batch) => this.commitCreates(batch));

  /** `onConnectionError`: a connection broke (the database restarted, say); its queries fail on their own. */
  constructor(url: string, onConnectionError: (error: Error) => void) {
    const pool = new pg.Pool({
      connectionString: url,
      max: POOL_SIZE,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      statement_timeout: STATEMENT_TIMEOUT_MS,
      // The client's own limit, past the server's: a statement on a connection that went
      // silent (the database host gone) still ends.
      query_timeout: STATEMENT_TIMEOUT_MS + CONNECT_TIMEOUT_MS,
      idleTimeoutMillis: 30_000,
      application_name: 'payment-server',
      types,
    });
    // An error event without a listener ends the process: the pool listens to its idle
    // connections, and each connection is given a listener of its own for the time it is
    // in use (node-postgres leaves those to the user). The pool hangs the broken client on
    // its error (`err.client`): passed on, a log would print the connection's parameters
    // and its cancel key.
    const broke = (error: Error & { client?: unknown }) => {
      delete error.client;
      onConnectionError(error);
    };
    pool.on('error', broke);
    pool.on('connect', (client) => client.on('error', broke));
    super(new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) }), 'postgres');
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }

  override async getAccount(clientId: string): Promise<Account | undefined> {
    return clientId.includes('\0') ? undefined : this.accounts.load(clientId);
  }

  override async getPaymentBySessionId(orgId: string, sessionId: string): Promise<Readonly<Payment> | undefined> {
    return sessionId.includes('\0') ? undefined : this.sessions.load({ orgId, sessionId });
  }

  override async takeFault(orgId: string, kind: FaultKind): Promise<boolean> {
    return (await this.armed.load(orgId)) && super.takeFault(orgId, kind);
  }

  createPayment(payment: Payment, idempotency?: IdempotencyRecord): Promise<IdempotencyRecord | undefined> {
    return this.creates.load({ payment, idempotency });
  }

  /** Each due webhook goes to one claimer: rows another server is claiming are skipped, not waited for. */
  protected override lockForClaim(query: Parameters<SqlStore['lockForClaim']>[0]) {
    return query.forUpdate('webhook_outbox').skipLocked();
  }

  /**
   * The creates of one turn in one transaction: their keys claimed in one statement, the
   * payments of the claimed keys (and of creates without a key) inserted in another, and
   * the records holding the other keys read back. Creates racing with one key, on any
   * server, meet at the unique key of `idempotency_keys`: the later ones wait for the first
   * to commit, then find its record and write nothing. If the batch fails, each create is
   * tried in a transaction of its own, so only a faulty one fails.
   */
  private async commitCreates(batch: readonly Create[]): Promise<Array<IdempotencyRecord | undefined | Error>> {
    try {
      return await this.db.transaction().execute((trx) => this.insertCreates(trx, batch));
    } catch {
      return Promise.all(
        batch.map((c) =>
          this.db
            .transaction()
            .execute((trx) => this.insertPayment(trx, c.payment, c.idempotency))
            .catch((error: unknown) => (error instanceof Error ? error : new Error(String(error)))),
        ),
      );
    }
  }

  private async insertCreates(trx: Transaction<Tables>, batch: readonly Create[]) {
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
    return keys.map((key, i) =>
      held[i] ? (holders.get(key!) ?? new Error('idempotency record not found')) : undefined,
    );
  }
}

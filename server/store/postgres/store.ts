/**
 * The PostgreSQL store: node-postgres's pool behind Kysely, the shared queries of
 * SqlStore. Any number of servers may share one database, so nothing is kept in memory
 * (`exclusive` is false: every read asks the database), a create's idempotency key is
 * claimed by a unique constraint in the create's own transaction, and due webhooks are
 * claimed with `FOR UPDATE SKIP LOCKED`.
 *
 * While the database is unreachable every query fails within the connection timeout, so
 * a request is answered 500 and never hangs; the pool connects again by itself once the
 * database is back.
 */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { paymentRow, type Tables } from '../schema.ts';
import { SqlStore } from '../sql-store.ts';
import type { IdempotencyRecord, Payment } from '../types.ts';

/** Connections per server: with N servers, N × this must stay under the database's `max_connections`. */
export const POOL_SIZE = 10;
/** Longest a statement may run on the database (its `statement_timeout`). */
export const STATEMENT_TIMEOUT_MS = 5000;
/** Longest a request waits for a connection, or for a new one to open. */
export const CONNECT_TIMEOUT_MS = 5000;

const INT8 = 20;

/**
 * `bigint` columns (times in milliseconds, row ids) and counts read as numbers, as the
 * SQLite store reads them: every value they hold is below 2^53.
 */
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8 ? Number : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export const isPostgresUrl = (db: string) => /^postgres(ql)?:\/\//i.test(db);

export class PostgresStore extends SqlStore {
  readonly exclusive = false;

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
    // in use (node-postgres leaves those to the user).
    pool.on('error', onConnectionError);
    pool.on('connect', (client) => client.on('error', onConnectionError));
    super(new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) }), 'postgres');
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }

  /**
   * One transaction per create. Creates racing with one key (on any server) meet at the
   * unique key of `idempotency_keys`: the later ones wait for the first to commit, then
   * find its record and write nothing.
   */
  async createPayment(payment: Payment, idempotency?: IdempotencyRecord): Promise<IdempotencyRecord | undefined> {
    // Without a key there is nothing to claim: one statement, its own transaction.
    if (!idempotency) {
      await this.db.insertInto('payments').values(paymentRow(payment)).execute();
      return undefined;
    }
    return this.db.transaction().execute((trx) => this.insertPayment(trx, payment, idempotency));
  }

  /** Each due webhook goes to one claimer: rows another server is claiming are skipped, not waited for. */
  protected override lockForClaim(query: Parameters<SqlStore['lockForClaim']>[0]) {
    return query.forUpdate('webhook_outbox').skipLocked();
  }
}

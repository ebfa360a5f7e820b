/**
 * How the PostgreSQL store reaches its database: node-postgres's pool, its limits, and how
 * a broken connection is heard of (openPool); and the round trips the requests of one turn
 * of the event loop share (perTurn).
 *
 * While the database is unreachable every query fails within the connection timeout, so
 * a request is answered 500 and never hangs; the pool connects again by itself once the
 * database is back.
 */
import DataLoader from 'dataloader';
import pg from 'pg';

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

/** `onConnectionError`: a connection broke (the database restarted, say); its queries fail on their own. */
export function openPool(url: string, onConnectionError: (error: Error) => void): pg.Pool {
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
  return pool;
}

/**
 * Batches of the loads made in one turn of the event loop; nothing kept between turns.
 * Each round trip to the database costs the server a socket write and the database a
 * wake-up, so the requests of one turn share their round trips (figures in
 * bench/README.md): what every request asks (reads.ts) and the creates (commits.ts).
 */
export function perTurn<K, V>(load: (keys: readonly K[]) => Promise<ArrayLike<V | Error>>): DataLoader<K, V> {
  return new DataLoader(load, { cache: false, maxBatchSize: BATCH_SIZE, batchScheduleFn: (run) => setImmediate(run) });
}

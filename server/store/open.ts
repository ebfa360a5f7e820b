/**
 * The store a `--db` value names: a database server's URL (`postgres://`), or a SQLite file
 * path (or `:memory:`). Each store, with its driver, is loaded only when named: a server on
 * SQLite never loads pg, nor one on PostgreSQL better-sqlite3.
 */
import type { Logger } from 'pino';
import type { Checkpointer } from './sqlite/commits.ts';
import type { Store } from './types.ts';

export interface StoreOptions {
  /** SQLite only: what runs the WAL checkpoints beside the server (the background thread, background/thread.ts). */
  background: Checkpointer;
  log: Logger;
  /** SQLite only: WAL length (4 KiB frames) at which the background thread has the WAL rewound. */
  rewindFrames?: number;
  /** SQLite only: make the file's folder when missing (the default `.data/`). */
  makeFolder?: boolean;
}

/**
 * A URL scheme (`mysql:`, `sqlite:`), at least two letters long so that a Windows drive
 * (`C:`) still reads as a path: taken as a file name, it would make a stray SQLite file
 * where the user meant another database.
 */
const SCHEME = /^([a-z][a-z0-9+.-]+):/i;

/** A store on a database server, named by the scheme of its `--db` URL. */
interface ServerStore {
  scheme: RegExp;
  /** What the server says it keeps its data in: never the URL, which may hold a password. */
  name: string;
  open(url: string, options: StoreOptions): Promise<Store>;
}

/** Every store on a database server; any other `--db` is a SQLite file. */
const SERVER_STORES: readonly ServerStore[] = [
  {
    scheme: /^postgres(ql)?:\/\//i,
    name: 'PostgreSQL',
    async open(url, options) {
      const { PostgresStore } = await import('./postgres/store.ts');
      return new PostgresStore(url, (err) => options.log.warn({ err }, 'a database connection broke'));
    },
  },
];

/** The name of the database server `db` is the URL of, or undefined for a SQLite file. */
export const databaseServerOf = (db: string): string | undefined => SERVER_STORES.find((s) => s.scheme.test(db))?.name;

export async function openStore(db: string, options: StoreOptions): Promise<Store> {
  const server = SERVER_STORES.find((s) => s.scheme.test(db));
  if (server) return server.open(db, options);
  const scheme = SCHEME.exec(db)?.[1];
  // Only the scheme is repeated: the rest of a URL may hold a password.
  if (scheme)
    throw new Error(
      `--db ${scheme}:… is not a database this server can use: give a SQLite file path (./${scheme}:… for a file so named), :memory:, or a postgres:// URL`,
    );
  const { SqliteStore } = await import('./sqlite/store.ts');
  return new SqliteStore({
    file: db,
    background: options.background,
    rewindFrames: options.rewindFrames,
    makeFolder: options.makeFolder,
  });
}

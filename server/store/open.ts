/** The store a `--db` value names: a `postgres://` URL, or a SQLite file path (or `:memory:`). */
import type { Logger } from 'pino';
import type { Background } from '../background/thread.ts';
import { isPostgresUrl, PostgresStore } from './postgres/store.ts';
import { SqliteStore } from './sqlite/store.ts';
import type { Store } from './types.ts';

export interface StoreOptions {
  background: Background;
  log: Logger;
  /** SQLite only: WAL length (4 KiB frames) at which the background thread has the WAL rewound. */
  rewindFrames?: number;
}

export function openStore(db: string, options: StoreOptions): Store {
  if (isPostgresUrl(db))
    return new PostgresStore(db, (err) => options.log.warn({ err }, 'a database connection broke'));
  return new SqliteStore({ file: db, background: options.background, rewindFrames: options.rewindFrames });
}

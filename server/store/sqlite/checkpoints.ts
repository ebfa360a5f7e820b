/**
 * WAL checkpoints of a SQLite file, on a connection of their own (the background thread,
 * background/worker.ts, runs them beside the server). Why each is done this way is in
 * background/thread.ts.
 */
import Database from 'better-sqlite3';

export type CheckpointedDatabase = Database.Database;

/** A connection to an existing database file, for checkpoints only. */
export function openForCheckpoints(file: string): CheckpointedDatabase {
  const db = new Database(file, { fileMustExist: true });
  db.pragma('synchronous = NORMAL');
  return db;
}

interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/** PASSIVE: never waits for, nor blocks, the server's readers and writer. */
export function checkpoint(db: Database.Database): CheckpointResult | undefined {
  try {
    return (db.pragma('wal_checkpoint(PASSIVE)') as CheckpointResult[])[0];
  } catch {
    return undefined;
  }
}

/**
 * A checkpoint fsyncs the database file only if no commit landed while it copied, and
 * under steady load one nearly always does: the copied pages then pile up unsynced until
 * the one that must sync them all runs, which is the one the server's commits wait for.
 * So the few frames committed meanwhile are copied straight away, a short enough run that
 * it usually completes and syncs. That leaves little for a held checkpoint to do, and a
 * completed run often lets the next commit rewind the WAL with no hold at all.
 */
export function catchUp(db: Database.Database): CheckpointResult | undefined {
  let done = checkpoint(db);
  for (let i = 0; i < 3 && done && done.busy === 0; i++) {
    const again = checkpoint(db);
    if (!again || again.log === done.log) break;
    done = again;
  }
  return done;
}

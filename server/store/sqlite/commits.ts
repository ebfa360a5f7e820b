/**
 * How the SQLite store commits its writes: the creates of one turn of the event loop in
 * one transaction (GroupCommit), and the WAL they are appended to kept short by
 * checkpoints on a connection of their own, beside the server (the background thread,
 * background/thread.ts, which holds the group commit while it copies the last frames
 * before a rewind). Why each is done this way is in background/thread.ts.
 */
import Database from 'better-sqlite3';
import type { IdempotencyRecord, Payment } from '../types.ts';

/** A create as the store is given it: the payment, and the key it claims if any. */
export interface Create {
  payment: Payment;
  idempotency: IdempotencyRecord | undefined;
}

/** How long a group waits for another process's lock before its creates fail. */
export const BUSY_WAIT_MS = 250;
const BUSY_RETRY_MS = 10;

interface Pending<I, R> {
  item: I;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

export const isBusy = (error: unknown): boolean =>
  typeof (error as { code?: unknown })?.code === 'string' && (error as { code: string }).code.startsWith('SQLITE_BUSY');

/**
 * Creates committed in groups: every create that reaches the store during one turn of the
 * event loop goes into one SQLite transaction, so one WAL commit (the costly part: a
 * write of every touched page) serves many concurrent requests. Each create still
 * resolves only once its rows are committed. If the group fails (a constraint), it is
 * rolled back whole and each create is retried in a transaction of its own, so only the
 * faulty one fails.
 *
 * The database may be locked by another process: SQLite then answers SQLITE_BUSY at once
 * (the connection has no busy timeout, which would block the event loop). The group is
 * tried again on later turns, with every create that arrived meanwhile, until it has
 * waited BUSY_WAIT_MS; then each of its creates fails, and its request gets a 500.
 */
export class GroupCommit<I, R> implements CommitHold {
  private pending: Pending<I, R>[] = [];
  private scheduled = false;
  private held = false;
  /** When the group now waiting for a lock first found it taken. */
  private busySince: number | undefined;

  /** `write` stores one item; it runs inside the group's transaction. */
  constructor(
    private readonly database: Database.Database,
    private readonly write: (item: I) => R,
  ) {}

  submit(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.schedule(0);
    });
  }

  /** No commit starts until `release` (the WAL is being rewound). */
  hold(): void {
    this.held = true;
  }

  release(): void {
    this.held = false;
    if (this.pending.length > 0) this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      this.commit();
    };
    if (delayMs === 0) setImmediate(run);
    else setTimeout(run, delayMs);
  }

  private commit(): void {
    if (this.held || this.pending.length === 0) return;
    const group = this.pending;
    let results: R[];
    try {
      results = this.database.transaction(() => group.map((p) => this.write(p.item)))();
    } catch (error) {
      if (isBusy(error)) {
        this.waitForLock(error);
        return;
      }
      this.pending = [];
      this.busySince = undefined;
      this.oneByOne(group);
      return;
    }
    this.pending = [];
    this.busySince = undefined;
    for (const [i, p] of group.entries()) p.resolve(results[i]!);
  }

  private waitForLock(error: unknown): void {
    const now = performance.now();
    this.busySince ??= now;
    if (now - this.busySince < BUSY_WAIT_MS) {
      this.schedule(BUSY_RETRY_MS);
      return;
    }
    const group = this.pending;
    this.pending = [];
    this.busySince = undefined;
    for (const p of group) p.reject(error);
  }

  private oneByOne(group: Pending<I, R>[]): void {
    const writeOne = this.database.transaction((item: I) => this.write(item));
    for (const p of group) {
      try {
        p.resolve(writeOne(p.item));
      } catch (error) {
        p.reject(error);
      }
    }
  }
}

/** What the database's only writer does while the checkpointing thread rewinds the WAL. */
export interface CommitHold {
  /** Start no commit until `release` (reads and everything else go on). */
  hold(): void;
  release(): void;
}

export interface CheckpointOptions {
  /** WAL length (frames, 4 KiB each) past which the thread has the WAL rewound. */
  rewindFrames: number;
  /** How the thread holds the writer's commits while it copies the last frames. */
  commits: CommitHold;
}

/** What checkpoints the WAL beside the server, on a connection of its own: the background thread (background/thread.ts). */
export interface Checkpointer {
  /**
   * Checkpoints the WAL of the database `file` until the returned function is called
   * (which resolves once the checkpointing connection is closed); undefined when it
   * cannot: SQLite's own checkpoints then do it all.
   */
  checkpoint(file: string, options: CheckpointOptions): Promise<(() => Promise<void>) | undefined>;
}

/** WAL length (4 KiB frames) at which the thread has the WAL rewound, by default. */
export const REWIND_FRAMES = 16_384;

/**
 * The WAL's upkeep: checkpoints on the background thread, which holds the group commit
 * while it copies the last frames before a rewind. A commit still checkpoints itself if
 * the WAL grows well past the rewind length because the thread fell behind; after such a
 * burst the file is cut back to twice the rewind length.
 */
export async function keepWalShort(
  database: Database.Database,
  file: string,
  checkpointer: Checkpointer,
  commits: CommitHold,
  rewindFrames = REWIND_FRAMES,
): Promise<() => Promise<void>> {
  const stop = await checkpointer.checkpoint(file, { rewindFrames, commits });
  if (!stop) return async () => undefined;
  database.pragma(`wal_autocheckpoint = ${rewindFrames * 2 + 8192}`);
  database.pragma(`journal_size_limit = ${rewindFrames * 4096 * 2}`);
  return stop;
}

// The checkpoints themselves, run by the background thread (background/worker.ts) on its
// own connection to the file.

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

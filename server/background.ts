/**
 * One worker thread for the server's slow, blocking chores, so they never stall the event
 * loop or bloat the process:
 *
 * - WAL checkpoints. SQLite's automatic checkpoint runs inside whichever commit crosses
 *   the threshold: it copies the WAL into the database file and fsyncs both, tens of
 *   milliseconds during which every request waits. Here a second connection to the file
 *   checkpoints (PASSIVE: it never blocks the server's reads or writes) every
 *   CHECKPOINT_INTERVAL_MS, and at once again for what was committed meanwhile, until a
 *   run completes (see catchUp). Only a writer rewinds the WAL, and only once everything
 *   in it is copied, which a commit landing during each checkpoint prevents under a
 *   steady stream of commits. So once the WAL passes `rewindFrames`, the thread asks the
 *   server to hold its commits, copies the few frames left (a few milliseconds: the rest
 *   is copied and synced already), and lets go; the next commit rewinds the WAL. The
 *   server's own automatic checkpoint stays as a backstop.
 * - scrypt. Each libuv pool thread that runs scrypt keeps its 16 MB work area in its
 *   malloc arena afterwards (glibc raises its mmap threshold after the first free), up to
 *   64 MB for the pool's four threads. One thread here keeps at most one.
 *
 * The worker is started on first use and does not keep the process alive. If it cannot
 * start or dies, hashing falls back to the libuv pool and checkpoints to SQLite's own.
 */
import { scrypt as scryptCallback } from 'node:crypto';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * Between checkpoints the WAL grows by what this interval brings (about 10 MB under full
 * load). Each checkpoint copies every page touched since the last once, so a longer
 * interval copies a page that is written again and again (the last page of each index)
 * fewer times: at 300 ms rather than 100, creates cost about 5 % less CPU in all.
 */
export const CHECKPOINT_INTERVAL_MS = 300;

// Plain CommonJS evaluated in the worker: it runs the same from the TypeScript sources,
// the compiled build and the test runner, none of which needs a loader for it.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { scryptSync } = require('node:crypto');
const Database = require(workerData.sqlite);
const watched = new Map();
const checkpoint = (db) => {
  try { return db.pragma('wal_checkpoint(PASSIVE)')[0]; } catch { return undefined; }
};
// A checkpoint fsyncs the database file only if no commit landed while it copied, and
// under steady load one nearly always does: the copied pages then pile up unsynced until
// the one that must sync them all runs, which is the one the server's commits wait for.
// So the few frames committed meanwhile are copied straight away, a short enough run
// that it usually completes and syncs. That leaves little for a held checkpoint to do,
// and a completed run often lets the next commit rewind the WAL with no hold at all.
const catchUp = (db) => {
  let done = checkpoint(db);
  for (let i = 0; i < 3 && done && done.busy === 0; i++) {
    const again = checkpoint(db);
    if (!again || again.log === done.log) break;
    done = again;
  }
  return done;
};
setInterval(() => {
  for (const [watchId, w] of watched) {
    if (w.holding) continue;
    const done = catchUp(w.db);
    if (done && done.busy === 0 && done.log >= w.rewindFrames && done.checkpointed === done.log) {
      w.holding = true;
      parentPort.postMessage({ type: 'hold', watchId });
    }
  }
}, workerData.intervalMs);
parentPort.on('message', (m) => {
  try {
    if (m.type === 'held') {
      // The server holds its commits: copy what came in since, then let it go on.
      const w = watched.get(m.watchId);
      if (w) {
        checkpoint(w.db);
        w.holding = false;
      }
      parentPort.postMessage({ type: 'release', watchId: m.watchId });
    } else if (m.type === 'scrypt') {
      const key = scryptSync(m.password, Buffer.from(m.salt), m.keylen, m.options);
      parentPort.postMessage({ id: m.id, key });
    } else if (m.type === 'watch') {
      const db = new Database(m.file, { fileMustExist: true });
      db.pragma('synchronous = NORMAL');
      watched.set(m.id, { db, rewindFrames: m.rewindFrames, holding: false });
      parentPort.postMessage({ id: m.id });
    } else if (m.type === 'unwatch') {
      watched.get(m.watchId)?.db.close();
      watched.delete(m.watchId);
      parentPort.postMessage({ id: m.id });
    }
  } catch (error) {
    parentPort.postMessage({ id: m.id, error: error instanceof Error ? error.message : String(error) });
  }
});
`;

interface Reply {
  id: number;
  key?: Uint8Array;
  error?: string;
}

let worker: Worker | undefined;
let dead = false;
let nextId = 1;
const pending = new Map<number, { resolve: (reply: Reply) => void; reject: (error: Error) => void }>();

function background(): Worker | undefined {
  if (worker || dead) return worker;
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        sqlite: createRequire(import.meta.url).resolve('better-sqlite3'),
        intervalMs: CHECKPOINT_INTERVAL_MS,
      },
    });
  } catch {
    dead = true;
    return undefined;
  }
  worker.unref();
  worker.on('message', (message: Reply | RewindMessage) => {
    if ('type' in message) return rewind(message);
    const waiting = pending.get(message.id);
    pending.delete(message.id);
    waiting?.resolve(message);
  });
  const fail = (error: Error) => {
    dead = true;
    worker = undefined;
    for (const waiting of pending.values()) waiting.reject(error);
    pending.clear();
    for (const holder of holders.values()) holder.release();
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`background worker exited (${code})`)));
  return worker;
}

function ask(message: Record<string, unknown>): Promise<Reply> {
  const w = background();
  if (!w) return Promise.reject(new Error('no background worker'));
  const id = nextId++;
  // The thread keeps the process alive only while something waits for it (a start-up
  // waiting for a hash must not see the process exit under it).
  if (pending.size === 0) w.ref();
  return new Promise<Reply>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    w.postMessage({ ...message, id });
  }).finally(() => {
    if (pending.size === 0) worker?.unref();
  });
}

const scryptInPool = (password: string, salt: Buffer, keylen: number, options: object) =>
  new Promise<Buffer>((resolve, reject) =>
    scryptCallback(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))),
  );

/** scrypt on the background thread (the libuv pool if it is unavailable). */
export async function scrypt(password: string, salt: Buffer, keylen: number, options: object): Promise<Buffer> {
  let reply: Reply;
  try {
    reply = await ask({ type: 'scrypt', password, salt, keylen, options });
  } catch {
    return scryptInPool(password, salt, keylen, options);
  }
  if (reply.error !== undefined || !reply.key) throw new Error(reply.error ?? 'scrypt failed');
  return Buffer.from(reply.key.buffer, reply.key.byteOffset, reply.key.byteLength);
}

/** What the database's only writer does while the thread rewinds the WAL. */
export interface CommitHold {
  /** Start no commit until `release` (reads and everything else go on). */
  hold(): void;
  release(): void;
}

interface RewindMessage {
  type: 'hold' | 'release';
  watchId: number;
}

/** However the thread fares, commits are never held longer than this. */
const HOLD_LIMIT_MS = 250;

const holders = new Map<number, CommitHold>();

function rewind(message: RewindMessage): void {
  const holder = holders.get(message.watchId);
  if (message.type === 'release') {
    holder?.release();
    return;
  }
  holder?.hold();
  worker?.postMessage({ type: 'held', watchId: message.watchId });
}

export interface CheckpointOptions {
  /** WAL length (frames, 4 KiB each) past which the thread has the WAL rewound. */
  rewindFrames: number;
  /** How the thread holds the writer's commits while it copies the last frames. */
  commits: CommitHold;
}

/**
 * Checkpoints the WAL of the database `file` from the background thread until the returned
 * function is called (which resolves once the thread's connection is closed). Resolves to
 * undefined when there is no background thread: SQLite's own checkpoints then do it all.
 */
export async function checkpointInBackground(
  file: string,
  options: CheckpointOptions,
): Promise<(() => Promise<void>) | undefined> {
  let watchId: number;
  try {
    const reply = await ask({ type: 'watch', file, rewindFrames: options.rewindFrames });
    if (reply.error !== undefined) return undefined;
    watchId = reply.id;
  } catch {
    return undefined;
  }
  let timer: NodeJS.Timeout | undefined;
  const holder: CommitHold = {
    hold() {
      if (timer) return;
      options.commits.hold();
      timer = setTimeout(() => holder.release(), HOLD_LIMIT_MS);
      timer.unref();
    },
    release() {
      if (!timer) return;
      clearTimeout(timer);
      timer = undefined;
      options.commits.release();
    },
  };
  holders.set(watchId, holder);
  return async () => {
    holders.delete(watchId);
    holder.release();
    await ask({ type: 'unwatch', watchId }).catch(() => undefined);
  };
}

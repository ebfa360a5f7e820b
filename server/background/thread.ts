/**
 * One worker thread per server for its slow, blocking chores, so they never stall the
 * event loop or bloat the process:
 *
 * - WAL checkpoints. SQLite's automatic checkpoint runs inside whichever commit crosses
 *   the threshold: it copies the WAL into the database file and fsyncs both, during which
 *   every request waits. Here a second connection to the file checkpoints (PASSIVE: it
 *   never blocks the server's reads or writes) every CHECKPOINT_INTERVAL_MS. Only a writer
 *   rewinds the WAL, and only once everything in it is copied, which a commit landing
 *   during each checkpoint prevents under a steady stream of commits. So once the WAL
 *   passes `rewindFrames`, the thread asks the server to hold its commits, copies the few
 *   frames left, and lets go; the next commit rewinds the WAL. The server's own automatic
 *   checkpoint stays as a backstop.
 * - scrypt. Each libuv pool thread that runs scrypt keeps its work area in its malloc
 *   arena afterwards (glibc raises its mmap threshold after the first free), one per pool
 *   thread; one thread here keeps at most one.
 *
 * The thread is started on first use and does not keep the process alive. If it cannot
 * start or dies, hashing falls back to the libuv pool and checkpoints to SQLite's own.
 */
import { scrypt as scryptInPool, type ScryptOptions } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CheckpointOptions, Checkpointer, CommitHold } from '../store/sqlite/commits.ts';
import type { Answer, FromServer, FromThread, Question, Rewind, WorkerData } from './protocol.ts';

/**
 * Between checkpoints the WAL grows by what the interval brings. Each checkpoint copies
 * every page touched since the last once, so a longer interval copies a page written
 * again and again (the last page of each index) fewer times; a shorter one keeps the WAL,
 * and what a held checkpoint must copy, short (figures in bench/README.md).
 */
export const CHECKPOINT_INTERVAL_MS = 300;

/** However the thread fares, commits are never held longer than this. */
const HOLD_LIMIT_MS = 250;

type Ask = Question extends infer Q ? (Q extends Question ? Omit<Q, 'id'> : never) : never;

/**
 * The thread runs the compiled worker.js beside this module; run from the TypeScript
 * sources (the tests, tsx), it loads worker.ts through tsx's loader, and without tsx the
 * package's compiled one.
 */
function startWorker(data: WorkerData): Worker {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new Worker(new URL('./worker.js', here), { workerData: data });
  let tsx: string | undefined;
  try {
    tsx = createRequire(here).resolve('tsx/esm/api');
  } catch {
    const compiled = fileURLToPath(new URL('../dist/background/worker.js', here));
    if (!existsSync(compiled)) throw new Error('no compiled background worker: run npm run build');
    return new Worker(compiled, { workerData: data });
  }
  const source = new URL('./worker.ts', here).href;
  return new Worker(`require(${JSON.stringify(tsx)}).register(); import(${JSON.stringify(source)});`, {
    eval: true,
    workerData: data,
  });
}

/** The SQLite store's Checkpointer (store/sqlite/commits.ts), and scrypt's thread. */
export class Background implements Checkpointer {
  private worker: Worker | undefined;
  private dead = false;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (answer: Answer) => void; reject: (error: Error) => void }>();
  private readonly holders = new Map<number, CommitHold>();

  private thread(): Worker | undefined {
    if (this.worker || this.dead) return this.worker;
    let worker: Worker;
    try {
      worker = startWorker({ checkpointIntervalMs: CHECKPOINT_INTERVAL_MS });
    } catch {
      this.dead = true;
      return undefined;
    }
    worker.unref();
    worker.on('message', (message: FromThread) => {
      if ('type' in message) return this.rewind(message);
      const waiting = this.pending.get(message.id);
      this.pending.delete(message.id);
      waiting?.resolve(message);
    });
    const fail = (error: Error) => {
      this.dead = true;
      this.worker = undefined;
      for (const waiting of this.pending.values()) waiting.reject(error);
      this.pending.clear();
      for (const holder of this.holders.values()) holder.release();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`background thread exited (${code})`)));
    this.worker = worker;
    return worker;
  }

  /** Starts the thread now (it starts anyway when first asked): a start-up overlaps its boot with other work. */
  start(): void {
    this.thread();
  }

  private post(message: FromServer): void {
    this.worker?.postMessage(message);
  }

  private ask(question: Ask): Promise<Answer> {
    const worker = this.thread();
    if (!worker) return Promise.reject(new Error('no background thread'));
    const id = this.nextId++;
    // The thread keeps the process alive only while something waits for it (a start-up
    // waiting for a hash must not see the process exit under it).
    if (this.pending.size === 0) worker.ref();
    return new Promise<Answer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.post({ ...question, id } as Question);
    }).finally(() => {
      if (this.pending.size === 0) this.worker?.unref();
    });
  }

  /** scrypt on the background thread (the libuv pool if it is unavailable). */
  async scrypt(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
    let answer: Answer;
    try {
      answer = await this.ask({ type: 'scrypt', password, salt, keylen, options });
    } catch {
      return new Promise<Buffer>((resolve, reject) =>
        scryptInPool(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))),
      );
    }
    if (answer.error !== undefined || !answer.key) throw new Error(answer.error ?? 'scrypt failed');
    return Buffer.from(answer.key.buffer, answer.key.byteOffset, answer.key.byteLength);
  }

  private rewind(message: Rewind): void {
    const holder = this.holders.get(message.watchId);
    if (message.type === 'release') {
      holder?.release();
      return;
    }
    holder?.hold();
    this.post({ type: 'held', watchId: message.watchId });
  }

  /**
   * Checkpoints the WAL of the database `file` on the thread until the returned function
   * is called (which resolves once the thread's connection is closed). Resolves to
   * undefined when there is no thread: SQLite's own checkpoints then do it all.
   */
  async checkpoint(file: string, options: CheckpointOptions): Promise<(() => Promise<void>) | undefined> {
    let watchId: number;
    try {
      const answer = await this.ask({ type: 'watch', file, rewindFrames: options.rewindFrames });
      if (answer.error !== undefined) return undefined;
      watchId = answer.id;
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
    this.holders.set(watchId, holder);
    return async () => {
      this.holders.delete(watchId);
      holder.release();
      await this.ask({ type: 'unwatch', watchId }).catch(() => undefined);
    };
  }

  /** Stops the thread (what it was asked and has not answered fails). */
  async close(): Promise<void> {
    const worker = this.worker;
    this.dead = true;
    this.worker = undefined;
    await worker?.terminate();
  }
}

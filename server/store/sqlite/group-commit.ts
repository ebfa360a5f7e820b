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
import type Database from 'better-sqlite3';

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

export class GroupCommit<I, R> {
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

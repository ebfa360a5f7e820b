/**
 * One server per SQLite file: the store's caches (caches.ts) are exact only while its
 * process is the file's only writer. The lock is SQLite's own file locking on a companion
 * file (`<file>-lock`), held exclusively for the server's life: the operating system
 * releases it when the process ends, however it ends, so a crash never leaves a stale
 * lock behind, and SQLite sees the lock across connections of one process too.
 */
import Database from 'better-sqlite3';

export class FileInUse extends Error {
  constructor(file: string) {
    super(
      `${file} is in use by another payment-server (one server per SQLite file: stop the other one, ` +
        'or run several servers on one PostgreSQL database)',
    );
    this.name = 'FileInUse';
  }
}

/** Takes the lock on `file` or throws FileInUse; the result releases it. */
export function lockFile(file: string): { release(): void } {
  // timeout 0: a lock held by another server is an answer, not something to wait for.
  const lock = new Database(`${file}-lock`, { timeout: 0 });
  try {
    // In exclusive locking mode a connection keeps the locks it takes until it closes.
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('BEGIN EXCLUSIVE; COMMIT');
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') throw new FileInUse(file);
    throw error;
  }
  return { release: () => lock.close() };
}

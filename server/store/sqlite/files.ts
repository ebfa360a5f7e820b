/**
 * The database's files on disk hold the token signing key, the organisations' webhook
 * secrets and the sandbox token: only the server's own user may read them. The folder the
 * server makes is 0700, the files 0600. SQLite gives the -wal, -shm and journal files the
 * mode of their database file, so the database file (and the lock's, file-lock.ts) is made
 * here, empty and 0600, before SQLite opens it.
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import path from 'node:path';

const PRIVATE_FOLDER = 0o700;
const PRIVATE_FILE = 0o600;
/** What SQLite keeps beside a database (and the lock of file-lock.ts, a database of its own). */
const COMPANIONS = ['-wal', '-shm', '-journal', '-lock', '-lock-journal'];

/**
 * Makes `file` and its lock file, 0600, when missing. Its folder is made (0700) only when
 * `makeFolder`: a path the user gave whose folder is missing is more likely a typo than a
 * wish for a new folder. Files left group- or world-readable by earlier versions are made
 * 0600 too, and the folder made by default 0700.
 */
export function preparePrivateFiles(file: string, makeFolder: boolean): void {
  const folder = path.dirname(file);
  if (makeFolder) {
    mkdirSync(folder, { recursive: true, mode: PRIVATE_FOLDER });
    // The server's own folder, left open by an earlier version: its own to close.
    const mode = statSync(folder).mode;
    if ((mode & 0o077) !== 0) chmodSync(folder, mode & PRIVATE_FOLDER);
  } else if (!statSync(folder, { throwIfNoEntry: false })?.isDirectory())
    throw new Error(`${file}: the folder ${folder} does not exist (make it first; only the default .data/ is made)`);
  for (const name of [file, `${file}-lock`]) {
    try {
      closeSync(openSync(name, 'wx', PRIVATE_FILE));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  for (const name of [file, ...COMPANIONS.map((suffix) => file + suffix)]) {
    const stat = statSync(name, { throwIfNoEntry: false });
    if (!stat?.isFile() || (stat.mode & 0o077) === 0) continue;
    try {
      chmodSync(name, stat.mode & PRIVATE_FILE);
    } catch (error) {
      // Another user's file, shared on purpose through its group: theirs to change.
      if ((error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
    }
  }
}

/**
 * The SQLite file and the server's connection to it, opened in this order (openDatabase):
 * the file made private (preparePrivateFiles), locked for this process alone (lockFile),
 * checked for damage (checkIntegrity), then the connection's settings.
 *
 * The connection has no busy timeout: a lock held by another process makes a write fail
 * at once (creates wait a little, off the event loop: commits.ts) instead of blocking
 * every request, and reads go on, as WAL readers never wait for a writer.
 *
 * It runs every statement through better-sqlite3's prepared statements, prepared once per
 * SQL text (withStatementCache). Kysely builds and compiles each query anew and queues it
 * on its async connection; for the per-request reads and inserts, that costs more than
 * SQLite's own work, so those are compiled once (`compiled`) and run on their prepared
 * statement directly.
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

const PRIVATE_FOLDER = 0o700;
const PRIVATE_FILE = 0o600;
/** What SQLite keeps beside a database (and the lock of lockFile, a database of its own). */
const COMPANIONS = ['-wal', '-shm', '-journal', '-lock', '-lock-journal'];

/**
 * The database's files on disk hold the token signing key, the organisations' webhook
 * secrets and the sandbox token: only the server's own user may read them. The folder the
 * server makes is 0700, the files 0600. SQLite gives the -wal, -shm and journal files the
 * mode of their database file, so the database file (and the lock's, lockFile) is made
 * here, empty and 0600, before SQLite opens it.
 *
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

/**
 * One server per SQLite file: the store's copies in memory (reads.ts) are exact only while
 * its process is the file's only writer. The lock is SQLite's own file locking on a
 * companion file (`<file>-lock`), held exclusively for the server's life: the operating
 * system releases it when the process ends, however it ends, so a crash never leaves a
 * stale lock behind, and SQLite sees the lock across connections of one process too.
 */
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

/**
 * A damaged database file is refused at start, before anything reads from it or writes
 * into it: SQLite reads a damaged page as it is, so rows go missing from indexes and new
 * rows land beside the damage. SQLite's integrity_check reads every page and checks every
 * index against its table.
 */
export class DamagedDatabase extends Error {
  constructor(file: string, problems: string[]) {
    const shown = problems.slice(0, 3).join('; ');
    super(
      `${file} is damaged (SQLite integrity check: ${shown}${problems.length > 3 ? '; …' : ''}); ` +
        'restore it from a backup, or move it aside to start with an empty database',
    );
    this.name = 'DamagedDatabase';
  }
}

/** Throws DamagedDatabase unless SQLite finds the file sound. */
export function checkIntegrity(database: Database.Database, file: string): void {
  let problems: string[];
  try {
    problems = (database.pragma('integrity_check') as Array<{ integrity_check: string }>).map((r) => r.integrity_check);
  } catch (error) {
    // SQLITE_CORRUPT, SQLITE_NOTADB: too damaged (or not a database at all) to check.
    throw new DamagedDatabase(file, [error instanceof Error ? error.message : String(error)]);
  }
  if (problems.length === 1 && problems[0] === 'ok') return;
  // Its rows may span lines and open with a heading naming the schema ("*** in database main ***").
  const lines = problems.flatMap((row) => row.split('\n')).map((line) => line.trim());
  throw new DamagedDatabase(
    file,
    lines.filter((line) => line !== '' && !line.startsWith('***')),
  );
}

/** Opens the file (undefined: in memory): its lock first, then SQLite's integrity check, then the connection's settings. */
export function openDatabase(
  file: string | undefined,
  makeFolder: boolean,
): { database: Database.Database; lock?: { release(): void } } {
  if (file) preparePrivateFiles(file, makeFolder);
  const lock = file ? lockFile(file) : undefined;
  let database: Database.Database | undefined;
  try {
    database = new Database(file ?? ':memory:', { timeout: 0 });
    if (file) checkIntegrity(database, file);
    database.pragma('journal_mode = WAL');
    // WAL with synchronous=NORMAL survives a process crash (not a power loss) and keeps writes fast.
    database.pragma('synchronous = NORMAL');
    database.pragma('foreign_keys = ON');
    return { database, lock };
  } catch (error) {
    database?.close();
    lock?.release();
    throw error;
  }
}

/** Statements kept per connection, at most: our queries are a fixed set of texts. */
const STATEMENT_CACHE_SIZE = 500;

/** The database as Kysely's SqliteDialect takes it, reusing prepared statements. */
export function withStatementCache(database: Database.Database): {
  close(): void;
  prepare(sqlText: string): Database.Statement;
} {
  const statements = new Map<string, Database.Statement>();
  return {
    close: () => database.close(),
    prepare(sqlText: string) {
      let statement = statements.get(sqlText);
      if (!statement) {
        statement = database.prepare(sqlText);
        if (statements.size < STATEMENT_CACHE_SIZE) statements.set(sqlText, statement);
      }
      return statement;
    },
  };
}

/** What Kysely's builders give to compile. */
interface Compilable {
  compile(): { sql: string; parameters: readonly unknown[] };
}

export interface Compiled<A extends unknown[]> {
  get(...args: A): unknown;
  run(...args: A): Database.RunResult;
}

/**
 * A query written with the typed builder, compiled to SQL once and prepared. The builder
 * is called with placeholder arguments, values that appear nowhere else, to learn which
 * bound parameter each argument becomes; any other parameter is a constant of the query.
 */
export function compiled<A extends unknown[]>(
  database: Database.Database,
  build: (...args: A) => Compilable,
  arity: A['length'],
): Compiled<A> {
  const placeholders = Array.from({ length: arity }, () => Symbol('argument'));
  const { sql, parameters } = build(...(placeholders as unknown as A)).compile();
  const positions = parameters.map((p) => placeholders.indexOf(p as symbol));
  const statement = database.prepare(sql);
  const bind = (args: A) => positions.map((at, i) => (at >= 0 ? args[at] : parameters[i]));
  return {
    get: (...args) => statement.get(...bind(args)),
    run: (...args) => statement.run(...bind(args)),
  };
}

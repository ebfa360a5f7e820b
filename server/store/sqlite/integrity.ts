/**
 * A damaged database file is refused at start, before anything reads from it or writes
 * into it: SQLite reads a damaged page as it is, so rows go missing from indexes and new
 * rows land beside the damage. SQLite's integrity_check reads every page and checks every
 * index against its table.
 */
import type Database from 'better-sqlite3';

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

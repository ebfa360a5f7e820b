/**
 * How the SQLite store runs SQL: every statement through better-sqlite3's prepared
 * statements, prepared once per SQL text. Kysely builds and compiles each query anew and
 * queues it on its async connection; for the per-request reads and inserts, that costs
 * more than SQLite's own work, so those are compiled once (`compiled`) and run on their
 * prepared statement directly.
 */
import type Database from 'better-sqlite3';

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

/**
 * The PostgreSQL server the tests use: TEST_POSTGRES_URL, by default this project's
 * machines' own (127.0.0.1:5432, trust authentication), as a role that may create
 * databases. Free of vitest, so that its config can ask before the run.
 */
import pg from 'pg';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The admin URL when PostgreSQL answers, else null (its tests are skipped). */
    postgres: string | null;
  }
}

export const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Whether PostgreSQL at `url` answers a query within `timeoutMs`. */
export async function answers(url: string, timeoutMs = 3000): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

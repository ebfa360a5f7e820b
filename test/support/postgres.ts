/**
 * PostgreSQL for the tests: whether its tests run (vitest.config.ts decided, once), and
 * fresh databases, dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { ADMIN_URL } from './postgres-server.ts';

export { ADMIN_URL };

/** Whether the tests that need PostgreSQL run. */
export const postgresAvailable = (): boolean => inject('postgres') !== null;

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

export interface FreshDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A new, empty database on the test server; `drop` removes it (ending its connections). */
export async function freshDatabase(): Promise<FreshDatabase> {
  const name = `payment_test_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`create database ${name}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => admin((c) => c.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}

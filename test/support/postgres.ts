/**
 * PostgreSQL for the tests: whether its tests run (vitest.config.ts decided, once), and
 * fresh databases, dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
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

/**
 * A TCP relay to PostgreSQL that can reset every connection and refuse new ones (`down`),
 * or hold every byte both ways with the connections left open (`stall`), as a network
 * that drops packets does; `up` mends either.
 */
export async function relay(target: URL) {
  let cut = false;
  let stalled = false;
  const sockets = new Set<net.Socket>();
  const pairs = new Set<[net.Socket, net.Socket]>();
  const pipe = ([client, upstream]: [net.Socket, net.Socket]) => client.pipe(upstream).pipe(client);
  const server = net.createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    for (const socket of pair) {
      sockets.add(socket);
      socket.on('close', () => {
        sockets.delete(socket);
        pairs.delete(pair);
      });
      socket.on('error', () => socket.destroy());
    }
    pairs.add(pair);
    if (!stalled) pipe(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    async down() {
      cut = true;
      for (const socket of sockets) socket.resetAndDestroy();
    },
    async stall() {
      stalled = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    async up() {
      cut = false;
      if (!stalled) return;
      stalled = false;
      for (const pair of pairs) pipe(pair);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A merchant's webhook receiver on loopback for tests: records every delivery (headers
 * and exact raw bytes) and answers as told: a status, no answer at all (hang), or what a
 * handler decides (a merchant's own logic, an answer held until a test lets it go).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { paced, until } from './pace.ts';

export interface Delivery {
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  body: any;
  receivedAt: number;
}

/**
 * How a path answers: a status (with a body other than `{}`, empty included, and a
 * `Location`, if told), no answer at all, or the status a function gives for the delivery.
 */
export type Behaviour =
  | { status: number; body?: string; location?: string }
  | { hang: true }
  | { handle: (delivery: Delivery) => number | Promise<number> };

export interface Receiver {
  url: string;
  deliveries: Delivery[];
  /** How to answer deliveries to a path (default: 200). */
  behave(path: string, behaviour: Behaviour): void;
  /** Resolves once `count` deliveries to `path` have arrived. */
  waitFor(path: string, count: number, timeoutMs?: number): Promise<Delivery[]>;
  close(): Promise<void>;
}

/** `fallback`: how every path not told otherwise answers (default 200). */
export async function startReceiver(fallback?: Behaviour): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  const behaviours = new Map<string, Behaviour>();
  const hung = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        body = undefined;
      }
      const path = req.url ?? '/';
      deliveries.push({ path, headers: req.headers, raw, body, receivedAt: Date.now() });
      const behaviour = behaviours.get(path) ?? fallback ?? { status: 200 };
      if ('hang' in behaviour) {
        hung.add(res);
        return;
      }
      const answer = (status: number, body = '{}', location?: string) => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'application/json', ...(location ? { location } : {}) }).end(body);
      };
      if ('handle' in behaviour) {
        void Promise.resolve(behaviour.handle(deliveries.at(-1)!)).then(
          (status) => answer(status),
          () => answer(500),
        );
        return;
      }
      answer(behaviour.status, behaviour.body, behaviour.location);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    deliveries,
    behave: (path, behaviour) => behaviours.set(path, behaviour),
    async waitFor(path, count, timeoutMs = 15_000) {
      const got = await until(
        () => deliveries.filter((d) => d.path === path),
        (arrived) => arrived.length >= count,
        timeoutMs,
      );
      if (got.length < count)
        throw new Error(`expected ${count} deliveries to ${path} within ${paced(timeoutMs)} ms, got ${got.length}`);
      return got;
    },
    close: () =>
      new Promise((resolve) => {
        for (const res of hung) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

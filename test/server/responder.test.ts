/**
 * The Responder (server/http/responder.ts) writes JSON answers to Node directly, bypassing
 * Koa's response handling for speed (bench/README.md): what it writes must be what Koa
 * would have written for the same answer. A Koa app answers each request both ways, and
 * the two answers are compared over HTTP: status, body, and every header but the date.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JSON_TYPE, Responder } from '../../server/http/responder.ts';

const responder = new Responder();
let server: http.Server;
let base: string;

/** What each path answers: the same status, headers and body, by the Responder or by Koa. */
const ANSWERS: Record<string, { status: number; body: string; headers?: Record<string, string> }> = {
  '/created': { status: 200, body: JSON.stringify({ id: 'cs_1', note: 'Ōtautahi €42 🎉' }) },
  '/refused': {
    status: 401,
    body: JSON.stringify({ error: { code: 'unauthorized', message: 'no', param: null } }),
    headers: { 'www-authenticate': 'Bearer realm="api"' },
  },
  '/empty': { status: 200, body: '{}' },
};

beforeAll(async () => {
  const app = new Koa();
  app.use((ctx) => {
    const [way, path] = [ctx.path.split('/')[1], `/${ctx.path.split('/').slice(2).join('/')}`];
    const answer = ANSWERS[path]!;
    if (way === 'responder') {
      responder.arrived();
      responder.json(ctx, answer.status, answer.body, answer.headers);
      return;
    }
    ctx.status = answer.status;
    for (const [name, value] of Object.entries(answer.headers ?? {})) ctx.set(name, value);
    ctx.set('cache-control', 'no-store');
    ctx.type = JSON_TYPE;
    ctx.body = answer.body;
  });
  server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function answer(way: string, path: string, method: string) {
  const res = await fetch(`${base}/${way}${path}`, { method });
  const headers = Object.fromEntries([...res.headers].filter(([name]) => name !== 'date'));
  return { status: res.status, headers, body: await res.text() };
}

describe('the Responder writes what Koa would have written', () => {
  for (const path of Object.keys(ANSWERS))
    for (const method of ['GET', 'HEAD'])
      it(`${method} ${path}`, async () => {
        const [ours, koa] = [await answer('responder', path, method), await answer('koa', path, method)];
        expect(ours).toEqual(koa);
      });
});

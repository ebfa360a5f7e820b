/**
 * `npm run bench:rewrites`: what each of the server's hand-written replacements of library
 * code gains, measured against the library it replaces, in one process, alternated round
 * by round so that the machine's drift falls on both alike:
 *
 * - the request pipeline (http/openapi/pipeline.ts, router.ts, request-validator.ts)
 *   against openapi-backend's `handleRequest`, deciding a read and a create;
 * - the answer written to Node directly (http/responder.ts) against Koa's `ctx.body`,
 *   over HTTP under autocannon (a Koa app that answers a JSON body either way).
 *
 * Each is printed as time per operation and the gain; bench/README.md sets the gain against
 * the server's CPU time per request (`npm run bench`) and says what was kept, and why.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Koa from 'koa';
import type { Context, Document } from 'openapi-backend';
import { openApi } from '../server/http/openapi/backend.ts';
import { Pipeline } from '../server/http/openapi/pipeline.ts';
import type { PipelineRequest } from '../server/http/openapi/router.ts';
import { Responder } from '../server/http/responder.ts';
import { autocannon } from './autocannon.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROUNDS = 5;

/** Microseconds per call of `fn`, over `n` calls (awaited when it returns a promise). */
async function perCall(n: number, fn: () => unknown): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const out = fn();
    if (out instanceof Promise) await out;
  }
  return Number(process.hrtime.bigint() - start) / 1000 / n;
}

/** Alternates the two, ROUNDS times, after a warm-up; gives the median of each. */
async function compare(n: number, ours: () => unknown, library: () => unknown): Promise<[number, number]> {
  await perCall(Math.ceil(n / 5), ours);
  await perCall(Math.ceil(n / 5), library);
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    a.push(await perCall(n, ours));
    b.push(await perCall(n, library));
  }
  const median = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  return [median(a), median(b)];
}

async function pipelines(): Promise<Array<[string, number, number]>> {
  const definition = JSON.parse(readFileSync(path.join(root, 'generated/openapi.json'), 'utf8')) as Document;
  const ours = new Pipeline(await openApi(definition), { bearerAuth: () => true });
  const library = await openApi(definition);
  library.registerSecurityHandler('bearerAuth', () => true);
  library.register({
    notFound: () => 'notFound',
    methodNotAllowed: () => 'methodNotAllowed',
    unauthorizedHandler: () => 'unauthorized',
    validationFail: (c: Context) => c.validation.errors,
  });
  for (const operation of library.getOperations()) library.register(operation.operationId!, () => 'valid');
  const read: PipelineRequest = {
    method: 'GET',
    path: '/api/checkout-sessions/cs_7Hq2mX9vK3pL8nR4',
    query: {},
    headers: { authorization: 'Bearer x' },
    body: undefined,
  };
  const create: PipelineRequest = {
    method: 'POST',
    path: '/api/checkout-sessions',
    query: {},
    headers: { authorization: 'Bearer x', 'content-type': 'application/json', 'idempotency-key': 'k-1' },
    body: {
      type: 'single',
      amount: { total: 25.5 },
      creditorReference: { reference: 'INV-1001' },
      redirectUrl: 'https://shop.example.com/done',
      checkoutMethod: 'both',
    },
  };
  const rows: Array<[string, number, number]> = [];
  for (const [name, req] of [
    ['pipeline: a read', read],
    ['pipeline: a create', create],
  ] as const) {
    const [a, b] = await compare(
      20_000,
      () => ours.decide(req, undefined),
      () => library.handleRequest(req as never),
    );
    rows.push([name, a, b]);
  }
  return rows;
}

/** Requests a second of a Koa app answering one JSON body by `answer`, under autocannon. */
async function answering(answer: (ctx: Koa.Context) => void): Promise<number> {
  const app = new Koa();
  app.use((ctx) => answer(ctx));
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    let answered = 0;
    const seconds = 3;
    await autocannon({
      url: `http://127.0.0.1:${port}/`,
      connections: 20,
      duration: seconds,
      requests: [{ method: 'GET', path: '/', onResponse: () => void answered++ }],
    });
    return answered / seconds;
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

async function responders(): Promise<[string, number, number]> {
  const body = JSON.stringify({
    id: 'cs_7Hq2mX9vK3pL8nR4',
    status: 'created',
    amount: { total: 25.5, currency: 'NZD' },
  });
  const responder = new Responder();
  const ours: number[] = [];
  const koa: number[] = [];
  for (let round = 0; round < 3; round++) {
    ours.push(
      await answering((ctx) => {
        responder.arrived();
        responder.json(ctx, 200, body);
      }),
    );
    koa.push(
      await answering((ctx) => {
        ctx.status = 200;
        ctx.set('cache-control', 'no-store');
        ctx.type = 'application/json; charset=utf-8';
        ctx.body = body;
      }),
    );
  }
  const median = (xs: number[]) => xs.sort((x, y) => x - y)[1]!;
  // Microseconds per request, from requests a second (the client shares the process).
  return ['answers (Responder vs ctx.body), per request over HTTP', 1e6 / median(ours), 1e6 / median(koa)];
}

async function main(): Promise<void> {
  const rows: Array<[string, number, number]> = [...(await pipelines()), await responders()];
  console.log('| rewrite | ours (µs) | library (µs) | gain (µs) |');
  console.log('|---|---:|---:|---:|');
  for (const [name, ours, library] of rows)
    console.log(`| ${name} | ${ours.toFixed(2)} | ${library.toFixed(2)} | ${(library - ours).toFixed(2)} |`);
}

await main();

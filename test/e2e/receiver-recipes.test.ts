/**
 * The merchant receiver recipes of examples/receivers/ (node:http, Express, Fastify, Koa,
 * a Web-standard handler) and the client README's own example, each started as a merchant
 * runs it against the in-process reference server, then checked by `payment-conformance
 * receiver` with real events: it makes real payments whose webhooks the server delivers,
 * so a receiver that reads each payment back can pass. Each must pass every check.
 */
import http from 'node:http';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPaymentClient, WebhookVerificationError } from '../../client/index.ts';
import { fulfilmentsInMemory, type ReceiverSetup } from '../../examples/receivers/deliveries.ts';
import { createReceiver as expressReceiver } from '../../examples/receivers/express.ts';
import { createReceiver as fastifyReceiver } from '../../examples/receivers/fastify.ts';
import { createReceiver as koaReceiver } from '../../examples/receivers/koa.ts';
import { createReceiver as nodeReceiver } from '../../examples/receivers/node-http.ts';
import { serveOnNode, webhookHandler } from '../../examples/receivers/web.ts';
import { cli, type JsonReport } from '../support/conformance-cli.ts';
import { type Org, SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';
import { paced } from '../support/pace.ts';

let t: TestServer;
let org: Org;
const fulfilled: string[] = [];
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 20 });
  org = await t.organisation();
});
afterAll(async () => {
  for (const close of closers) await close();
  await t?.close();
  // The example's environment, as it was: the worker goes on to other files.
  vi.unstubAllEnvs();
});

const setup = (): ReceiverSetup => ({
  client: createPaymentClient({ baseUrl: t.url, ...org.apiKeys.test }),
  signingSecret: org.webhookSigningSecret,
  fulfilments: fulfilmentsInMemory(),
  fulfil: (orderId) => void fulfilled.push(orderId),
});

/** Listens on a free loopback port; the receiver's URL. */
async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
}

const recipes: Record<string, () => Promise<string>> = {
  'node:http': () => listen(nodeReceiver(setup())),
  Express: () => listen(http.createServer(expressReceiver(setup()))),
  Fastify: async () => {
    const app = fastifyReceiver(setup());
    await app.ready();
    return listen(app.server);
  },
  Koa: () => listen(http.createServer(koaReceiver(setup()).callback())),
  'a Web-standard handler': () => listen(serveOnNode(webhookHandler(setup()))),
  // The client README's example: onWebhook throws on a bad signature (answer 400) and on a
  // failed read (answer 500), as its comments say; PAYMENT_BASE_URL and the secrets from the env.
  'the client README’s example': async () => {
    vi.stubEnv('PAYMENT_BASE_URL', t.url);
    vi.stubEnv('CLIENT_ID', org.apiKeys.test.clientId);
    vi.stubEnv('CLIENT_SECRET', org.apiKeys.test.clientSecret);
    vi.stubEnv('WEBHOOK_SECRET', org.webhookSigningSecret);
    const { onWebhook } = await import('../../examples/integration.ts');
    const server = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk);
      const header = req.headers['service-signature'];
      try {
        // The example leaves deduplication to the merchant's store (its comment says so).
        await onWebhook(Buffer.concat(chunks), typeof header === 'string' ? header : undefined, async () => {});
        res.writeHead(200).end();
      } catch (error) {
        res.writeHead(error instanceof WebhookVerificationError ? 400 : 500).end();
      }
    });
    return listen(server);
  },
};

describe('each receiver recipe, with real events from the reference server', () => {
  it.each(Object.keys(recipes))(
    '%s passes every receiver check',
    async (name) => {
      const url = await recipes[name]!();
      const out = mkdtempSync(path.join(tmpdir(), 'receiver-recipe-'));
      const run = await cli([
        'receiver',
        '--url',
        url,
        '--secret',
        org.webhookSigningSecret,
        '--base-url',
        t.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--client-id',
        org.apiKeys.test.clientId,
        '--client-secret',
        org.apiKeys.test.clientSecret,
        '--reporter',
        'json',
        '--out',
        out,
      ]);
      const report = JSON.parse(readFileSync(path.join(out, 'conformance.json'), 'utf8')) as JsonReport;
      const failed = report.results.filter((r) => r.status !== 'passed').map((r) => `${r.id} ${r.status}: ${r.reason}`);
      console.log(`${name}: exit ${run.code}, ${JSON.stringify(report.summary)}`);
      expect(failed).toEqual([]);
      expect(run.code).toBe(0);
      expect(report.summary.passed).toBeGreaterThanOrEqual(17);
    },
    paced(120_000),
  );

  it('the recipes fulfilled orders for the real payments the checks made, each once however often it was delivered', () => {
    expect(fulfilled.length).toBeGreaterThan(0);
    expect(new Set(fulfilled).size).toBe(fulfilled.length);
  });
});

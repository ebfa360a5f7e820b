/**
 * The reference server's composition root: makes each part and wires them together, the
 * operations' handlers (handlers/, sandbox/handlers.ts) and the docs' pages into the HTTP
 * layer among them (the Koa middleware are in http/koa-app.ts, the request flow in
 * ARCHITECTURE.md).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Document } from 'openapi-backend';
import type { Logger } from 'pino';
import { Credentials } from './auth/credentials.ts';
import { Secrets } from './auth/secrets.ts';
import { Tokens } from './auth/tokens.ts';
import { Background } from './background/thread.ts';
import { docsPages } from './docs/site.ts';
import { Idempotency } from './domain/idempotency.ts';
import { Ids } from './domain/ids.ts';
import { type DemoOrganisation, demoOrganisation } from './domain/organisations.ts';
import { publicHandlers } from './handlers/index.ts';
import { serveApi } from './http/api.ts';
import { koaApp } from './http/koa-app.ts';
import { publicApi, sandboxApi } from './http/backends.ts';
import { pages } from './http/pages.ts';
import { Responder } from './http/responder.ts';
import { listen } from './http/server.ts';
import { serverLog } from './logging.ts';
import { packageRoot } from './root.ts';
import { Faults } from './domain/faults.ts';
import { sandboxHandlers } from './sandbox/handlers.ts';
import { checkSandboxExposure, sandboxToken as sandboxTokenOf } from './sandbox/token.ts';
import type { Services } from './scope.ts';
import { openStore } from './store/open.ts';
import type { Store } from './store/types.ts';
import { WebhookDispatcher } from './webhooks/dispatcher.ts';
import type { AnswerClock } from './webhooks/send.ts';

export type { DemoOrganisation } from './domain/organisations.ts';

const contract = createRequire(import.meta.url);
// Parsed afresh for each server: openapi-backend may change the object it is given.
const readDescription = (name: string) =>
  JSON.parse(readFileSync(contract.resolve(`@payment-service/contract/${name}`), 'utf8')) as Document;

export interface ServerOptions {
  port?: number;
  host?: string;
  /**
   * SQLite file path, `:memory:`, or a `postgres://` URL (any number of servers on one database).
   * A file's folder must exist, except the default's (`.data/`, made 0700).
   */
  db?: string;
  /**
   * The sandbox API's bearer token; `false` turns the sandbox API off; undefined takes the
   * database's own, random, made on its first start. On a host other than loopback, a token
   * of at least 32 characters must be given (sandbox/token.ts).
   */
  sandboxToken?: string | false;
  publicUrl?: string;
  docsUrl?: string;
  /** Where the Redoc pages are (default: the package's site/, written by `npm run build`). */
  docsDir?: string;
  logger?: Logger;
  /** Keep a demo organisation, made on the first start, and return its credentials (the CLI does). */
  demo?: boolean;
  /** How often expired idempotency records are deleted. */
  cleanupIntervalMs?: number;
  /** How often due webhook retries are looked for. */
  webhookPollIntervalMs?: number;
  /** What times the five-second wait for a receiver's answer (default: real timers; tests pass a virtual clock). */
  webhookAnswerClock?: AnswerClock;
  /** WAL length (4 KiB frames) at which the background thread has the WAL rewound. */
  walRewindFrames?: number;
  /**
   * log2 of scrypt's N for client secrets hashed from now on (default 14). Each hash keeps
   * its own cost, so servers with different costs share a database; tests lower it.
   */
  secretHashCost?: number;
  /** Time a request has to arrive in full, headers and body (default 30 s, the headers within 10 s). */
  requestTimeoutMs?: number;
}

export interface PaymentServer {
  url: string;
  publicUrl: string;
  docsUrl: string;
  sandboxToken: string | undefined;
  demo: DemoOrganisation | undefined;
  store: Store;
  close(): Promise<void>;
}

export async function createPaymentServer(options: ServerOptions = {}): Promise<PaymentServer> {
  // Each part's stop, pushed as the part starts: run in reverse, they stop the server in
  // the order that loses nothing (no new work, the work under way finished, then what it
  // writes to closed), and undo a start that fails halfway.
  const stops: Array<() => unknown> = [];
  const stop = async () => {
    for (const stopPart of stops.splice(0).reverse()) await stopPart();
  };
  try {
    return await compose(options, stops, stop);
  } catch (error) {
    await stop();
    throw error;
  }
}

async function compose(
  options: ServerOptions,
  stops: Array<() => unknown>,
  stop: () => Promise<void>,
): Promise<PaymentServer> {
  // Before anything is made: a refused start leaves nothing behind.
  checkSandboxExposure(options.host ?? '127.0.0.1', options.sandboxToken);
  const logging = await serverLog(options.logger);
  stops.push(() => logging.close());
  const { log } = logging;
  const background = new Background();
  stops.push(() => background.close());
  // Its thread starts now, alongside the rest of the start, rather than when first asked.
  background.start();
  const store = await openStore(options.db ?? '.data/payment-service.sqlite', {
    background,
    log,
    rewindFrames: options.walRewindFrames,
    makeFolder: options.db === undefined,
  });
  stops.push(() => store.close());
  await store.migrate();
  const credentials = new Credentials(store, new Secrets(background.scrypt.bind(background), options.secretHashCost));
  const faults = await Faults.open(store);
  const sandboxToken = await sandboxTokenOf(options.sandboxToken, store);

  // Until `serve` below, every request is answered 503.
  const responder = new Responder();
  const http = await listen(
    { port: options.port ?? 4010, host: options.host ?? '127.0.0.1', requestTimeoutMs: options.requestTimeoutMs },
    responder,
  );
  stops.push(() => http.close());
  // Only once listening: a start that fails (a port in use) must not leave behind a demo
  // organisation whose credentials were never printed. Its key's scrypt hash runs on the
  // background thread while this one makes the rest; it is awaited before serving.
  const demoMade = options.demo ? demoOrganisation(store, credentials) : undefined;
  // Its failure is the start's, at the await below; until then it is not unhandled.
  demoMade?.catch(() => undefined);
  const definitions = { public: readDescription('openapi.json'), sandbox: readDescription('sandbox.json') };
  // The operations' handlers are wired in here: the HTTP layer serves whatever it is handed.
  const apis = {
    public: await publicApi(definitions.public, publicHandlers),
    sandbox: sandboxToken ? await sandboxApi(definitions.sandbox, sandboxToken, sandboxHandlers) : undefined,
  };
  const publicUrl = (options.publicUrl ?? http.url).replace(/\/$/, '');
  const docsUrl = (options.docsUrl ?? `${publicUrl}/docs`).replace(/\/$/, '');
  const services: Services = {
    store,
    tokens: await Tokens.open(store),
    credentials,
    idempotency: new Idempotency(store),
    ids: new Ids(),
    faults,
    webhooks: new WebhookDispatcher(store, faults, log, {
      pollIntervalMs: options.webhookPollIntervalMs,
      answerClock: options.webhookAnswerClock,
    }),
    sessionAnswers: new WeakMap(),
    publicUrl,
    log,
  };
  const docs = docsPages({
    dir: options.docsDir ?? path.join(packageRoot, 'site'),
    descriptions: [definitions.public, definitions.sandbox],
    publicUrl,
    sandbox: apis.sandbox !== undefined,
  });
  const app = koaApp(
    {
      api: serveApi(apis.public, services, responder),
      sandbox: apis.sandbox && serveApi(apis.sandbox, services, responder),
      pages: pages(services, responder, docs),
    },
    log,
    responder,
    docsUrl,
  );
  const demo = await demoMade;
  http.serve(app.callback(), docsUrl, log);
  stops.push(() => services.webhooks.stop());
  // Run before the webhooks' stop, which waits for the deliveries under way: no request
  // is taken meanwhile.
  stops.push(() => http.stopAccepting());
  await services.webhooks.start();

  const cleanup = setInterval(() => {
    store.deleteExpired(Date.now()).catch((err: unknown) => log.error({ err }, 'clean-up failed'));
  }, options.cleanupIntervalMs ?? 60_000).unref();
  stops.push(() => clearInterval(cleanup));

  let closing: Promise<void> | undefined;
  return {
    url: http.url,
    publicUrl,
    docsUrl,
    sandboxToken,
    demo,
    store,
    close() {
      closing ??= stop();
      return closing;
    },
  };
}

/**
 * The reference server: Koa, with the public API and the sandbox API each routed and
 * validated by openapi-backend from generated/. Middleware, outermost first:
 * request log → error envelope → raw body → docs / health / API dispatch.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import { timingSafeEqual, createHash } from 'node:crypto';
import Koa, { type Context as KoaContext } from 'koa';
import type { Document, Operation } from 'openapi-backend';
import pino, { type DestinationStream, type Logger } from 'pino';
import { Tokens } from './auth/tokens.ts';
import { docsSite } from './docs/site.ts';
import { Idempotency, type Reply } from './domain/idempotency.ts';
import { newSandboxToken } from './domain/ids.ts';
import { demoOrganisation, type DemoOrganisation } from './domain/organisations.ts';
import { refuseWebhookUrl } from './domain/webhook-target.ts';
import { MALFORMED } from './handlers/createAccessToken.ts';
import { sentTwice, unreadableCoding } from './http/headers.ts';
import { publicHandlers } from './handlers/index.ts';
import { isJson, mediaType, parseBody } from './http/body.ts';
import {
  ApiError,
  errorJson,
  methodNotAllowed,
  TOKEN_PATH,
  validationFailed,
  type ErrorDetail,
} from './http/errors.ts';
import { Backend } from './http/openapi.ts';
import { JSON_TYPE, requestArrived, respondJson } from './http/respond.ts';
import { errorEnvelope } from './middleware/error-envelope.ts';
import { rawBody } from './middleware/raw-body.ts';
import { requestLog } from './middleware/request-log.ts';
import { sandboxHandlers } from './sandbox/handlers.ts';
import type { Scope, Services } from './scope.ts';
import { SqliteStore } from './store/sqlite.ts';
import { WebhookDispatcher } from './webhooks/dispatcher.ts';
import { hostedPage } from './pay/page.ts';
import type { Store } from './store/types.ts';
import { packageRoot } from './root.ts';

export type { DemoOrganisation } from './domain/organisations.ts';

const contract = createRequire(import.meta.url);
// Parsed afresh for each server: openapi-backend may change the object it is given.
const readDescription = (name: string) =>
  JSON.parse(readFileSync(contract.resolve(`@payment-service/contract/${name}`), 'utf8')) as Document;

export interface ServerOptions {
  port?: number;
  host?: string;
  /** SQLite file path or `:memory:`. */
  db?: string;
  /** The sandbox API's bearer token; `false` turns the sandbox API off; undefined picks a random one. */
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
  /** WAL length (4 KiB frames) at which the background thread has the WAL rewound. */
  walRewindFrames?: number;
  /** Time a request has to arrive in full, headers and body (default: Node's, 60 s for the headers and 300 s in all). */
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

/** How late a log line may reach stderr when the server is quiet. */
const LOG_FLUSH_MS = 200;
/** RFC 9110 11.6.1: a 401 names the scheme that would work. */
const API_CHALLENGE = 'Bearer realm="api"';

/** pino-pretty on stderr, loaded only for a terminal. */
async function prettyStderr(): Promise<DestinationStream> {
  const { default: pretty } = await import('pino-pretty');
  return pretty({
    destination: 2,
    sync: true,
    // https://no-color.org: a set, non-empty NO_COLOR turns colours off.
    colorize: !process.env.NO_COLOR,
    translateTime: 'SYS:HH:MM:ss.l',
    // A request's fields on one line, as an access log shows them.
    ignore: 'pid,hostname,reqId,method,path,status,ms',
    messageFormat: '{msg}{if method}: {method} {path} {status} in {ms} ms{end}{if reqId} ({reqId}){end}',
  });
}

function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export async function createPaymentServer(options: ServerOptions = {}): Promise<PaymentServer> {
  const host = options.host ?? '127.0.0.1';
  const level = process.env.LOG_LEVEL ?? 'info';
  // A person at a terminal reads the log: pretty lines. Anything else (a file, a pipe, a
  // collector) gets JSON lines.
  const pretty = !options.logger && process.stderr.isTTY === true;
  // Buffered writes to stderr: one syscall per few kilobytes of log under load; when the
  // server is quiet, what is buffered goes out within LOG_FLUSH_MS, and all of it on close.
  const destination =
    options.logger || pretty ? undefined : pino.destination({ dest: 2, sync: false, minLength: 4096 });
  let unwritten = false;
  const log =
    options.logger ??
    (pretty
      ? pino({ level }, await prettyStderr())
      : pino(
          {
            level,
            hooks: {
              streamWrite: (line) => {
                unwritten = true;
                return line;
              },
            },
          },
          destination,
        ));
  const logFlush = destination
    ? setInterval(() => {
        if (!unwritten) return;
        unwritten = false;
        destination.flush();
      }, LOG_FLUSH_MS).unref()
    : undefined;
  const store = new SqliteStore(options.db ?? '.data/payment-service.sqlite', options.walRewindFrames);
  await store.migrate();
  const tokens = await Tokens.open(store);
  const sandboxToken = options.sandboxToken === false ? undefined : (options.sandboxToken ?? newSandboxToken());

  const publicDefinition = readDescription('openapi.json');
  const sandboxDefinition = readDescription('sandbox.json');

  const publicApi = await Backend.create<Scope>({
    definition: publicDefinition,
    handlers: publicHandlers,
    security: {
      bearerAuth: async (c, scope) => {
        // Node keeps the first of two Authorization headers; which one is meant is unknowable.
        scope.auth = sentTwice(scope.koa.req, 'authorization')
          ? { ok: false, code: 'unauthorized', message: 'Send one Authorization header: Bearer <token>.' }
          : await scope.services.tokens.authenticate(c.request.headers.authorization as string | undefined);
        return scope.auth.ok;
      },
    },
    unauthorized: (_c, scope) => {
      const auth = scope.auth;
      if (!auth || auth.ok || auth.code === 'unauthorized')
        return new ApiError(
          401,
          'unauthorized',
          auth?.ok === false ? auth.message : 'Authentication required.',
          null,
          undefined,
          { 'www-authenticate': API_CHALLENGE },
        );
      // A token was sent and is not good (RFC 6750 3.1: invalid_token covers expired and revoked).
      return new ApiError(401, auth.code, auth.message, null, undefined, {
        'www-authenticate': `${API_CHALLENGE}, error="invalid_token"`,
      });
    },
    // The token endpoint answers its failures as { error: <string> }, not the envelope.
    onValidationFail: (c, scope) => {
      if (c.operation?.operationId === 'createAccessToken') return MALFORMED;
      if (scope.bodyProblem) throw scope.bodyProblem;
      return undefined;
    },
    moreValidation: (c, scope) => {
      const details: ErrorDetail[] = [...(scope.inexact ?? [])];
      const req = scope.koa.req;
      if ((scope.koa.state.rawBody as Buffer).length > 0 && sentTwice(req, 'content-type')) {
        details.push({ field: 'Content-Type', constraints: { single: 'Content-Type must be sent once' } });
      }
      // Node joins a repeated header with ", ": two keys are not one key. Only the creates
      // read the key; other operations ignore it, repeated or not.
      const key = c.request.headers['idempotency-key'];
      if (
        typeof key === 'string' &&
        key.includes(', ') &&
        takesIdempotencyKey(c.operation) &&
        sentTwice(req, 'idempotency-key')
      ) {
        details.push({ field: 'Idempotency-Key', constraints: { single: 'Idempotency-Key must be sent once' } });
      }
      // Which webhook targets are allowed depends on the key's mode.
      const body = c.request.requestBody as { webhookUrl?: unknown } | undefined;
      if (scope.auth?.ok && typeof body === 'object' && body !== null && typeof body.webhookUrl === 'string') {
        const refusal = refuseWebhookUrl(body.webhookUrl, scope.auth.apiKey.mode);
        if (refusal) details.push({ field: 'webhookUrl', constraints: { publiclyReachable: refusal } });
      }
      return details;
    },
  });
  const sandboxApi = sandboxToken
    ? await Backend.create<Scope>({
        definition: sandboxDefinition,
        handlers: sandboxHandlers,
        security: {
          sandboxToken: async (c, scope) => {
            if (sentTwice(scope.koa.req, 'authorization')) return false;
            const match = /^Bearer +(\S+)$/i.exec(String(c.request.headers.authorization ?? '').trim());
            return Boolean(match && sameSecret(match[1]!, sandboxToken));
          },
        },
        unauthorized: () =>
          new ApiError(
            401,
            'unauthorized',
            'Send the sandbox token as Authorization: Bearer <token> (printed by the server at start).',
            null,
            undefined,
            {
              'www-authenticate': 'Bearer realm="sandbox"',
            },
          ),
        onValidationFail: (_c, scope) => {
          if (scope.bodyProblem) throw scope.bodyProblem;
          return undefined;
        },
        moreValidation: (_c, scope) => scope.inexact ?? [],
      })
    : undefined;

  const app = new Koa();
  // The address (and so publicUrl) is known only once listening; the app is composed after.
  let handle: http.RequestListener = (_req, res) => res.writeHead(503).end();
  // requireHostHeader off: Node would answer a missing Host with a bare 400; requireHost does, in the envelope.
  const onRequest: http.RequestListener = (req, res) => {
    requestArrived();
    handle(req, res);
  };
  const timeouts = options.requestTimeoutMs
    ? {
        headersTimeout: options.requestTimeoutMs,
        requestTimeout: options.requestTimeoutMs,
        connectionsCheckingInterval: Math.ceil(options.requestTimeoutMs / 4),
      }
    : {};
  const server = http.createServer({ requireHostHeader: false, ...timeouts }, onRequest);
  // An Expect other than 100-continue is ignored (RFC 9110 10.1.1 allows it), not refused
  // with Node's bare 417: the request is answered as any other.
  server.on('checkExpectation', onRequest);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 4010, host, () => resolve());
  });
  // Only once listening: a start that fails (a port in use) must not leave behind a demo
  // organisation whose credentials were never printed.
  const demo: DemoOrganisation | undefined = options.demo ? await demoOrganisation(store) : undefined;
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const publicUrl = (options.publicUrl ?? url).replace(/\/$/, '');
  const docsUrl = (options.docsUrl ?? `${publicUrl}/docs`).replace(/\/$/, '');
  server.on('clientError', answerUnreadable(docsUrl, log));

  const webhooks = new WebhookDispatcher(store, log, { pollIntervalMs: options.webhookPollIntervalMs });
  const services: Services = {
    store,
    tokens,
    idempotency: new Idempotency(store),
    publicUrl,
    docsUrl,
    sandboxToken,
    webhooks,
    log,
  };

  async function dispatch(ctx: KoaContext, backend: Backend<Scope>): Promise<void> {
    const raw = ctx.state.rawBody as Buffer;
    const type = mediaType(ctx.get('content-type') || undefined);
    // A body problem is answered at the validation step (after routing and security, as
    // openapi-backend orders them): the body goes on as missing, and validationFail says why.
    let body: unknown;
    let bodyProblem: ApiError | undefined;
    let inexact: Scope['inexact'];
    const coding = raw.length > 0 ? unreadableCoding(ctx.req) : undefined;
    if (ctx.state.bodyTooLarge) {
      bodyProblem = validationFailed([
        { field: '', constraints: { maxSize: 'The request body must be at most 1 MiB' } },
      ]);
    } else if (coding) {
      bodyProblem = validationFailed([{ field: coding.field, constraints: { coding: coding.problem } }]);
    } else if (raw.length > 0 && ctx.path !== TOKEN_PATH && !isJson(type)) {
      bodyProblem = validationFailed([
        { field: '', constraints: { contentType: 'Send the request body as application/json' } },
      ]);
    } else {
      try {
        ({ value: body, inexact } = parseBody(raw, type));
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        bodyProblem = error;
      }
    }
    let path = ctx.path;
    try {
      decodeURIComponent(path);
    } catch {
      // A stray `%` (or an escape that is not UTF-8) is taken literally, as a browser's URL
      // parser does: the request is routed and authenticated as any other, and an id
      // holding it is simply not found.
      path = path.replace(/%/g, '%25');
    }
    const reply = await backend.handle(
      {
        method: ctx.method,
        path,
        // Only what the operations read: openapi-backend copies and re-keys every header it is given.
        headers: pickHeaders(ctx.headers),
        query: ctx.query as Record<string, string | string[]>,
        body,
      },
      { services, koa: ctx, bodyProblem, inexact },
    );
    send(ctx, reply);
  }

  app.use(requestLog(log));
  app.use(errorEnvelope(docsUrl, log));
  app.use(function requireHost(ctx, next) {
    // RFC 9112 3.2: an HTTP/1.1 request without Host is answered 400.
    if (ctx.req.headers.host === undefined && ctx.req.httpVersion === '1.1') {
      throw validationFailed([
        { field: 'Host', constraints: { required: 'HTTP/1.1 requests must carry a Host header' } },
      ]);
    }
    return next();
  });
  app.use(rawBody());
  // The APIs first: their requests, the bulk of the traffic, skip the page middlewares.
  app.use(async function route(ctx, next) {
    if (ctx.path.startsWith('/api/')) return dispatch(ctx, publicApi);
    if (ctx.path.startsWith('/sandbox/') && sandboxApi) return dispatch(ctx, sandboxApi);
    if (ctx.path === '/healthz') {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw methodNotAllowed(ctx.method, ctx.path, ['GET', 'HEAD']);
      return respondJson(ctx, 200, '{"ok":true}');
    }
    return next();
  });
  app.use(
    docsSite({
      dir: options.docsDir ?? path.join(packageRoot, 'site'),
      descriptions: [publicDefinition, sandboxDefinition],
      publicUrl,
      sandbox: sandboxApi !== undefined,
    }),
  );
  app.use(hostedPage(services));
  app.use(function unknownPath() {
    throw new ApiError(404, 'not_found', 'No such resource.');
  });

  handle = app.callback();
  await webhooks.start();

  const cleanup = setInterval(() => {
    store.deleteExpired(Date.now()).catch((err: unknown) => log.error({ err }, 'clean-up failed'));
  }, options.cleanupIntervalMs ?? 60_000);
  cleanup.unref();

  let closing: Promise<void> | undefined;
  return {
    url,
    publicUrl,
    docsUrl,
    sandboxToken,
    demo,
    store,
    close() {
      closing ??= (async () => {
        clearInterval(cleanup);
        await webhooks.stop();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          setTimeout(() => server.closeAllConnections(), 2000).unref();
        });
        await store.close();
        clearInterval(logFlush);
        destination?.flushSync();
      })();
      return closing;
    },
  };
}

const HEADERS_READ = ['authorization', 'content-type', 'idempotency-key'] as const;

/** Operations that declare the Idempotency-Key header (the creates). */
const declaresKey = new WeakMap<object, boolean>();
function takesIdempotencyKey(operation: Operation | undefined): boolean {
  if (!operation) return false;
  let declares = declaresKey.get(operation);
  if (declares === undefined) {
    declares = (operation.parameters ?? []).some(
      (p) => 'in' in p && p.in === 'header' && p.name.toLowerCase() === 'idempotency-key',
    );
    declaresKey.set(operation, declares);
  }
  return declares;
}

function pickHeaders(headers: KoaContext['headers']): KoaContext['headers'] {
  const picked: Record<string, string | string[]> = {};
  for (const name of HEADERS_READ) {
    const value = headers[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked as KoaContext['headers'];
}

/** The start of a token request, as Node's parser saw it (its `rawPacket`). */
const TOKEN_REQUEST_LINE = /^POST \/api\/token[ ?]/;

/**
 * Requests Node's HTTP parser refuses before the app sees them (headers over 16 KiB, a
 * control character in a header, an unknown method, bytes that are not HTTP, a request
 * not received in full in time) get the envelope too, or the token endpoint's string
 * form when the request line is known to be one, instead of Node's bare status line; the
 * connection is closed.
 */
function answerUnreadable(docsUrl: string, log: Logger) {
  return (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex): void => {
    // As Node's own handler: nothing is written into an answer already under way on this
    // connection (`_httpMessage`, the response in flight), and the connection is closed.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, constraint, problem] =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'timeout', 'The request must arrive in full within the time limit']
        : error.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'maxSize', 'The request headers must be at most 16 KiB']
          : [400, 'http', 'The request is not valid HTTP/1.1'];
    const refusal = new ApiError(status, 'validation_failed', problem, null, [
      { field: '', constraints: { [constraint]: problem } },
    ]);
    const tokenRequest =
      error.rawPacket !== undefined && TOKEN_REQUEST_LINE.test(error.rawPacket.toString('latin1', 0, 24));
    const body = errorJson(refusal, docsUrl, tokenRequest);
    if (status !== 408) log.warn({ code: error.code }, 'unreadable request refused');
    socket.write(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: ${JSON_TYPE}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
    );
    socket.destroy();
  };
}

function send(ctx: KoaContext, reply: Reply): void {
  if (reply.replayed) ctx.set('idempotent-replayed', 'true');
  respondJson(ctx, reply.status, reply.json ?? JSON.stringify(reply.body));
}

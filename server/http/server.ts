/**
 * The node:http server under Koa: its time limits and connection cap, the headers every
 * answer carries, how it stops, and an answer in the envelope for requests Node's parser
 * refuses before Koa sees them.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { connectionCap, descriptorLimit } from './connections.ts';
import { ApiError, errorJson } from './errors.ts';
import { requestLine } from './request-log.ts';
import { JSON_TYPE, type Responder } from './responder.ts';
import { SECURITY_HEADER_LINES, secure } from './security.ts';

export interface HttpOptions {
  port: number;
  host: string;
  /** Time a request has to arrive in full, headers and body (default REQUEST_TIMEOUT_MS; its headers HEADERS_TIMEOUT_MS). */
  requestTimeoutMs?: number;
}

export interface Listening {
  server: http.Server;
  url: string;
  /** Starts answering, each request named and logged (request-log.ts): until then every request is answered 503. */
  serve(listener: http.RequestListener, docsUrl: string, log: Logger): void;
  /**
   * Stops taking connections and requests at once; the requests under way are answered
   * (on connections that then close) for at most STOP_GRACE_MS.
   */
  stopAccepting(): void;
  /** Stops accepting, and resolves once the requests under way are answered or cut. */
  close(): Promise<void>;
}

/**
 * Node's defaults hold a request whose headers never end for 60 s and one whose body never
 * ends for 300 s, and look only every 30 s: a few thousand such connections from one
 * client would hold the server's descriptors. Headers get 10 s, the whole request (the
 * body is at most 1 MiB) 30 s, checked every second.
 */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
const CHECK_INTERVAL_MS = 1000;
/** An idle keep-alive connection is closed after this long. */
const KEEP_ALIVE_TIMEOUT_MS = 5000;
/**
 * How long the requests under way at a stop have to finish before their connections are
 * cut: longer than the slowest a request is meant to take (an open-banking payment waits
 * up to 5 s for its webhook), shorter than the 10 s a supervisor (Docker, systemd's
 * default is 90 s) usually gives before SIGKILL.
 */
const STOP_GRACE_MS = 8000;

export async function listen(options: HttpOptions, responder: Responder): Promise<Listening> {
  // The address (and so the public URL the app is composed with) is known only once listening.
  let handle: http.RequestListener = (_req, res) => res.writeHead(503).end();
  let docs: string | undefined;
  let log: Logger | undefined;
  let stopping: Promise<void> | undefined;
  /** The answers under way, whose connections a stop lets finish (and then closes). */
  const underway = new Set<http.ServerResponse>();
  const sockets = new Set<Socket>();
  const onRequest: http.RequestListener = (req, res) => {
    secure(res);
    if (stopping) return refuseStopping(res, docs);
    underway.add(res);
    const logged = log && requestLine(log, req, res);
    res.once('close', () => {
      underway.delete(res);
      logged?.();
      // Once a stop began, a keep-alive connection whose answer is done is closed, not reused
      // ('close' comes after Node has detached the answer from its connection).
      if (stopping) server.closeIdleConnections();
    });
    responder.arrived();
    handle(req, res);
  };
  const requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const server = http.createServer(
    {
      // Off: Node would answer a missing Host with a bare 400; the app does, in the envelope.
      requireHostHeader: false,
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, requestTimeout),
      requestTimeout,
      connectionsCheckingInterval: Math.min(CHECK_INTERVAL_MS, Math.ceil(requestTimeout / 4)),
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    },
    onRequest,
  );
  const limit = descriptorLimit();
  const cap = connectionCap(limit);
  if (cap !== undefined) server.maxConnections = cap;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // An Expect other than 100-continue is ignored (RFC 9110 10.1.1 allows it), not refused
  // with Node's bare 417: the request is answered as any other.
  server.on('checkExpectation', onRequest);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    server,
    url: `http://${host}:${port}`,
    serve(listener, docsUrl, serverLog) {
      handle = listener;
      docs = docsUrl;
      log = serverLog;
      server.on('clientError', answerUnreadable(docsUrl, serverLog));
      // After listening, an error of the listening socket (EMFILE on accept, say) is logged:
      // the server keeps serving the connections it has and accepts again when it can.
      server.on('error', (err) => serverLog.error({ err }, 'the listening socket failed'));
      serverLog.info({ maxConnections: cap ?? null, descriptorLimit: limit ?? null }, 'connections capped');
    },
    stopAccepting,
    close() {
      stopAccepting();
      return stopping!;
    },
  };

  function stopAccepting(): void {
    if (stopping) return;
    stopping = new Promise<void>((resolve) => server.close(() => resolve()));
    // Every connection without an answer under way goes now (idle, or a request not yet
    // read in full: it was not taken, so a client may send it again elsewhere).
    const busy = new Set<unknown>([...underway].map((res) => res.socket));
    for (const socket of sockets) if (!busy.has(socket)) socket.destroy();
    // The others close once answered.
    for (const res of underway) if (!res.headersSent) res.setHeader('connection', 'close');
    setTimeout(() => server.closeAllConnections(), STOP_GRACE_MS).unref();
  }
}

/**
 * A request read after a stop began (one pipelined behind an answer under way): not
 * taken, and said so, so the client may send it again elsewhere.
 */
function refuseStopping(res: http.ServerResponse, docsUrl: string | undefined): void {
  if (docsUrl === undefined) return void res.writeHead(503, { connection: 'close' }).end();
  const refusal = new ApiError(
    'internal_error',
    'The server is stopping and did not take this request; send it again.',
    null,
    undefined,
    undefined,
    503,
  );
  const body = errorJson(refusal, docsUrl, false);
  res.writeHead(503, {
    'content-type': JSON_TYPE,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'retry-after': '1',
    connection: 'close',
  });
  res.end(body);
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
    const refusal = new ApiError(
      'validation_failed',
      problem,
      null,
      [{ field: '', constraints: { [constraint]: problem } }],
      undefined,
      status,
    );
    const tokenRequest =
      error.rawPacket !== undefined && TOKEN_REQUEST_LINE.test(error.rawPacket.toString('latin1', 0, 24));
    const body = errorJson(refusal, docsUrl, tokenRequest);
    if (status !== 408) log.warn({ code: error.code }, 'unreadable request refused');
    socket.write(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: ${JSON_TYPE}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\n${SECURITY_HEADER_LINES}Connection: close\r\n\r\n${body}`,
    );
    socket.destroy();
  };
}

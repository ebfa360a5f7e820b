/**
 * The node:http server under Koa: its time limits, and an answer in the envelope for
 * requests Node's parser refuses before Koa sees them.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ApiError, errorJson } from './errors.ts';
import { JSON_TYPE, type Responder } from './responder.ts';

export interface HttpOptions {
  port: number;
  host: string;
  /** Time a request has to arrive in full, headers and body (default: Node's). */
  requestTimeoutMs?: number;
}

export interface Listening {
  server: http.Server;
  url: string;
  /** Starts answering: until then every request is answered 503. */
  serve(listener: http.RequestListener, docsUrl: string, log: Logger): void;
  close(): Promise<void>;
}

/** Grace given to requests under way at close before their connections are cut. */
const CLOSE_GRACE_MS = 2000;

export async function listen(options: HttpOptions, responder: Responder): Promise<Listening> {
  // The address (and so the public URL the app is composed with) is known only once listening.
  let handle: http.RequestListener = (_req, res) => res.writeHead(503).end();
  const onRequest: http.RequestListener = (req, res) => {
    responder.arrived();
    handle(req, res);
  };
  const timeouts = options.requestTimeoutMs
    ? {
        headersTimeout: options.requestTimeoutMs,
        requestTimeout: options.requestTimeoutMs,
        connectionsCheckingInterval: Math.ceil(options.requestTimeoutMs / 4),
      }
    : {};
  // requireHostHeader off: Node would answer a missing Host with a bare 400; the app does, in the envelope.
  const server = http.createServer({ requireHostHeader: false, ...timeouts }, onRequest);
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
    serve(listener, docsUrl, log) {
      handle = listener;
      server.on('clientError', answerUnreadable(docsUrl, log));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS).unref();
      }),
  };
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
        `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
    );
    socket.destroy();
  };
}

/**
 * Gives each request an id (a sane incoming `X-Request-Id`, or a new one), echoes it, and
 * logs one line once the answer is done. Bodies and headers are never logged, so secrets
 * (client secrets, tokens, webhook secrets) cannot reach the log.
 *
 * It works on Node's request and response, not as Koa middleware: http/server.ts names
 * each request as it arrives and ends its line from the response's `close` event, which
 * it listens to anyway. A request pays for no step of its own in the middleware chain,
 * and its answer never waits for its log line.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';

const SANE_ID = /^[\w.-]{1,64}$/;
const REQUEST_ID = 'x-request-id';

/** The id given to the request this is the answer to. */
export const requestIdOf = (res: ServerResponse): string => res.getHeader(REQUEST_ID) as string;

/** The path of a request target as Koa's `ctx.path` reads it (origin form, or absolute form's path). */
function pathOf(target: string): string {
  if (target.startsWith('/')) {
    const query = target.indexOf('?');
    return query < 0 ? target : target.slice(0, query);
  }
  try {
    return new URL(target).pathname;
  } catch {
    return target;
  }
}

/** Names the request; the function it returns writes the request's line, once `res` has closed. */
export function requestLine(log: Logger, req: IncomingMessage, res: ServerResponse): () => void {
  const incoming = req.headers[REQUEST_ID];
  const id = typeof incoming === 'string' && SANE_ID.test(incoming) ? incoming : randomUUID();
  res.setHeader(REQUEST_ID, id);
  const started = performance.now();
  return () => {
    const ms = performance.now() - started;
    // 499: the client closed the connection before it could be answered (as nginx logs it).
    const status = res.writableFinished ? res.statusCode : 499;
    log.info(
      { reqId: id, method: req.method, path: pathOf(req.url ?? '/'), status, ms: Math.round(ms * 100) / 100 },
      'request',
    );
  };
}

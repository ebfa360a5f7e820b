/**
 * Reads the request body as raw bytes, up to a limit, into `ctx.state.rawBody` before
 * anything parses it (openapi-backend does not parse bodies). A body over the limit is
 * drained and flagged, so the connection stays usable and the answer is a 400.
 */
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';

export const BODY_LIMIT_BYTES = 1024 * 1024;
const EMPTY = Buffer.alloc(0);

/** The connection closed before the request's body ended: there is nobody to answer. */
export class ClientGone extends Error {
  constructor(cause?: unknown) {
    super('the client closed the connection before the request body ended', { cause });
    this.name = 'ClientGone';
  }
}

export function rawBody(limit = BODY_LIMIT_BYTES): Middleware {
  return async function readRawBody(ctx, next) {
    // No Content-Length and no Transfer-Encoding: the request has no body (RFC 9112 6.3).
    if (ctx.req.headers['content-length'] === undefined && ctx.req.headers['transfer-encoding'] === undefined) {
      ctx.state.rawBody = EMPTY;
      ctx.state.bodyTooLarge = false;
      return next();
    }
    const { raw, tooLarge } = await readBody(ctx.req, limit);
    ctx.state.rawBody = raw;
    ctx.state.bodyTooLarge = tooLarge;
    await next();
  };
}

/**
 * The body through 'data'/'end' events: `for await` over the request costs an async
 * iterator and a promise per chunk, a noticeable share of a small POST. A request that
 * closes before its end (the client went away, or sent bytes that are not HTTP) fails
 * with ClientGone.
 */
function readBody(req: IncomingMessage, limit: number): Promise<{ raw: Buffer; tooLarge: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooLarge = true;
      else chunks.push(chunk);
    };
    const done = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onEnd = () => {
      done();
      resolve({ raw: tooLarge ? EMPTY : Buffer.concat(chunks, size), tooLarge });
    };
    const onError = (error: Error) => {
      done();
      reject(new ClientGone(error));
    };
    const onClose = () => {
      done();
      reject(new ClientGone());
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

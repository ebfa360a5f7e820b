/**
 * Reads the request body as raw bytes, up to a limit, into `ctx.state.rawBody` before
 * anything parses it (openapi-backend does not parse bodies). A body over the limit is
 * drained and flagged, so the connection stays usable and the answer is a 400.
 */
import type { Middleware } from 'koa';

export const BODY_LIMIT_BYTES = 1024 * 1024;
const EMPTY = Buffer.alloc(0);

export function rawBody(limit = BODY_LIMIT_BYTES): Middleware {
  return async function readRawBody(ctx, next) {
    // No Content-Length and no Transfer-Encoding: the request has no body (RFC 9112 6.3).
    if (ctx.req.headers['content-length'] === undefined && ctx.req.headers['transfer-encoding'] === undefined) {
      ctx.state.rawBody = EMPTY;
      ctx.state.bodyTooLarge = false;
      return next();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) tooLarge = true;
      else chunks.push(chunk);
    }
    ctx.state.rawBody = tooLarge ? Buffer.alloc(0) : Buffer.concat(chunks, size);
    ctx.state.bodyTooLarge = tooLarge;
    await next();
  };
}

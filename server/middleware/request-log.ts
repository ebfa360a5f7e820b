/**
 * Gives each request an id (a sane incoming `X-Request-Id`, or a new one), echoes it, and
 * logs one line when the answer is sent. Bodies and headers are never logged, so secrets
 * (client secrets, tokens, webhook secrets) cannot reach the log.
 */
import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';

const SANE_ID = /^[\w.-]{1,64}$/;

export function requestLog(log: Logger): Middleware {
  return async function logRequest(ctx, next) {
    const incoming = ctx.get('x-request-id');
    const id = SANE_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = id;
    ctx.res.setHeader('x-request-id', id);
    const started = performance.now();
    try {
      await next();
    } finally {
      const ms = performance.now() - started;
      // 499: the client closed the connection before it could be answered (as nginx logs it).
      const status = ctx.state.clientGone ? 499 : ctx.status;
      log.info({ reqId: id, method: ctx.method, path: ctx.path, status, ms: Math.round(ms * 100) / 100 }, 'request');
    }
  };
}

/**
 * The Koa application, its middleware outermost first: error envelope (error-envelope.ts)
 * → Host check → raw body (raw-body.ts) → the two APIs by path prefix → the page table →
 * 404. (Each request is named and logged before Koa sees it: request-log.ts.)
 */
import Koa, { type Middleware } from 'koa';
import type { Logger } from 'pino';
import { validationFailed } from '../domain/errors.ts';
import { errorEnvelope } from './error-envelope.ts';
import { ApiError } from './errors.ts';
import { rawBody } from './raw-body.ts';
import type { Responder } from './responder.ts';

export interface Routes {
  api: (ctx: Koa.Context) => Promise<void>;
  /** Absent when the sandbox API is off. */
  sandbox: ((ctx: Koa.Context) => Promise<void>) | undefined;
  pages: Middleware;
}

export function koaApp(routes: Routes, log: Logger, responder: Responder, docsUrl: string): Koa {
  const app = new Koa();
  app.use(errorEnvelope(docsUrl, log, responder));
  app.use(function requireHost(ctx, next) {
    // RFC 9112 3.2: an HTTP/1.1 request without Host is answered 400.
    if (ctx.req.headers.host === undefined && ctx.req.httpVersion === '1.1') {
      const required = 'HTTP/1.1 requests must carry a Host header';
      throw validationFailed([{ field: 'Host', constraints: { required } }]);
    }
    return next();
  });
  app.use(rawBody());
  // The APIs first, by prefix: their requests, the bulk of the traffic, skip the page table.
  app.use(function route(ctx, next) {
    if (ctx.path.startsWith('/api/')) return routes.api(ctx);
    if (ctx.path.startsWith('/sandbox/') && routes.sandbox) return routes.sandbox(ctx);
    return next();
  });
  app.use(routes.pages);
  app.use(function unknownPath() {
    throw new ApiError('not_found', 'No such resource.');
  });
  return app;
}

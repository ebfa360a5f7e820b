/**
 * Everything the server answers outside its two APIs, in one table routed by @koa/router:
 * health, the landing page, the docs and the hosted payment pages. A path in the table
 * asked with another method is 405 with Allow (HEAD goes wherever GET does); a path not in
 * it falls through to the 404 envelope.
 */
import { Router, type RouterMiddleware } from '@koa/router';
import type { Middleware } from 'koa';
import { hostedPages } from '../pay/page.ts';
import type { Services } from '../scope.ts';
import { methodNotAllowed } from './errors.ts';
import type { Responder } from './responder.ts';

/**
 * The docs' pages as the table routes them, made by docs/site.ts and handed in by the
 * composition root (app.ts): the HTTP layer routes them and knows nothing of how they are made.
 */
export interface DocsPages {
  landing: RouterMiddleware;
  errorCodes: RouterMiddleware;
  /** A file of the Redoc site, by the path after /docs/. */
  file: RouterMiddleware;
}

/** How long a health answer stands: a load balancer polling it costs at most one write a second. */
const HEALTH_CHECK_MS = 1000;

/** The whole of a 503's body: anyone may ask, and a driver's error names the database's address. */
const DEGRADED = '{"ok":false,"problem":"the database cannot be written"}';

/**
 * GET /healthz: 200 `{"ok":true}` while the database can be written (a one-row write is
 * tried), else 503 DEGRADED: a server that cannot take a create is not healthy, though it
 * still answers reads. Why it cannot goes to the log, once per change.
 */
function health(services: Services, responder: Responder): RouterMiddleware {
  let checked: { at: number; problem: Promise<string | undefined> } | undefined;
  let logged: string | undefined;
  return async (ctx) => {
    const now = performance.now();
    if (!checked || now - checked.at >= HEALTH_CHECK_MS)
      checked = { at: now, problem: services.store.writeProblem().catch((error: Error) => error.message) };
    const problem = await checked.problem;
    if (problem !== logged) {
      if (problem === undefined) services.log.info('health: the database can be written again');
      else services.log.warn({ problem }, 'health: the database cannot be written');
      logged = problem;
    }
    if (problem === undefined) return responder.json(ctx, 200, '{"ok":true}');
    responder.json(ctx, 503, DEGRADED);
  };
}

const redirect =
  (to: string): RouterMiddleware =>
  (ctx) =>
    ctx.redirect(to);

export function pages(services: Services, responder: Responder, docs: DocsPages): Middleware {
  const pay = hostedPages(services);
  const table: Array<[method: 'GET' | 'POST', path: string, handler: RouterMiddleware]> = [
    ['GET', '/healthz', health(services, responder)],
    ['GET', '/', docs.landing],
    ['GET', '/docs', redirect('/docs/')],
    ['GET', '/docs/errors', redirect('/docs/errors/')],
    ['GET', '/docs/sandbox', redirect('/docs/sandbox/')],
    ['GET', '/docs/changelog', redirect('/docs/changelog/')],
    ['GET', '/docs/client', redirect('/docs/client/')],
    ['GET', '/docs/errors/', docs.errorCodes],
    ['GET', '/docs/errors/index.html', docs.errorCodes],
    ['GET', '/docs/{*path}', docs.file],
    ['GET', '/pay/links/:id', pay.show('links')],
    ['POST', '/pay/links/:id/attempts', pay.attempt('links')],
    ['GET', '/pay/transactions/:id', pay.show('transactions')],
    ['POST', '/pay/transactions/:id/attempts', pay.attempt('transactions')],
    ['GET', '/pay/:id', pay.show('sessions')],
    ['POST', '/pay/:id/attempts', pay.attempt('sessions')],
  ];
  // strict and sensitive: a trailing slash or another case names another path.
  const router = new Router({ strict: true, sensitive: true });
  for (const [method, path, handler] of table) {
    if (method === 'GET') router.get(path, handler);
    else router.post(path, handler);
  }
  const routes = router.routes();
  const page: RouterMiddleware = (ctx, next) => {
    const match = router.match(ctx.path, ctx.method);
    if (match.path.length > 0 && !match.route) {
      const allowed = new Set(match.path.flatMap((layer) => layer.methods));
      throw methodNotAllowed(ctx.method, ctx.path, [...allowed].sort());
    }
    return routes(ctx, next);
  };
  // Koa's app.use takes any middleware; the router's types ask for its own context.
  return page as unknown as Middleware;
}

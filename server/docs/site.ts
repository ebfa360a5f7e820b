/**
 * The pages: the landing page at /, and the docs under /docs/. The error-code page is
 * rendered from the descriptions at start, so every error's doc_url resolves even without
 * the Redoc pages, which are served from the package's site/ (written by `npm run build`).
 * Paths resolve inside that folder only.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Middleware } from 'koa';
import { methodNotAllowed } from '../http/errors.ts';
import { collectErrorCodes, renderErrorPage } from './error-page.ts';
import { renderLandingPage } from './landing.ts';

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Docs not built</title></head>
<body><h1>API reference not built</h1><p>Run <code>npm run build</code> and reload. The
<a href="/docs/errors/">error-code page</a> is always available.</p></body></html>`;

export interface SiteOptions {
  dir: string;
  descriptions: object[];
  publicUrl: string;
  sandbox: boolean;
}

export function docsSite(options: SiteOptions): Middleware {
  const dir = path.resolve(options.dir);
  const errorPage = renderErrorPage(collectErrorCodes(options.descriptions as Array<Record<string, unknown>>));
  const landingPage = renderLandingPage(options);
  return async function docs(ctx, next) {
    if (ctx.path === '/') {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw methodNotAllowed(ctx.method, ctx.path, ['GET', 'HEAD']);
      ctx.set('cache-control', 'no-cache');
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = landingPage;
      return;
    }
    if (ctx.path === '/docs') return ctx.redirect('/docs/');
    if (!ctx.path.startsWith('/docs/')) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    let relative: string;
    try {
      relative = decodeURIComponent(ctx.path.slice('/docs/'.length));
    } catch {
      return next();
    }
    if (relative === 'errors' || relative === 'sandbox') return ctx.redirect(`/docs/${relative}/`);
    ctx.set('cache-control', 'no-cache');
    if (relative === 'errors/' || relative === 'errors/index.html') {
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = errorPage;
      return;
    }
    const file = path.resolve(dir, relative === '' || relative.endsWith('/') ? `${relative}index.html` : relative);
    if (file !== dir && !file.startsWith(dir + path.sep)) return next();
    const info = await stat(file).catch(() => undefined);
    if (!info?.isFile()) {
      if (relative === '' || relative === 'sandbox/') {
        ctx.type = 'text/html; charset=utf-8';
        ctx.body = NOT_BUILT;
        return;
      }
      return next();
    }
    ctx.type = contentTypes[path.extname(file)] ?? 'application/octet-stream';
    ctx.body = await readFile(file);
  };
}

/**
 * The pages: the landing page at /, and the docs under /docs/ (routed in
 * http/pages.ts). The error-code page is rendered from the descriptions at start, so every
 * error's doc_url resolves even without the Redoc pages, which are served from the
 * package's site/ (written by `npm run build`). Paths resolve inside that folder only.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from 'koa';
import type { DocsPages } from '../http/pages.ts';
import { PAGE_POLICY, redocPolicy } from '../http/security.ts';
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

const html = (ctx: Context, body: string | Buffer) => {
  ctx.set('cache-control', 'no-cache');
  ctx.set('content-security-policy', PAGE_POLICY);
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = body;
};

export function docsPages(options: SiteOptions): DocsPages {
  const dir = path.resolve(options.dir);
  const errorPage = renderErrorPage(collectErrorCodes(options.descriptions as Array<Record<string, unknown>>));
  const landingPage = renderLandingPage(options);
  // A Redoc page's policy names the hashes of its scripts: worked out once per version of the file.
  const policies = new Map<string, { version: string; policy: string }>();
  const policyOf = (file: string, version: string, body: Buffer) => {
    const known = policies.get(file);
    if (known?.version === version) return known.policy;
    const policy = redocPolicy(body.toString('utf8'));
    policies.set(file, { version, policy });
    return policy;
  };
  return {
    landing: (ctx) => html(ctx, landingPage),
    errorCodes: (ctx) => html(ctx, errorPage),
    async file(ctx, next) {
      let relative: string;
      try {
        relative = decodeURIComponent(ctx.path.slice('/docs/'.length));
      } catch {
        return next();
      }
      const file = path.resolve(dir, relative === '' || relative.endsWith('/') ? `${relative}index.html` : relative);
      // Only what is inside the site's folder.
      if (file !== dir && !file.startsWith(dir + path.sep)) return next();
      const info = await stat(file).catch(() => undefined);
      if (!info?.isFile()) {
        if (relative === '' || relative === 'sandbox/' || relative === 'client/') return html(ctx, NOT_BUILT);
        return next();
      }
      ctx.set('cache-control', 'no-cache');
      ctx.type = contentTypes[path.extname(file)] ?? 'application/octet-stream';
      const body = await readFile(file);
      if (path.extname(file) === '.html')
        ctx.set('content-security-policy', policyOf(file, `${info.mtimeMs}:${info.size}`, body));
      ctx.body = body;
    },
  };
}

/**
 * A static file server for the built docs (dist/docs) under /docs/, on loopback by
 * default. Paths are resolved inside the docs folder only; anything else is 404.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

export interface DocsServer {
  url: string;
  close(): Promise<void>;
}

/** Maps a request path under /docs/ to a file inside `dir`, or undefined when outside it. */
function fileFor(dir: string, pathname: string): string | undefined {
  if (!pathname.startsWith('/docs/')) return undefined;
  let relative: string;
  try {
    relative = decodeURIComponent(pathname.slice('/docs/'.length));
  } catch {
    return undefined;
  }
  const file = path.resolve(dir, relative.endsWith('/') || relative === '' ? `${relative}index.html` : relative);
  return file === dir || file.startsWith(dir + path.sep) ? file : undefined;
}

export async function startDocsServer(options: { dir: string; host?: string; port?: number }): Promise<DocsServer> {
  const dir = path.resolve(options.dir);
  const server = http.createServer(async (req, res) => {
    const { pathname } = new URL(req.url ?? '/', 'http://localhost');
    if (pathname === '/' || pathname === '/docs') {
      res.writeHead(302, { location: '/docs/' }).end();
      return;
    }
    const file = fileFor(dir, pathname);
    const info = file ? await stat(file).catch(() => undefined) : undefined;
    if (!file || !info) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found\n');
      return;
    }
    if (info.isDirectory()) {
      res.writeHead(301, { location: `${pathname}/` }).end();
      return;
    }
    res.writeHead(200, { 'content-type': contentTypes[path.extname(file)] ?? 'application/octet-stream', 'content-length': info.size });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address}:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

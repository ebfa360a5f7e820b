/**
 * From a Koa request to a Backend and back: the raw body decoded (decode.ts), the path
 * made routable, only the headers the operations read passed on, and the reply written by
 * the server's Responder.
 */
import type { Context as KoaContext } from 'koa';
import type { Scope, Services } from '../scope.ts';
import { decodeBody } from './decode.ts';
import { TOKEN_PATH } from './errors.ts';
import type { Backend } from './openapi/backend.ts';
import type { Responder } from './responder.ts';

const HEADERS_READ = ['authorization', 'content-type', 'idempotency-key'] as const;

function pickHeaders(headers: KoaContext['headers']): Record<string, string | string[]> {
  const picked: Record<string, string | string[]> = {};
  for (const name of HEADERS_READ) {
    const value = headers[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked;
}

/**
 * A stray `%` (or an escape that is not UTF-8) is taken literally, as a browser's URL
 * parser does: the request is routed and authenticated as any other, and an id holding it
 * is simply not found.
 */
function routablePath(path: string): string {
  try {
    decodeURIComponent(path);
    return path;
  } catch {
    return path.replace(/%/g, '%25');
  }
}

/** The query parameters some operation declares, as Koa parsed them. */
function declared(query: KoaContext['query'], names: ReadonlySet<string>): Record<string, string | string[]> {
  const picked: Record<string, string | string[]> = {};
  for (const name of names) if (query[name] !== undefined) picked[name] = query[name]!;
  return picked;
}

export function serveApi(backend: Backend<Scope>, services: Services, responder: Responder) {
  return async function api(ctx: KoaContext): Promise<void> {
    const raw = ctx.state.rawBody as Buffer;
    // A body problem is answered at the validation step (after routing and security, as
    // openapi-backend orders them): the body goes on as missing, and validation says why.
    const body = decodeBody(ctx.req, raw, ctx.state.bodyTooLarge as boolean, ctx.path !== TOKEN_PATH);
    const reply = await backend.handle(
      {
        // HEAD is GET without the body (RFC 9110 9.3.2); Node leaves the body out.
        method: ctx.method === 'HEAD' ? 'GET' : ctx.method,
        path: routablePath(ctx.path),
        headers: pickHeaders(ctx.headers),
        // Query parameters no operation declares are ignored, not refused: clients and
        // proxies add harmless ones (cache busters) and the document names no error for them.
        query: declared(ctx.query, backend.queryNames),
        body: body.value,
      },
      { services, koa: ctx, rawBodyLength: raw.length, bodyProblem: body.problem, findings: body.findings },
    );
    if (reply.replayed) ctx.set('idempotent-replayed', 'true');
    responder.json(ctx, reply.status, reply.json ?? JSON.stringify(reply.body), reply.headers);
  };
}

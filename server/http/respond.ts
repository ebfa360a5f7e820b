/**
 * Every JSON answer goes out through here: the body as text with its media type set
 * explicitly, so Koa neither looks the type up nor serialises the body again. Fixed
 * header values go straight to Node's response: Koa's `set` builds arrays to normalise
 * values that are already strings.
 */
import type { Context } from 'koa';

export const JSON_TYPE = 'application/json; charset=utf-8';

export function respondJson(ctx: Context, status: number, text: string): void {
  ctx.status = status;
  ctx.res.setHeader('content-type', JSON_TYPE);
  ctx.res.setHeader('cache-control', 'no-store');
  ctx.body = text;
}

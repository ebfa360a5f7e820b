/**
 * Every JSON answer goes out through `answerJson`, written to Node's response
 * directly: the body as text with its media type and length set, and Koa told to stand
 * aside (`ctx.respond = false`, its documented way out), since Koa's own response handling
 * (the body setter's type and length logic, then `respond`) is a noticeable share of a
 * small request.
 *
 * Each answer is written as soon as it is made. Holding a turn's answers back to write
 * them together saves the load generator's wake-ups on loopback, but keeps every request
 * of the turn alive across the young generation's collections, which then promote them to
 * the old one: the collector's cost outweighed the saving (bench/README.md).
 */
import type { Context } from 'koa';

export const JSON_TYPE = 'application/json; charset=utf-8';

export function answerJson(
  ctx: Context,
  status: number,
  text: string,
  headers?: Readonly<Record<string, string>>,
): void {
  const res = ctx.res;
  res.statusCode = status;
  if (headers) for (const name in headers) res.setHeader(name, headers[name]!);
  res.setHeader('content-type', JSON_TYPE);
  res.setHeader('cache-control', 'no-store');
  res.setHeader('content-length', Buffer.byteLength(text));
  ctx.respond = false;
  // Node leaves the body out of an answer to HEAD, and keeps its length.
  res.end(text);
}

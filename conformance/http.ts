/**
 * One HTTP exchange with the target, kept whole so a failure can show the request, the
 * response and a curl line that reproduces it.
 */
import type { Evidence } from './types.ts';

export interface SentRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export interface Exchange {
  request: SentRequest;
  status: number;
  headers: Record<string, string>;
  text: string;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  json: any;
  /** Id of the check that made it (for the response conformance checks). */
  checkId: string;
}

export interface RequestOptions {
  token?: string;
  /** Sent as `application/json`. */
  json?: unknown;
  /** Sent as `application/x-www-form-urlencoded`. */
  form?: Record<string, string>;
  /** Sent as is. */
  raw?: string;
  headers?: Record<string, string>;
  /** Give up after this long (default 20 s). */
  timeoutMs?: number;
}

export async function send(baseUrl: string, method: string, path: string, options: RequestOptions, checkId: string): Promise<Exchange> {
  const headers: Record<string, string> = {};
  let body: string | undefined;
  if (options.form !== undefined) {
    body = new URLSearchParams(options.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  } else if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] = 'application/json';
  } else if (options.raw !== undefined) {
    body = options.raw;
  }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  Object.assign(headers, options.headers ?? {});
  const url = baseUrl.replace(/\/+$/, '') + path;
  const response = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(options.timeoutMs ?? 20_000) });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const responseHeaders: Record<string, string> = {};
  response.headers.forEach((value, name) => (responseHeaders[name] = value));
  return { request: { method, url, headers, ...(body !== undefined ? { body } : {}) }, status: response.status, headers: responseHeaders, text, json, checkId };
}

/** Single-quotes a word for a POSIX shell. */
function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

export function curlOf(request: SentRequest): string {
  const parts = ['curl', '-sS', '-i', '-X', request.method, shellQuote(request.url)];
  for (const [name, value] of Object.entries(request.headers)) parts.push('-H', shellQuote(`${name}: ${value}`));
  if (request.body !== undefined) parts.push('--data-raw', shellQuote(request.body));
  return parts.join(' ');
}

export function requestText(request: SentRequest): string {
  const { pathname, search } = new URL(request.url);
  const lines = [`${request.method} ${pathname}${search} HTTP/1.1`, `host: ${new URL(request.url).host}`];
  for (const [name, value] of Object.entries(request.headers)) lines.push(`${name}: ${value}`);
  return `${lines.join('\n')}\n\n${request.body ?? ''}`.trimEnd();
}

export function responseText(exchange: Pick<Exchange, 'status' | 'headers' | 'text'>): string {
  const lines = [`HTTP/1.1 ${exchange.status}`];
  for (const [name, value] of Object.entries(exchange.headers)) lines.push(`${name}: ${value}`);
  const body = exchange.text.length > 4000 ? `${exchange.text.slice(0, 4000)}… (${exchange.text.length} bytes)` : exchange.text;
  return `${lines.join('\n')}\n\n${body}`.trimEnd();
}

export function evidenceOf(exchange: Exchange): Evidence {
  return { request: requestText(exchange.request), response: responseText(exchange), curl: curlOf(exchange.request) };
}

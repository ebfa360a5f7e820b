/**
 * Requests to the target, each kept whole as an Exchange, and what a report shows of one:
 * the request and the response as text, and a curl line that reproduces it, every secret
 * replaced by a placeholder.
 */
import http from 'node:http';
import https from 'node:https';
import type { Exchange, SentRequest } from './exchange.ts';
import type { Evidence } from './outcome.ts';
import { PLACEHOLDERS, type Redactor } from './redact.ts';

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
  /** Stops the request when the check it belongs to is abandoned (timed out). */
  signal?: AbortSignal;
  /**
   * Sends the header names in the letter case given (fetch writes them in lower case): for
   * the checks that vary it, header names being case-insensitive.
   */
  keepHeaderCase?: boolean;
}

/** A request through node:http, header names as given; the answer as fetch would give it. */
function requestKeepingCase(
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const request = (target.protocol === 'https:' ? https : http).request(
      target,
      { method: init.method, headers: init.headers, signal: init.signal },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('error', reject);
        answer.on('end', () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(answer.headers))
            if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
          // A status with no body (204, 304) takes none in a Response.
          const status = answer.statusCode ?? 502;
          resolve(
            new Response([101, 204, 205, 304].includes(status) ? null : Buffer.concat(chunks), { status, headers }),
          );
        });
      },
    );
    request.on('error', reject);
    request.end(init.body);
  });
}

export async function send(
  baseUrl: string,
  method: string,
  path: string,
  options: RequestOptions,
  checkId: string,
  redactor: Redactor,
): Promise<Exchange> {
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
  redactor.rememberFromRequest(headers, options.form);
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 20_000);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  let response: Response;
  const startedAt = Date.now();
  try {
    response = options.keepHeaderCase
      ? await requestKeepingCase(url, { method, headers, ...(body !== undefined ? { body } : {}), signal })
      : await fetch(url, { method, headers, body, signal });
  } catch (error) {
    // A server may close an idle keep-alive connection at any time (RFC 9112 9.3), and a
    // request sent on it as it closes is lost: sent again once, when repeating it changes
    // nothing (a read, or a token exchange). Anything else is the target's to answer for.
    if (!connectionLost(error) || !(method === 'GET' || method === 'HEAD' || path === '/api/token')) throw error;
    response = await fetch(url, { method, headers, body, signal });
  }
  const text = await response.text();
  const durationMs = Date.now() - startedAt;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  redactor.rememberFromJson(json);
  const responseHeaders: Record<string, string> = {};
  for (const [name, value] of response.headers) responseHeaders[name] = value;
  return {
    request: { method, url, headers, ...(body !== undefined ? { body } : {}) },
    status: response.status,
    headers: responseHeaders,
    text,
    json,
    checkId,
    startedAt,
    durationMs,
  };
}

/** Whether a fetch failed because its connection closed under it (not a timeout, an abort or a refusal). */
function connectionLost(error: unknown): boolean {
  const cause = error instanceof Error ? (error.cause as { code?: string } | undefined) : undefined;
  return ['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED'].includes(cause?.code ?? '');
}

const PLACEHOLDER = new RegExp(`\\$(${PLACEHOLDERS.join('|')})\\b`);
const NOT_PLACEHOLDER = new RegExp(`\\$(?!(${PLACEHOLDERS.join('|')})\\b)`, 'g');

/**
 * Quotes a word for a POSIX shell: single quotes, or double quotes when it holds a
 * placeholder ($TOKEN...), so that the reader's shell variable fills it in.
 */
export function shellQuote(word: string): string {
  if (!PLACEHOLDER.test(word)) return `'${word.replace(/'/g, `'\\''`)}'`;
  return `"${word.replace(/["\\`]/g, '\\$&').replace(NOT_PLACEHOLDER, '\\$')}"`;
}

/** A word for a POSIX shell as a person would type it: bare when no character of it is special, else quoted. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : shellQuote(word);
}

/** A curl line that reproduces the request, credentials replaced by shell variables: redacted once, then quoted. */
export function curlOf(request: SentRequest, redactor: Redactor): string {
  const parts = ['curl', '-sS', '-i', '-X', request.method, shellQuote(redactor.text(request.url))];
  for (const [name, value] of redactor.headers(request.headers)) parts.push('-H', shellQuote(`${name}: ${value}`));
  if (request.body !== undefined) parts.push('--data-raw', shellQuote(redactor.text(request.body)));
  return parts.join(' ');
}

export function requestText(request: SentRequest, redactor: Redactor): string {
  const { pathname, search, host } = new URL(request.url);
  const lines = [`${request.method} ${redactor.text(`${pathname}${search}`)} HTTP/1.1`, `host: ${host}`];
  for (const [name, value] of redactor.headers(request.headers)) lines.push(`${name}: ${value}`);
  return `${lines.join('\n')}\n\n${redactor.text(request.body ?? '')}`.trimEnd();
}

export function responseText(exchange: Pick<Exchange, 'status' | 'headers' | 'text'>, redactor: Redactor): string {
  const lines = [`HTTP/1.1 ${exchange.status}`];
  for (const [name, value] of redactor.headers(exchange.headers)) lines.push(`${name}: ${value}`);
  const text = redactor.text(exchange.text);
  const body = text.length > 4000 ? `${text.slice(0, 4000)}… (${text.length} bytes)` : text;
  return `${lines.join('\n')}\n\n${body}`.trimEnd();
}

export function evidenceOf(exchange: Exchange, redactor: Redactor): Evidence {
  return {
    request: requestText(exchange.request, redactor),
    response: responseText(exchange, redactor),
    curl: curlOf(exchange.request, redactor),
  };
}

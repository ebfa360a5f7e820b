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
  /** Stops the request when the check it belongs to is abandoned (timed out). */
  signal?: AbortSignal;
}

// ---- secrets never reach evidence: placeholders instead of credentials ----

type Placeholder = '$SANDBOX_TOKEN' | '$TOKEN' | '$CLIENT_SECRET' | '$WEBHOOK_SECRET' | '$ACCESS_TOKEN';
/** Every secret value the suite has sent or received, with the placeholder shown instead. */
const knownSecrets = new Map<string, Placeholder>();
let sandboxToken: string | undefined;

/** Remembers a secret value so it is replaced wherever it appears in evidence or reasons. */
export function rememberSecret(value: unknown, placeholder: Placeholder): void {
  if (typeof value === 'string' && value.length >= 6 && !knownSecrets.has(value)) knownSecrets.set(value, placeholder);
}

export function rememberSandboxToken(token: string | undefined): void {
  sandboxToken = token;
  rememberSecret(token, '$SANDBOX_TOKEN');
}

/** JSON keys whose values are secrets, and what is shown instead. */
const SECRET_KEYS: Record<string, Placeholder> = {
  clientSecret: '$CLIENT_SECRET',
  webhookSigningSecret: '$WEBHOOK_SECRET',
  accessToken: '$ACCESS_TOKEN',
};

function rememberFromJson(value: unknown, depth = 0): void {
  if (!value || typeof value !== 'object' || depth > 6) return;
  for (const [key, inner] of Object.entries(value)) {
    if (key in SECRET_KEYS) rememberSecret(inner, SECRET_KEYS[key]!);
    else rememberFromJson(inner, depth + 1);
  }
}

/** An Authorization value with its credentials replaced by a placeholder. */
export function redactAuthorization(value: string): string {
  const match = /^(\S+)(\s+)([\s\S]*)$/.exec(value);
  if (!match) return '$CREDENTIALS';
  const [, scheme, space, rest] = match as unknown as [string, string, string, string];
  if (/^bearer$/i.test(scheme)) {
    const inner = /^(bearer\s+)([\s\S]*)$/i.exec(rest);
    const token = inner ? inner[2]! : rest;
    const placeholder = sandboxToken !== undefined && token === sandboxToken ? '$SANDBOX_TOKEN' : '$TOKEN';
    return `${scheme}${space}${inner ? inner[1] : ''}${placeholder}`;
  }
  return `${scheme}${space}$CREDENTIALS`;
}

/** Replaces every known secret value, and the values of secret JSON or form fields, in a text. */
export function redact(text: string): string {
  let out = text;
  for (const [key, placeholder] of Object.entries(SECRET_KEYS)) {
    out = out.replace(new RegExp(`("${key}"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`, 'g'), `$1"${placeholder}"`);
    out = out.replace(new RegExp(`((?:^|[&?\\s])${key}=)[^&\\s]*`, 'g'), `$1${placeholder}`);
  }
  // Longest first, so a secret containing another is replaced whole.
  for (const [value, placeholder] of [...knownSecrets].sort((a, b) => b[0].length - a[0].length))
    out = out.split(value).join(placeholder);
  return out;
}

function redactedHeaders(headers: Record<string, string>): [string, string][] {
  return Object.entries(headers).map(([name, value]) => [
    name,
    name.toLowerCase() === 'authorization' ? redactAuthorization(value) : redact(value),
  ]);
}

export async function send(
  baseUrl: string,
  method: string,
  path: string,
  options: RequestOptions,
  checkId: string,
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
  if (options.form?.clientSecret !== undefined) rememberSecret(options.form.clientSecret, '$CLIENT_SECRET');
  const bearer = /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? '')?.[1];
  if (bearer && bearer !== sandboxToken) rememberSecret(bearer, '$ACCESS_TOKEN');
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 20_000);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const response = await fetch(url, { method, headers, body, signal });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  rememberFromJson(json);
  const responseHeaders: Record<string, string> = {};
  for (const [name, value] of response.headers) responseHeaders[name] = value;
  return {
    request: { method, url, headers, ...(body !== undefined ? { body } : {}) },
    status: response.status,
    headers: responseHeaders,
    text,
    json,
    checkId,
  };
}

const PLACEHOLDER = /\$(SANDBOX_TOKEN|TOKEN|CLIENT_SECRET|WEBHOOK_SECRET|ACCESS_TOKEN|CREDENTIALS)\b/;

/**
 * Quotes a word for a POSIX shell: single quotes, or double quotes when it holds a
 * placeholder ($TOKEN...), so the reader's shell variable fills it in.
 */
function shellQuote(word: string): string {
  if (!PLACEHOLDER.test(word)) return `'${word.replace(/'/g, `'\\''`)}'`;
  const escaped = word
    .replace(/["\\`]/g, '\\$&')
    .replace(/\$(?!(SANDBOX_TOKEN|TOKEN|CLIENT_SECRET|WEBHOOK_SECRET|ACCESS_TOKEN|CREDENTIALS)\b)/g, '\\$');
  return `"${escaped}"`;
}

/** A curl line that reproduces the request, credentials replaced by shell variables. */
export function curlOf(request: SentRequest): string {
  const parts = ['curl', '-sS', '-i', '-X', request.method, shellQuote(redact(request.url))];
  for (const [name, value] of redactedHeaders(request.headers)) parts.push('-H', shellQuote(`${name}: ${value}`));
  if (request.body !== undefined) parts.push('--data-raw', shellQuote(redact(request.body)));
  return parts.join(' ');
}

export function requestText(request: SentRequest): string {
  const { pathname, search } = new URL(request.url);
  const lines = [`${request.method} ${redact(`${pathname}${search}`)} HTTP/1.1`, `host: ${new URL(request.url).host}`];
  for (const [name, value] of redactedHeaders(request.headers)) lines.push(`${name}: ${value}`);
  return `${lines.join('\n')}\n\n${redact(request.body ?? '')}`.trimEnd();
}

export function responseText(exchange: Pick<Exchange, 'status' | 'headers' | 'text'>): string {
  const lines = [`HTTP/1.1 ${exchange.status}`];
  for (const [name, value] of redactedHeaders(exchange.headers)) lines.push(`${name}: ${value}`);
  const text = redact(exchange.text);
  const body = text.length > 4000 ? `${text.slice(0, 4000)}… (${text.length} bytes)` : text;
  return `${lines.join('\n')}\n\n${body}`.trimEnd();
}

export function evidenceOf(exchange: Exchange): Evidence {
  return { request: requestText(exchange.request), response: responseText(exchange), curl: curlOf(exchange.request) };
}

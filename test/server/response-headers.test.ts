/**
 * The protections every answer carries for browsers (server/http/security.ts): nosniff,
 * no Referer, no framing, whichever way the answer is written (the Responder's JSON,
 * Koa's pages and redirects, the error envelope, the refusals written to the socket
 * before Koa sees the request); and each page's Content-Security-Policy, the Redoc pages'
 * naming the hashes of exactly the scripts they carry. That Redoc works under it is
 * checked in Chromium (test/e2e/docs.browser.test.ts).
 */
import { createHash } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionRequest, startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
let sessionId: string;

beforeAll(async () => {
  t = await startTestServer();
  const org = await t.organisation();
  const created = await t.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() });
  sessionId = created.body.id;
});
afterAll(() => t.close());

/** The status and header fields (lower-case names) of a raw exchange: `request` as written. */
function raw(request: string): Promise<{ status: number; headers: Map<string, string> }> {
  const { port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head!.split('\r\n');
      const headers = new Map(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      resolve({ status: Number(statusLine!.split(' ')[1]), headers });
    });
    socket.end(request);
  });
}

const PROTECTIONS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

describe('every answer', () => {
  const fetched: Array<[string, () => Promise<Response>]> = [
    ['health', () => fetch(`${t.url}/healthz`)],
    ['an API read (401)', () => fetch(`${t.url}/api/checkout-sessions/${sessionId}`)],
    ['the token endpoint', () => fetch(`${t.url}/api/token`, { method: 'POST', body: 'clientId=x&clientSecret=y' })],
    ['a sandbox answer', () => fetch(`${t.url}/sandbox/faults`, { headers: { authorization: 'Bearer x' } })],
    ['the landing page', () => fetch(`${t.url}/`)],
    ['the landing page, HEAD', () => fetch(`${t.url}/`, { method: 'HEAD' })],
    ['the API reference', () => fetch(`${t.url}/docs/`)],
    ['a redirect', () => fetch(`${t.url}/docs`, { redirect: 'manual' })],
    ['the error codes', () => fetch(`${t.url}/docs/errors/`)],
    ['a hosted page', () => fetch(`${t.url}/pay/${sessionId}`)],
    ['an unknown hosted page', () => fetch(`${t.url}/pay/cs_nothing`)],
    ['an unknown path', () => fetch(`${t.url}/nothing`)],
    ['a method not allowed', () => fetch(`${t.url}/`, { method: 'DELETE' })],
  ];
  it.each(fetched)('%s: nosniff, no Referer, no framing', async (_name, get) => {
    const res = await get();
    for (const [name, value] of Object.entries(PROTECTIONS)) expect(res.headers.get(name), name).toBe(value);
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it.each([
    ['not HTTP (400)', 'GARBAGE\r\n\r\n', 400],
    ['headers over 16 KiB (431)', `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`, 431],
  ])('%s, written before Koa sees the request, carries them too', async (_name, request, status) => {
    const answer = await raw(request);
    expect(answer.status).toBe(status);
    for (const [name, value] of Object.entries(PROTECTIONS)) expect(answer.headers.get(name), name).toBe(value);
    expect(answer.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });
});

describe('Content-Security-Policy of the pages', () => {
  it('the landing page: no script at all, inline styles, nothing loaded from elsewhere', async () => {
    const policy = (await fetch(`${t.url}/`)).headers.get('content-security-policy')!;
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("style-src 'unsafe-inline'");
    expect(policy).not.toContain('script-src');
    expect(policy).toContain("base-uri 'none'");
  });

  it("the Redoc pages: exactly the hashes of their inline scripts, never 'unsafe-inline'", async () => {
    for (const pathname of ['/docs/', '/docs/sandbox/']) {
      const res = await fetch(`${t.url}${pathname}`);
      const html = await res.text();
      const policy = res.headers.get('content-security-policy')!;
      const scripts = [...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script/gi)].map((m) => m[1]!);
      expect(scripts.length, pathname).toBeGreaterThan(0);
      const hashes = scripts.map((s) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`);
      const scriptSrc = policy.match(/script-src ([^;]*)/)![1]!.split(' ');
      expect(scriptSrc.filter((s) => s.startsWith("'sha256-")).sort(), pathname).toEqual(hashes.sort());
      expect(scriptSrc, pathname).not.toContain("'unsafe-inline'");
      expect(policy, pathname).toContain("default-src 'none'");
      expect(policy, pathname).toContain("frame-ancestors 'none'");
    }
  });
});

/**
 * Answers outside the operations' happy paths: unknown routes, wrong methods, unexpected
 * exceptions, the envelope's doc_url, and what never appears in a body or the log.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionRequest, startTestServer, type Org, type TestServer } from '../support/server.ts';

let t: TestServer;
let org: Org;
const logLines: string[] = [];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  t = await startTestServer({ logger: pino({ level: 'info' }, sink), docsUrl: 'https://docs.example.com/payments' });
  org = await t.organisation();
});
afterAll(() => t.close());

const isEnvelope = (body: any, code: string) =>
  expect(body).toEqual({ error: { code, message: expect.any(String), param: null, doc_url: `https://docs.example.com/payments/errors/#${code}` } });

describe('errors outside the operations', () => {
  it.each(['/api/nothing', '/api/checkout-sessions/cs_1/refunds', '/nothing', '/sandbox/nothing'])('answers 404 not_found in the envelope for %s', async (path) => {
    const answer = await t.request('GET', path, { token: org.testToken, undocumented: true });
    expect(answer.status).toBe(404);
    isEnvelope(answer.body, 'not_found');
  });

  it.each([['DELETE', '/api/checkout-sessions/cs_1'], ['PUT', '/api/checkout-sessions'], ['GET', '/api/token'], ['PATCH', '/api/payment-links/x']])(
    'answers %s %s with 405 method_not_allowed in the envelope',
    async (method, path) => {
      const answer = await t.request(method, path, { token: org.testToken, undocumented: true });
      expect(answer.status).toBe(405);
      isEnvelope(answer.body, 'method_not_allowed');
    },
  );

  it('uses {docs_url}/errors/#<code> for doc_url', async () => {
    const answer = await t.request('GET', '/api/checkout-sessions/cs_x', { token: org.testToken });
    expect(answer.body.error.doc_url).toBe('https://docs.example.com/payments/errors/#not_found');
  });

  it('answers an unexpected exception with 500 internal_error, and no stack trace or SQL in the body', async () => {
    const store = t.server.store;
    const original = store.getPaymentBySessionId.bind(store);
    store.getPaymentBySessionId = async () => {
      throw new Error('SQLITE_CORRUPT: database disk image is malformed at select * from payments');
    };
    try {
      const answer = await t.request('GET', '/api/checkout-sessions/cs_boom', { token: org.testToken });
      expect(answer.status).toBe(500);
      isEnvelope(answer.body, 'internal_error');
      expect(answer.text).not.toMatch(/SQLITE|select|at .*\.ts|Error:/);
    } finally {
      store.getPaymentBySessionId = original;
    }
    expect(logLines.join('')).toContain('SQLITE_CORRUPT');
  });

  it('echoes a request id, or makes one', async () => {
    const given = await t.request('GET', '/healthz', { headers: { 'x-request-id': 'trace-123' }, undocumented: true });
    expect(given.headers.get('x-request-id')).toBe('trace-123');
    const made = await t.request('GET', '/healthz', { headers: { 'x-request-id': 'bad id with spaces' }, undocumented: true });
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('logs one structured line per request with its id, and never a secret or token', async () => {
    const secretish = [org.apiKeys.test.clientSecret, org.testToken, org.webhookSigningSecret];
    await t.request('POST', '/api/token', {
      rawBody: new URLSearchParams(org.apiKeys.test).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-request-id': 'log-check' },
    });
    await t.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() });
    const lines = logLines.map((l) => JSON.parse(l));
    expect(lines.find((l) => l.reqId === 'log-check')).toMatchObject({ method: 'POST', path: '/api/token', status: 200, msg: 'request' });
    const all = logLines.join('');
    for (const secret of secretish) expect(all).not.toContain(secret);
  });

  it('serves every error code\'s section on the docs page', async () => {
    const res = await fetch(`${t.url}/docs/errors/`);
    const html = await res.text();
    for (const code of ['validation_failed', 'not_found', 'method_not_allowed', 'internal_error', 'invalid_state', 'token_expired']) {
      expect(html).toContain(`id="${code}"`);
    }
  });
});

/**
 * Answers outside the operations' happy paths: unknown routes, wrong methods, unexpected
 * exceptions, the envelope's doc_url, and what never appears in a body or the log.
 *
 * @tags postgres
 */
import net from 'node:net';
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  requestWithHeaderLines,
  sessionRequest,
  startTestServer,
  type Org,
  type TestServer,
} from '../support/server.ts';

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
  expect(body).toEqual({
    error: {
      code,
      message: expect.any(String),
      param: null,
      doc_url: `https://docs.example.com/payments/errors/#${code}`,
    },
  });

/** Runs `during` while the store's `method` throws `message`, as a failing database would. */
async function whileStoreFails(
  method: 'getPaymentBySessionId' | 'getApiKey',
  message: string,
  during: () => Promise<void>,
): Promise<void> {
  const store = t.server.store;
  const original = store[method];
  store[method] = async () => {
    throw new Error(message);
  };
  try {
    await during();
  } finally {
    store[method] = original as never;
  }
}

/** Writes `bytes` on a new connection and reads until the server closes it. */
function raw(bytes: string, url = t.url): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.setTimeout(5_000, () => socket.destroy(new Error('the server kept the connection open')));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const headers = Object.fromEntries(
        lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(end + 4) });
    });
    socket.write(bytes);
  });
}

describe('errors outside the operations', () => {
  it.each(['/api/nothing', '/api/checkout-sessions/cs_1/refunds', '/nothing', '/sandbox/nothing'])(
    'answers 404 not_found in the envelope for %s',
    async (path) => {
      const answer = await t.request('GET', path, { token: org.testToken, undocumented: true });
      expect(answer.status).toBe(404);
      isEnvelope(answer.body, 'not_found');
    },
  );

  it.each([
    ['DELETE', '/api/checkout-sessions/cs_1'],
    ['PUT', '/api/checkout-sessions'],
    ['GET', '/api/token'],
    ['PATCH', '/api/payment-links/x'],
  ])('answers %s %s with 405 method_not_allowed in the envelope', async (method, path) => {
    const answer = await t.request(method, path, { token: org.testToken, undocumented: true });
    expect(answer.status).toBe(405);
    isEnvelope(answer.body, 'method_not_allowed');
  });

  it('names the methods the path takes in Allow on a 405 (RFC 9110 15.5.6)', async () => {
    const read = await t.request('DELETE', '/api/checkout-sessions/cs_1', { token: org.testToken, undocumented: true });
    expect(read.headers.get('allow')).toBe('GET, HEAD');
    const create = await t.request('PUT', '/api/checkout-sessions', { token: org.testToken, undocumented: true });
    expect(create.headers.get('allow')).toBe('POST');
    const health = await t.request('DELETE', '/healthz', { undocumented: true });
    expect(health.status).toBe(405);
    isEnvelope(health.body, 'method_not_allowed');
    expect(health.headers.get('allow')).toBe('GET, HEAD');
  });

  it("answers HEAD wherever GET is, with GET's status and headers and no body", async () => {
    const { body: session } = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      body: sessionRequest(),
    });
    const path = `/api/checkout-sessions/${session.id}`;
    const get = await t.request('GET', path, { token: org.testToken });
    const head = await fetch(`${t.url}${path}`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${org.testToken}` },
    });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(get.text)));
    expect(await head.text()).toBe('');
    const unauthorised = await fetch(`${t.url}${path}`, { method: 'HEAD' });
    expect(unauthorised.status).toBe(401);
    expect((await fetch(`${t.url}/healthz`, { method: 'HEAD' })).status).toBe(200);
  });

  it('sends a Bearer challenge with every 401 (RFC 9110 11.6.1, RFC 6750 3)', async () => {
    const none = await t.request('GET', '/api/checkout-sessions/cs_1');
    expect(none.body.error.code).toBe('unauthorized');
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="api"');
    const bad = await t.request('GET', '/api/checkout-sessions/cs_1', { token: `${org.testToken.slice(0, -4)}AAAA` });
    expect(bad.body.error.code).toBe('invalid_token');
    expect(bad.headers.get('www-authenticate')).toBe('Bearer realm="api", error="invalid_token"');
    const sandbox = await t.request('GET', '/sandbox/webhook-deliveries?transactionId=x', {
      token: 'not-the-sandbox-token',
    });
    expect(sandbox.status).toBe(401);
    expect(sandbox.headers.get('www-authenticate')).toBe('Bearer realm="sandbox"');
  });

  describe("requests Node's HTTP parser refuses get the envelope, and the connection closes", () => {
    it.each([
      [
        'headers over 16 KiB',
        `GET /api/checkout-sessions/cs_1 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        431,
        'maxSize',
      ],
      [
        'a control character in a header value',
        'GET /api/checkout-sessions/cs_1 HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n',
        400,
        'http',
      ],
      ['an unknown method', 'FOO /api/checkout-sessions HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'http'],
      ['bytes that are not HTTP', 'hello\r\n\r\n', 400, 'http'],
    ])('%s', async (_name, bytes, status, constraint) => {
      const answer = await raw(bytes);
      expect(answer.status).toBe(status);
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(answer.headers.connection).toBe('close');
      expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
      const body = JSON.parse(answer.body);
      expect(body.error).toMatchObject({
        code: 'validation_failed',
        param: null,
        doc_url: 'https://docs.example.com/payments/errors/#validation_failed',
      });
      expect(Object.keys(body.error.details[0].constraints)).toEqual([constraint]);
    });
  });

  it('answers an HTTP/1.1 request without Host with 400 in the envelope (RFC 9112 3.2)', async () => {
    const { port } = new URL(t.url);
    const text = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (chunk) => {
        chunks.push(chunk);
        if (Buffer.concat(chunks).toString().includes('"details"')) socket.end();
      });
      socket.on('error', reject).on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
      socket.write('GET /healthz HTTP/1.1\r\n\r\n');
    });
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
    expect(body.error).toMatchObject({ code: 'validation_failed', param: 'Host' });
  });

  it('uses {docs_url}/errors/#<code> for doc_url', async () => {
    const answer = await t.request('GET', '/api/checkout-sessions/cs_x', { token: org.testToken });
    expect(answer.body.error.doc_url).toBe('https://docs.example.com/payments/errors/#not_found');
  });

  it('answers an unexpected exception with 500 internal_error, and no stack trace or SQL in the body', async () => {
    await whileStoreFails(
      'getPaymentBySessionId',
      'SQLITE_CORRUPT: database disk image is malformed at select * from payments',
      async () => {
        const answer = await t.request('GET', '/api/checkout-sessions/cs_boom', { token: org.testToken });
        expect(answer.status).toBe(500);
        isEnvelope(answer.body, 'internal_error');
        expect(answer.text).not.toMatch(/SQLITE|select|at .*\.ts|Error:/);
      },
    );
    expect(logLines.join('')).toContain('SQLITE_CORRUPT');
  });

  it('echoes a request id, or makes one', async () => {
    const given = await t.request('GET', '/healthz', { headers: { 'x-request-id': 'trace-123' }, undocumented: true });
    expect(given.headers.get('x-request-id')).toBe('trace-123');
    const made = await t.request('GET', '/healthz', {
      headers: { 'x-request-id': 'bad id with spaces' },
      undocumented: true,
    });
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
    expect(lines.find((l) => l.reqId === 'log-check')).toMatchObject({
      method: 'POST',
      path: '/api/token',
      status: 200,
      msg: 'request',
    });
    const all = logLines.join('');
    for (const secret of secretish) expect(all).not.toContain(secret);
  });

  it("serves every error code's section on the docs page", async () => {
    const res = await fetch(`${t.url}/docs/errors/`);
    const html = await res.text();
    for (const code of [
      'validation_failed',
      'not_found',
      'method_not_allowed',
      'internal_error',
      'invalid_state',
      'token_expired',
    ]) {
      expect(html).toContain(`id="${code}"`);
    }
  });
});

/** The document's token-endpoint failures (POST /api/token): plain strings, not the envelope. */
const MALFORMED_TOKEN_REQUEST = 'Invalid credentials - missing or malformed clientId/clientSecret';

describe('POST /api/token answers every failure as { error: <string> }', () => {
  const form = () => new URLSearchParams(org.apiKeys.test).toString();

  it('a request without Host (400)', async () => {
    const body = form();
    const answer = await raw(
      `POST /api/token HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({ error: MALFORMED_TOKEN_REQUEST });
  });

  it("a request Node's parser refuses (400)", async () => {
    const answer = await raw('POST /api/token HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n');
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({ error: MALFORMED_TOKEN_REQUEST });
  });

  it('an unexpected exception: 500 with the string internal_error, and the cause only in the log', async () => {
    await whileStoreFails('getApiKey', 'SQLITE_BUSY: token lookup failed', async () => {
      const answer = await t.request('POST', '/api/token', { form: org.apiKeys.test });
      expect(answer.status).toBe(500);
      expect(answer.body).toEqual({ error: 'internal_error' });
    });
    expect(logLines.join('')).toContain('SQLITE_BUSY: token lookup failed');
  });

  it('a repeated Content-Type is malformed; a repeated Idempotency-Key, which it does not read, changes nothing', async () => {
    const formType = ['content-type', 'application/x-www-form-urlencoded'];
    const twoTypes = await requestWithHeaderLines(
      t.url,
      'POST',
      '/api/token',
      [...formType, 'content-type', 'application/json'],
      form(),
    );
    expect(twoTypes.status).toBe(400);
    expect(JSON.parse(twoTypes.text)).toEqual({ error: MALFORMED_TOKEN_REQUEST });
    const twoKeys = await requestWithHeaderLines(
      t.url,
      'POST',
      '/api/token',
      [...formType, 'idempotency-key', 'a', 'idempotency-key', 'b'],
      form(),
    );
    expect(twoKeys.status).toBe(200);
    expect(JSON.parse(twoKeys.text).tokenType).toBe('Bearer');
  });
});

describe('header fields sent twice', () => {
  it('a read ignores a repeated Idempotency-Key, which only the creates read', async () => {
    const { body: session } = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      body: sessionRequest(),
    });
    const answer = await requestWithHeaderLines(t.url, 'GET', `/api/checkout-sessions/${session.id}`, [
      'authorization',
      `Bearer ${org.testToken}`,
      'idempotency-key',
      'a',
      'idempotency-key',
      'b',
    ]);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text).id).toBe(session.id);
  });

  it.each([
    ['the valid token first', true],
    ['the valid token second', false],
  ])('two Authorization lines are unauthorized, %s (which one is meant cannot be known)', async (_name, validFirst) => {
    const lines = validFirst
      ? [`Bearer ${org.testToken}`, 'Bearer nonsense']
      : ['Bearer nonsense', `Bearer ${org.testToken}`];
    const answer = await requestWithHeaderLines(
      t.url,
      'GET',
      '/api/checkout-sessions/cs_1',
      lines.flatMap((line) => ['authorization', line]),
    );
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.text).error.code).toBe('unauthorized');
    const sandbox = await requestWithHeaderLines(t.url, 'GET', '/sandbox/webhook-deliveries?transactionId=x', [
      'authorization',
      'Bearer sandbox-test-token',
      'authorization',
      'Bearer x',
    ]);
    expect(sandbox.status).toBe(401);
  });

  it('a create with two Content-Type lines is validation_failed, and nothing is created', async () => {
    const own = await t.organisation();
    const answer = await requestWithHeaderLines(
      t.url,
      'POST',
      '/api/checkout-sessions',
      ['authorization', `Bearer ${own.testToken}`, 'content-type', 'application/json', 'content-type', 'text/plain'],
      JSON.stringify(sessionRequest()),
    );
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text).error).toMatchObject({ code: 'validation_failed', param: 'Content-Type' });
    expect(await t.server.store.countPayments(own.id)).toBe(0);
  });
});

describe('request bodies in a coding the server does not read', () => {
  it('Content-Encoding: gzip is validation_failed naming Content-Encoding, not a misleading UTF-8 complaint', async () => {
    const res = await fetch(`${t.url}/api/checkout-sessions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${org.testToken}`,
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      body: gzipSync(JSON.stringify(sessionRequest())),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: 'validation_failed', param: 'Content-Encoding' });
  });

  it('Content-Encoding: identity is read as sent', async () => {
    const answer = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      body: sessionRequest(),
      headers: { 'content-encoding': 'identity' },
    });
    expect(answer.status).toBe(200);
  });

  it('a transfer coding other than chunked is validation_failed naming Transfer-Encoding', async () => {
    const body = JSON.stringify(sessionRequest());
    const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const answer = await raw(
      `POST /api/checkout-sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.testToken}\r\nContent-Type: application/json\r\n` +
        `Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n${chunked}`,
    );
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body).error).toMatchObject({ code: 'validation_failed', param: 'Transfer-Encoding' });
  });
});

describe('other edges of HTTP', () => {
  it('takes a stray % in a path literally: authentication first, then not found', async () => {
    expect((await t.request('GET', '/api/checkout-sessions/%ZZ')).body.error.code).toBe('unauthorized');
    expect((await t.request('GET', '/api/checkout-sessions/%ZZ', { token: org.testToken })).status).toBe(404);
    expect((await t.request('GET', '/api/checkout-sessions/%C3%28', { token: org.testToken })).status).toBe(404);
    expect(
      (await t.request('DELETE', '/api/checkout-sessions/%ZZ', { token: org.testToken, undocumented: true })).status,
    ).toBe(405);
    const withCookie = await t.request('GET', '/api/checkout-sessions/%ZZ', {
      token: org.testToken,
      headers: { cookie: 'a=b' },
    });
    expect(withCookie.status).toBe(404);
  });

  it('answers a request whose Expect is not 100-continue as any other (RFC 9110 10.1.1), not with a bare 417', async () => {
    const answer = await raw('GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ ok: true });
  });

  it('a request not received in full in time gets 408 in the envelope, and the connection closes', async () => {
    const slow = await startTestServer({ requestTimeoutMs: 300, docsUrl: 'https://docs.example.com/payments' });
    try {
      const answer = await raw('GET /api/checkout-sessions/cs_1 HTTP/1.1\r\nHost: x\r\n', slow.url);
      expect(answer.status).toBe(408);
      expect(answer.headers.connection).toBe('close');
      expect(JSON.parse(answer.body).error).toMatchObject({
        code: 'validation_failed',
        doc_url: 'https://docs.example.com/payments/errors/#validation_failed',
      });
    } finally {
      await slow.close();
    }
  });

  it('a request whose body never completes gets 408 in the envelope once the request time is up, and the connection closes', async () => {
    const slow = await startTestServer({ requestTimeoutMs: 300 });
    try {
      const started = Date.now();
      const answer = await raw(
        `POST /api/checkout-sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.testToken}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"type":',
        slow.url,
      );
      expect(answer.status).toBe(408);
      expect(answer.headers.connection).toBe('close');
      expect(JSON.parse(answer.body).error.code).toBe('validation_failed');
      // The limit is checked every second: held seconds, never Node's five minutes.
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await slow.close();
    }
  });

  it('a client gone before its body ended gets no error or stack in the log: its request is logged with status 499', async () => {
    const { port } = new URL(t.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST /api/checkout-sessions HTTP/1.1\r\nHost: x\r\nX-Request-Id: gone-early\r\nAuthorization: Bearer ${org.testToken}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"type":',
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
    const line = await new Promise<any>((resolve, reject) => {
      const started = Date.now();
      const poll = () => {
        const found = logLines.map((l) => JSON.parse(l)).find((l) => l.reqId === 'gone-early' && l.msg === 'request');
        if (found) return resolve(found);
        if (Date.now() - started > 5_000) return reject(new Error('no request line for gone-early'));
        setTimeout(poll, 20);
      };
      poll();
    });
    expect(line).toMatchObject({ method: 'POST', path: '/api/checkout-sessions', status: 499 });
    const others = logLines.map((l) => JSON.parse(l)).filter((l) => l.reqId === 'gone-early' && l.msg !== 'request');
    expect(others).toEqual([]);
    expect(logLines.join('')).not.toContain('abortIncoming');
  });
});

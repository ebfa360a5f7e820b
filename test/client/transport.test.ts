/**
 * The client's retry, single-flight and error-mapping rules, against a recording fetch
 * that answers from a script: the cases a real server cannot be made to produce on
 * demand (a run of 500s, a dropped connection, a slow token endpoint).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ConnectionError,
  DEFAULT_RETRY_POLICY,
  IDEMPOTENT_CREATE_PATHS,
  PaymentError,
  RequestAbortedError,
  RequestTimeoutError,
  ServerError,
  USER_AGENT,
  AuthenticationError,
  backoffDelay,
  createPaymentClient,
  errorFromResponse,
  isPaid,
  parseDuration,
  shouldRetry,
  type PaymentClientOptions,
} from '../../client/index.ts';
import { failure } from '../support/failure.ts';
import { loadDescription } from '../support/description.ts';

type Reply = { status: number; body?: unknown } | { networkError: string } | { hang: true };

interface Recorded {
  method: string;
  path: string;
  headers: Headers;
}

const tokenReply = (token = 'tok-1'): Reply => ({
  status: 200,
  body: { accessToken: token, tokenType: 'Bearer', expiresIn: '5m' },
});
const envelope = (status: number, code: string): Reply => ({
  status,
  body: { error: { code, message: code, param: null, doc_url: `https://docs.example/errors/#${code}` } },
});
const session = (status = 'created') => ({
  id: 'cs_1',
  status,
  code: 'C1',
  amount: { total: 1, currency: 'NZD' },
  checkoutMethod: 'card',
  reference: 'R',
  particulars: '',
  transactionType: 'open_banking',
  testMode: true,
  foreignTransactionId: null,
  expiresAt: '2026-01-02T00:00:00Z',
  createdAt: '2026-01-01T00:00:00Z',
  updatedAt: '2026-01-01T00:00:00Z',
});
const body = {
  type: 'single' as const,
  amount: { total: 1 },
  creditorReference: { reference: 'R' },
  redirectUrl: 'https://shop.example/',
  checkoutMethod: 'card' as const,
};

/**
 * A client whose fetch answers each path from its own queue of replies (the last reply
 * repeats), and records every request.
 */
function scripted(script: Record<string, Reply[]>, options: Partial<PaymentClientOptions> = {}) {
  const recorded: Recorded[] = [];
  const delays: number[] = [];
  const queues = new Map(Object.entries(script).map(([key, replies]) => [key, [...replies]]));
  const client = createPaymentClient({
    baseUrl: 'https://pay.example/',
    clientId: 'id',
    clientSecret: 'secret',
    sleep: async (ms) => {
      delays.push(ms);
    },
    ...options,
    fetch: async (request) => {
      const path = new URL(request.url).pathname;
      recorded.push({ method: request.method, path, headers: request.headers });
      const queue = queues.get(`${request.method} ${path}`) ?? queues.get(path);
      if (!queue) throw new Error(`unscripted ${request.method} ${path}`);
      const reply = queue.length > 1 ? queue.shift()! : queue[0]!;
      if ('networkError' in reply) throw new TypeError(reply.networkError);
      if ('hang' in reply) {
        return new Promise<Response>((_, reject) =>
          request.signal.addEventListener('abort', () => reject(request.signal.reason)),
        );
      }
      return new Response(JSON.stringify(reply.body ?? {}), {
        status: reply.status,
        headers: { 'content-type': 'application/json' },
      });
    },
  });
  const count = (path: string) => recorded.filter((r) => r.path === path).length;
  return { client, recorded, delays, count };
}

describe('retries', () => {
  it('retries 500s with the same Idempotency-Key and exponential, jittered delays', async () => {
    const { client, recorded, delays } = scripted({
      '/api/token': [tokenReply()],
      '/api/checkout-sessions': [
        envelope(500, 'internal_error'),
        envelope(500, 'internal_error'),
        { status: 200, body: session() },
      ],
    });
    expect((await client.createCheckoutSession(body)).id).toBe('cs_1');
    const creates = recorded.filter((r) => r.path === '/api/checkout-sessions');
    expect(creates).toHaveLength(3);
    expect(new Set(creates.map((r) => r.headers.get('idempotency-key'))).size).toBe(1);
    expect(delays).toHaveLength(2);
    expect(delays[0]).toBeGreaterThanOrEqual(250);
    expect(delays[0]).toBeLessThanOrEqual(500);
    expect(delays[1]).toBeGreaterThanOrEqual(500);
    expect(delays[1]).toBeLessThanOrEqual(1000);
  });

  it('stops after maxRetries and raises ServerError', async () => {
    const { client, count } = scripted(
      { '/api/token': [tokenReply()], '/api/checkout-sessions': [envelope(500, 'internal_error')] },
      { maxRetries: 4 },
    );
    const error = await failure(client.createCheckoutSession(body));
    expect(error).toBeInstanceOf(ServerError);
    expect(count('/api/checkout-sessions')).toBe(5);
  });

  it('retries network failures and raises ConnectionError when they persist', async () => {
    const flaky = scripted({
      '/api/token': [tokenReply()],
      '/api/checkout-sessions/cs_1': [{ networkError: 'socket hang up' }, { status: 200, body: session() }],
    });
    expect((await flaky.client.getCheckoutSession('cs_1')).id).toBe('cs_1');
    expect(flaky.count('/api/checkout-sessions/cs_1')).toBe(2);

    const down = scripted({ '/api/token': [{ networkError: 'connect ECONNREFUSED' }] });
    const error = await failure(down.client.getCheckoutSession('cs_1'));
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error.status).toBeNull();
    expect(error.message).toContain('ECONNREFUSED');
    expect(down.count('/api/token')).toBe(DEFAULT_RETRY_POLICY.maxRetries + 1);
  });

  it('treats an attempt that outlives timeoutMs as a network failure', async () => {
    const { client, count } = scripted(
      {
        '/api/token': [tokenReply()],
        '/api/checkout-sessions/cs_1': [{ hang: true }, { status: 200, body: session() }],
      },
      { timeoutMs: 50 },
    );
    expect((await client.getCheckoutSession('cs_1')).id).toBe('cs_1');
    expect(count('/api/checkout-sessions/cs_1')).toBe(2);
  });

  it.each([400, 401, 404, 408, 409, 429])('never retries a %i', async (status) => {
    const { client, count } = scripted({
      '/api/token': [tokenReply()],
      '/api/checkout-sessions': [envelope(status, 'some_code')],
    });
    await failure(client.createCheckoutSession(body));
    expect(count('/api/checkout-sessions')).toBe(1);
  });

  it('retries the token endpoint on 500 too', async () => {
    const { client, count } = scripted({
      '/api/token': [{ status: 500, body: { error: 'internal_error' } }, tokenReply()],
      '/api/checkout-sessions/cs_1': [{ status: 200, body: session() }],
    });
    await client.getCheckoutSession('cs_1');
    expect(count('/api/token')).toBe(2);
  });

  it('decides by an ordered rule list and keeps delays within bounds', () => {
    const policy = { maxRetries: 3, initialDelayMs: 100, maxDelayMs: 300 };
    expect(shouldRetry({ status: 500 }, 0, policy)).toBe(true);
    expect(shouldRetry({ status: 503 }, 2, policy)).toBe(true);
    expect(shouldRetry({ status: 500 }, 3, policy)).toBe(false);
    expect(shouldRetry({ networkError: new Error('x') }, 1, policy)).toBe(true);
    expect(shouldRetry({ status: 200 }, 0, policy)).toBe(false);
    expect(shouldRetry({ status: 401 }, 0, policy)).toBe(false);
    expect([0, 1, 2, 3, 4].map((n) => backoffDelay(n, policy, () => 0))).toEqual([50, 100, 150, 150, 150]);
    expect([0, 1, 2].map((n) => backoffDelay(n, policy, () => 0.999999))).toEqual([
      expect.closeTo(100, 3),
      expect.closeTo(200, 3),
      expect.closeTo(300, 3),
    ]);
  });
});

describe('per-call options', () => {
  it('maxRetries, timeoutMs and headers of one call override the client’s, for that call only', async () => {
    const { client, recorded, count } = scripted(
      {
        '/api/token': [tokenReply()],
        '/api/checkout-sessions': [envelope(500, 'internal_error')],
        '/api/checkout-sessions/cs_1': [{ hang: true }],
      },
      { maxRetries: 4 },
    );
    await failure(client.createCheckoutSession(body, { maxRetries: 0, headers: { 'x-order': 'o-7' } }));
    expect(count('/api/checkout-sessions')).toBe(1);
    expect(recorded.at(-1)!.headers.get('x-order')).toBe('o-7');
    // Every attempt ran out of its 20 ms: RequestTimeoutError, a kind of ConnectionError.
    const timedOut = await failure(client.getCheckoutSession('cs_1', { timeoutMs: 20, maxRetries: 1 }));
    expect(timedOut).toBeInstanceOf(RequestTimeoutError);
    expect(timedOut).toBeInstanceOf(ConnectionError);
    expect(timedOut.message).toContain('20 ms');
    expect(count('/api/checkout-sessions/cs_1')).toBe(2);
    // The next call has the client's own budget again.
    await failure(client.createCheckoutSession(body));
    expect(count('/api/checkout-sessions')).toBe(1 + 5);
  });

  it('an aborted signal ends the call at once, in flight or between retries, with RequestAbortedError', async () => {
    const inFlight = scripted({ '/api/token': [tokenReply()], '/api/checkout-sessions/cs_1': [{ hang: true }] });
    const controller = new AbortController();
    const pending = failure(inFlight.client.getCheckoutSession('cs_1', { signal: controller.signal }));
    setTimeout(() => controller.abort(new Error('the shopper left')), 20);
    const aborted = await pending;
    expect(aborted).toBeInstanceOf(RequestAbortedError);
    expect(aborted).not.toBeInstanceOf(ConnectionError);
    expect((aborted.cause as Error).message).toBe('the shopper left');
    expect(inFlight.count('/api/checkout-sessions/cs_1')).toBe(1);

    // Between retries: the backoff wait is cut short, and no further attempt is made.
    const waiting = new AbortController();
    const retrying = scripted(
      { '/api/token': [tokenReply()], '/api/checkout-sessions': [envelope(500, 'internal_error')] },
      { sleep: () => new Promise(() => waiting.abort()) },
    );
    const error = await failure(retrying.client.createCheckoutSession(body, { signal: waiting.signal }));
    expect(error).toBeInstanceOf(RequestAbortedError);
    expect(retrying.count('/api/checkout-sessions')).toBe(1);
  });

  it('names the SDK and its version in User-Agent, the version being its package’s', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../client/package.json', import.meta.url), 'utf8'));
    expect(USER_AGENT).toBe(`payment-service-client/${pkg.version}`);
    const { client, recorded } = scripted({
      '/api/token': [tokenReply()],
      '/api/checkout-sessions/cs_1': [{ status: 200, body: session() }],
    });
    await client.getCheckoutSession('cs_1');
    expect(recorded.map((r) => r.headers.get('user-agent'))).toEqual([USER_AGENT, USER_AGENT]);
  });
});

describe('token single flight and renewal', () => {
  it('concurrent calls share one token request in flight', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const recorded: string[] = [];
    const client = createPaymentClient({
      baseUrl: 'https://pay.example',
      clientId: 'id',
      clientSecret: 'secret',
      fetch: async (request) => {
        const path = new URL(request.url).pathname;
        recorded.push(path);
        if (path === '/api/token') await gate;
        const reply = path === '/api/token' ? tokenReply() : { status: 200, body: session() };
        return new Response(JSON.stringify((reply as { body: unknown }).body), {
          status: 200,
          headers: { 'content-type': 'application/json' },
        });
      },
    });
    const reads = Array.from({ length: 10 }, () => client.getCheckoutSession('cs_1'));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(recorded).toEqual(['/api/token']);
    release();
    await Promise.all(reads);
    expect(recorded.filter((p) => p === '/api/token')).toHaveLength(1);
    expect(recorded).toHaveLength(11);
  });

  it('renews once on token_expired, shared by every request that met it, and repeats each request once only', async () => {
    const { client, recorded, count } = scripted({
      '/api/token': [tokenReply('old'), tokenReply('new')],
      '/api/checkout-sessions/cs_1': [
        envelope(401, 'token_expired'),
        envelope(401, 'token_expired'),
        envelope(401, 'token_expired'),
      ],
    });
    await client.getAccessToken();
    const errors = await Promise.all([
      failure(client.getCheckoutSession('cs_1')),
      failure(client.getCheckoutSession('cs_1')),
    ]);
    for (const error of errors) {
      expect(error).toBeInstanceOf(AuthenticationError);
      expect(error.code).toBe('token_expired');
    }
    expect(count('/api/token')).toBe(2);
    const reads = recorded.filter((r) => r.path === '/api/checkout-sessions/cs_1');
    expect(reads).toHaveLength(4);
    expect(reads.map((r) => r.headers.get('authorization'))).toEqual([
      'Bearer old',
      'Bearer old',
      'Bearer new',
      'Bearer new',
    ]);
  });

  it.each([
    ['5m', 4.5],
    ['1h', 4.5],
    ['300', 4.5],
    ['two fortnights', 4.5],
    ['60s', 0.5],
  ])(
    'with expiresIn %j reuses the token for %f minutes (capped at the documented five, renewed 30 s early)',
    async (expiresIn, minutes) => {
      let now = 0;
      const { client, count } = scripted(
        { '/api/token': [{ status: 200, body: { accessToken: 't', tokenType: 'Bearer', expiresIn } }] },
        { now: () => now },
      );
      await client.getAccessToken();
      now = minutes * 60_000 - 1;
      await client.getAccessToken();
      expect(count('/api/token')).toBe(1);
      now = minutes * 60_000;
      await client.getAccessToken();
      expect(count('/api/token')).toBe(2);
    },
  );
});

describe('open sets', () => {
  it('an unknown status reads without error and is never paid', async () => {
    const { client } = scripted({
      '/api/token': [tokenReply()],
      '/api/checkout-sessions/cs_1': [{ status: 200, body: session('partially_refunded') }],
    });
    const read = await client.getCheckoutSession('cs_1');
    expect(read.status).toBe('partially_refunded');
    expect(isPaid(read)).toBe(false);
    expect(await client.confirmPayment('cs_1')).toMatchObject({
      paid: false,
      status: 'partially_refunded',
      transactionType: null,
    });
  });

  it.each([
    [
      400,
      {
        error: {
          code: 'validation_failed',
          message: 'm',
          param: 'amount.total',
          doc_url: 'd',
          details: [{ field: 'amount.total', constraints: { max: 'x' } }],
        },
      },
      'ValidationError',
      'validation_failed',
    ],
    [
      400,
      { error: { code: 'card_not_enabled', message: 'm', param: 'checkoutMethod', doc_url: 'd' } },
      'AccountConfigurationError',
      'card_not_enabled',
    ],
    [
      400,
      { error: { code: 'idempotency_error', message: 'm', param: null, doc_url: 'd' } },
      'IdempotencyError',
      'idempotency_error',
    ],
    [
      400,
      { error: { code: 'currency_mismatch', message: 'm', param: 'amount.currency', doc_url: 'd' } },
      'InvalidRequestError',
      'currency_mismatch',
    ],
    [
      400,
      { error: { code: 'brand_new_rule', message: 'm', param: null, doc_url: 'd' } },
      'InvalidRequestError',
      'brand_new_rule',
    ],
    [
      401,
      { error: { code: 'token_expired', message: 'm', param: null, doc_url: 'd' } },
      'AuthenticationError',
      'token_expired',
    ],
    [401, { error: 'Invalid credentials' }, 'AuthenticationError', null],
    [400, { error: 'Invalid credentials - missing or malformed clientId/clientSecret' }, 'InvalidRequestError', null],
    [500, { error: 'internal_error' }, 'ServerError', 'internal_error'],
    [404, { error: { code: 'not_found', message: 'm', param: null, doc_url: 'd' } }, 'NotFoundError', 'not_found'],
    [503, '<html>Service Unavailable</html>', 'ServerError', null],
    [
      418,
      { error: { code: 'teapot', message: 'short and stout', param: null, doc_url: 'd' } },
      'PaymentError',
      'teapot',
    ],
  ])('maps %i %j to %s with code %s', (status, body, name, code) => {
    const error = errorFromResponse(status, body);
    expect(error).toBeInstanceOf(PaymentError);
    expect(error.name).toBe(name);
    expect(error.code).toBe(code);
    expect(error.status).toBe(status);
    expect(error.message.length).toBeGreaterThan(0);
  });
});

describe('agreement with the description', () => {
  it('gives a key to exactly the operations that document an Idempotency-Key', () => {
    const doc = loadDescription('openapi');
    const documented = Object.entries(doc.paths as Record<string, Record<string, { parameters?: { $ref?: string }[] }>>)
      .filter(([, item]) => item.post?.parameters?.some((p) => p.$ref?.endsWith('/IdempotencyKey')))
      .map(([path]) => path);
    expect(new Set(documented)).toEqual(IDEMPOTENT_CREATE_PATHS);
  });

  it("the client's README shows the integration example exactly as it is type-checked", () => {
    const readme = readFileSync(new URL('../../client/README.md', import.meta.url), 'utf8');
    const example = readFileSync(new URL('../../examples/integration.ts', import.meta.url), 'utf8');
    expect(readme).toContain(`\`\`\`ts\n${example}\`\`\``);
  });

  it.each([
    ['5m', 300_000],
    ['300', 300_000],
    ['PT5M', 300_000],
    ['1 hour', 3_600_000],
    ['1h30m', 5_400_000],
    ['00:05:00', 300_000],
    ['soon', undefined],
    ['', undefined],
  ])('reads the duration text %j as %s ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
});

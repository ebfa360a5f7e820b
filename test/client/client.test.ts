/**
 * The client against the in-process reference server: token reuse and renewal,
 * idempotency keys across retries, every error mapped, and reading payments back.
 * Every answer the client receives is also checked against the description.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccountConfigurationError,
  AuthenticationError,
  IdempotencyError,
  InvalidRequestError,
  NotFoundError,
  ServerError,
  ValidationError,
  createPaymentClient,
  isPaid,
  type CheckoutSessionCreateRequest,
  type PaymentClientOptions,
} from '../../client/index.ts';
import { failure } from '../support/failure.ts';
import { contractProblems, sessionRequest, startTestServer, type Org, type TestServer } from '../support/server.ts';

let t: TestServer;

/** A valid typed create request; override any part. */
const order = (overrides: Record<string, unknown> = {}) => sessionRequest(overrides) as CheckoutSessionCreateRequest;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

interface Sent {
  method: string;
  path: string;
  headers: Headers;
  body: string;
  status: number;
}

/** A client of `org`'s test key whose traffic is recorded and checked against the description. */
function clientFor(
  org: Pick<Org, 'apiKeys'>,
  options: Partial<PaymentClientOptions> & { alter?: (request: Request) => Request } = {},
) {
  const sent: Sent[] = [];
  const client = createPaymentClient({
    baseUrl: t.url,
    clientId: org.apiKeys.test.clientId,
    clientSecret: org.apiKeys.test.clientSecret,
    initialRetryDelayMs: 1,
    ...options,
    fetch: async (original) => {
      const request = options.alter ? options.alter(original) : original;
      const body = await request.clone().text();
      const response = await fetch(request);
      const text = await response.clone().text();
      const url = new URL(request.url);
      sent.push({
        method: request.method,
        path: url.pathname,
        headers: request.headers,
        body,
        status: response.status,
      });
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // reported by the contract check below
      }
      const problems = contractProblems(request.method, url.pathname, {
        status: response.status,
        headers: response.headers,
        body: parsed,
        text,
      });
      if (problems.length > 0) throw new Error(problems.join('\n'));
      return response;
    },
  });
  const tokenRequests = () => sent.filter((s) => s.path === '/api/token');
  return { client, sent, tokenRequests };
}

describe('tokens', () => {
  it('fetches one token with the form-encoded body and reuses it', async () => {
    const org = await t.organisation();
    const { client, tokenRequests } = clientFor(org);
    const created = await client.createCheckoutSession(order());
    for (let i = 0; i < 5; i++) await client.getCheckoutSession(created.id);
    await Promise.all(Array.from({ length: 10 }, () => client.createCheckoutSession(order())));
    expect(tokenRequests()).toHaveLength(1);
    const [request] = tokenRequests();
    expect(request!.method).toBe('POST');
    expect(request!.headers.get('content-type')).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(request!.body))).toEqual({
      clientId: org.apiKeys.test.clientId,
      clientSecret: org.apiKeys.test.clientSecret,
    });
  });

  it('shares one token request among concurrent first calls', async () => {
    const org = await t.organisation();
    const { client, tokenRequests } = clientFor(org);
    const created = await t.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() });
    const reads = await Promise.all(Array.from({ length: 20 }, () => client.getCheckoutSession(created.body.id)));
    expect(reads.every((read) => read.id === created.body.id)).toBe(true);
    expect(tokenRequests()).toHaveLength(1);
  });

  it('renews the token on token_expired once the organisation clock passes five minutes, and repeats the request once', async () => {
    const org = await t.organisation();
    const { client, sent, tokenRequests } = clientFor(org);
    const created = await client.createCheckoutSession(order());
    await t.advanceClock(org.id, 5 * 60 + 1);
    const read = await client.getCheckoutSession(created.id);
    expect(read.id).toBe(created.id);
    expect(tokenRequests()).toHaveLength(2);
    const reads = sent.filter((s) => s.method === 'GET');
    expect(reads.map((s) => s.status)).toEqual([401, 200]);
    expect(reads[0]!.headers.get('authorization')).not.toBe(reads[1]!.headers.get('authorization'));
  });

  it('renews the token shortly before five minutes by its own clock, without waiting for a 401', async () => {
    const org = await t.organisation();
    let now = 1_000_000;
    const { client, sent, tokenRequests } = clientFor(org, { now: () => now });
    const created = await client.createCheckoutSession(order());
    now += 4 * 60_000;
    await client.getCheckoutSession(created.id);
    expect(tokenRequests()).toHaveLength(1);
    now += 31_000;
    await client.getCheckoutSession(created.id);
    expect(tokenRequests()).toHaveLength(2);
    expect(sent.some((s) => s.status === 401)).toBe(false);
  });

  it('does not retry unknown_api_key: a new token would not help', async () => {
    const org = await t.organisation();
    const { client, sent, tokenRequests } = clientFor(org);
    const created = await client.createCheckoutSession(order());
    await t.sandbox('DELETE', `/sandbox/api-keys/${org.apiKeys.test.clientId}`);
    const error = await failure(client.getCheckoutSession(created.id));
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ status: 401, code: 'unknown_api_key', param: null });
    expect(error.docUrl).toMatch(/\/errors\/#unknown_api_key$/);
    expect(sent.filter((s) => s.method === 'GET')).toHaveLength(1);
    expect(tokenRequests()).toHaveLength(1);
  });

  it('does not repeat a request refused with invalid_token, and fetches a new token for the next one', async () => {
    const org = await t.organisation();
    let mangle = true;
    const { client, sent, tokenRequests } = clientFor(org, {
      alter: (request) => {
        const auth = request.headers.get('authorization');
        if (!mangle || !auth) return request;
        const headers = new Headers(request.headers);
        headers.set('authorization', auth.slice(0, -6));
        return new Request(request, { headers });
      },
    });
    const created = await t.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() });
    const error = await failure(client.getCheckoutSession(created.body.id));
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.code).toBe('invalid_token');
    expect(sent.filter((s) => s.method === 'GET')).toHaveLength(1);
    mangle = false;
    expect((await client.getCheckoutSession(created.body.id)).id).toBe(created.body.id);
    expect(tokenRequests()).toHaveLength(2);
  });

  it('reports the token endpoint string errors with their status', async () => {
    const org = await t.organisation();
    const wrong = clientFor({
      apiKeys: { ...org.apiKeys, test: { clientId: org.apiKeys.test.clientId, clientSecret: 'not-the-secret' } },
    });
    const unauthorised = await failure(wrong.client.getCheckoutSession('cs_anything'));
    expect(unauthorised).toBeInstanceOf(AuthenticationError);
    expect(unauthorised).toMatchObject({ status: 401, code: null, param: null, docUrl: null });
    expect(unauthorised.message).toBe('Invalid credentials');
    expect(wrong.tokenRequests()).toHaveLength(1);

    const missing = clientFor({ apiKeys: { ...org.apiKeys, test: { clientId: '', clientSecret: '' } } });
    const malformed = await failure(missing.client.getCheckoutSession('cs_anything'));
    expect(malformed).toBeInstanceOf(InvalidRequestError);
    expect(malformed).toMatchObject({ status: 400, code: null });
  });
});

describe('idempotency keys and retries', () => {
  it('gives every create an Idempotency-Key, generated unless given', async () => {
    const org = await t.organisation();
    const { client, sent } = clientFor(org);
    await client.createCheckoutSession(order());
    await client.createPaymentLink({
      amount: { total: 10 },
      creditorReference: { reference: 'LINK-1' },
      redirectUrl: 'https://shop.example.com/',
      checkoutMethod: 'card',
    });
    await client.api.POST('/api/transaction', {
      body: {
        amount: { total: 10 },
        creditorReference: { reference: 'LEG-1' },
        redirectUrl: 'https://shop.example.com/',
        checkoutMethod: 'card',
      } as never,
    });
    await client.createCheckoutSession(order(), { idempotencyKey: 'order-1001' });
    const creates = sent.filter((s) => s.method === 'POST' && s.path !== '/api/token');
    expect(creates).toHaveLength(4);
    const keys = creates.map((s) => s.headers.get('idempotency-key'));
    for (const key of keys.slice(0, 3))
      expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(keys).size).toBe(4);
    expect(keys[3]).toBe('order-1001');
    expect(sent.filter((s) => s.method === 'GET').every((s) => !s.headers.has('idempotency-key'))).toBe(true);
  });

  it('retries a 500 after commit with the same key and returns the session that was committed', async () => {
    const org = await t.organisation();
    const { client, sent } = clientFor(org);
    await t.sandbox('POST', '/sandbox/faults', { kind: 'internal_error_after_commit', orgId: org.id });
    const session = await client.createCheckoutSession(order());
    const creates = sent.filter((s) => s.path === '/api/checkout-sessions');
    expect(creates.map((s) => s.status)).toEqual([500, 200]);
    expect(creates[0]!.headers.get('idempotency-key')).toBe(creates[1]!.headers.get('idempotency-key'));
    expect(await t.server.store.countPayments(org.id)).toBe(1);
    expect((await client.getCheckoutSession(session.id)).id).toBe(session.id);
  });

  it('without retries, reports the 500 as a ServerError; a repeat by the caller with the same key returns the committed session', async () => {
    const org = await t.organisation();
    const { client, sent } = clientFor(org, { maxRetries: 0 });
    await t.sandbox('POST', '/sandbox/faults', { kind: 'internal_error_after_commit', orgId: org.id });
    const error = await failure(client.createCheckoutSession(order(), { idempotencyKey: 'order-77' }));
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ status: 500, code: 'internal_error' });
    expect(sent.filter((s) => s.path === '/api/checkout-sessions')).toHaveLength(1);
    const session = await client.createCheckoutSession(order(), { idempotencyKey: 'order-77' });
    expect(session.id).toMatch(/^cs_/);
    expect(await t.server.store.countPayments(org.id)).toBe(1);
  });

  it('never retries a 4xx', async () => {
    const org = await t.organisation();
    const { client, sent } = clientFor(org);
    await failure(client.createCheckoutSession(order({ amount: { total: 0 } })));
    await failure(client.getCheckoutSession('cs_doesnotexist'));
    expect(sent.filter((s) => s.path !== '/api/token').map((s) => s.status)).toEqual([400, 404]);
  });
});

describe('errors', () => {
  it('maps validation_failed with every failing field', async () => {
    const org = await t.organisation();
    const { client } = clientFor(org);
    const error = await failure(
      client.createCheckoutSession(
        order({ amount: { total: 10000.01 }, creditorReference: { reference: 'THIRTEEN-CHAR' } }),
      ),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ status: 400, code: 'validation_failed', param: null });
    expect(error.details.map((d) => d.field).sort()).toEqual(['amount.total', 'creditorReference.reference']);
    expect(error.docUrl).toBe(`${t.url}/docs/errors/#validation_failed`);
    expect(error.requestId).toEqual(expect.any(String));

    const single = await failure(client.createCheckoutSession(order({ amount: { total: 1.005 } })));
    expect(single.param).toBe('amount.total');
  });

  it('maps each account-configuration code to AccountConfigurationError', async () => {
    const cases = [
      [{ cardEnabled: false }, 'card', 'card_not_enabled'],
      [{ openBankingApproved: false }, 'open_banking', 'open_banking_not_enabled'],
      [{ settlementAccount: false }, 'open_banking', 'settlement_account_missing'],
      [{ settlementCurrency: 'AUD' as const }, 'open_banking', 'open_banking_currency_unsupported'],
    ] as const;
    for (const [settings, checkoutMethod, code] of cases) {
      const { client } = clientFor(await t.organisation(settings));
      const error = await failure(client.createCheckoutSession(order({ checkoutMethod })));
      expect(error).toBeInstanceOf(AccountConfigurationError);
      expect(error).toMatchObject({ status: 400, code });
    }
  });

  it('maps currency_mismatch, idempotency_error and not_found', async () => {
    const org = await t.organisation();
    const other = await t.organisation();
    const { client } = clientFor(org);
    const mismatch = await failure(client.createCheckoutSession(order({ amount: { total: 5, currency: 'AUD' } })));
    expect(mismatch).toBeInstanceOf(InvalidRequestError);
    expect(mismatch.code).toBe('currency_mismatch');

    await client.createCheckoutSession(order(), { idempotencyKey: 'same-key' });
    const reuse = await failure(
      client.createCheckoutSession(order({ amount: { total: 6 } }), { idempotencyKey: 'same-key' }),
    );
    expect(reuse).toBeInstanceOf(IdempotencyError);

    const theirs = await clientFor(other).client.createCheckoutSession(order());
    for (const id of [theirs.id, 'cs_unknown']) {
      const error = await failure(client.getCheckoutSession(id));
      expect(error).toBeInstanceOf(NotFoundError);
      expect(error).toMatchObject({ status: 404, code: 'not_found' });
    }
  });
});

describe('reading payments back', () => {
  it('confirms a session as paid only once it is completed', async () => {
    const org = await t.organisation();
    const { client } = clientFor(org);
    const session = await client.createCheckoutSession(order({ checkoutMethod: 'both' }));
    expect(await client.confirmPayment(session.id)).toMatchObject({
      paid: false,
      status: 'created',
      transactionType: null,
    });
    await t.sandbox('POST', `/sandbox/checkout-sessions/${session.id}/attempts`, { rail: 'card', outcome: 'declined' });
    expect(await client.confirmPayment(session.id)).toMatchObject({ paid: false, status: 'failed' });
    await t.sandbox('POST', `/sandbox/checkout-sessions/${session.id}/attempts`, {
      rail: 'card',
      outcome: 'succeeded',
    });
    const confirmed = await client.confirmPayment(session.id);
    expect(confirmed).toMatchObject({ paid: true, status: 'completed', transactionType: 'card' });
    expect(isPaid(confirmed.payment)).toBe(true);
  });

  it('confirms a payment link by its transaction id', async () => {
    const org = await t.organisation();
    const { client } = clientFor(org);
    const link = await client.createPaymentLink({
      amount: { total: 12 },
      creditorReference: { reference: 'LINK-2' },
      redirectUrl: 'https://shop.example.com/',
      checkoutMethod: 'open_banking',
    });
    expect((await client.confirmPayment(link.id)).paid).toBe(false);
    await t.sandbox('POST', `/sandbox/payment-links/${link.id}/attempts`, {
      rail: 'open_banking',
      outcome: 'succeeded',
    });
    expect(await client.confirmPayment(link.id)).toMatchObject({ paid: true, transactionType: 'open_banking' });
  });

  it('expired sessions read as not paid', async () => {
    const org = await t.organisation();
    const { client } = clientFor(org);
    const session = await client.createCheckoutSession(order());
    await t.advanceClock(org.id, 24 * 3600 + 1);
    expect(await client.confirmPayment(session.id)).toMatchObject({ paid: false, status: 'expired' });
  });
});

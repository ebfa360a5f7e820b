/**
 * Pact: the client's consumer tests write the contract, then the reference server is
 * verified against it, with provider states set up through the sandbox API. The two halves
 * run in order in this one file, so the verification always reads the contract this run
 * wrote. The run writes it to a directory of its own; only when every consumer test passed
 * does it replace `contracts/payment-client-payment-service.json`, so a failing run never
 * leaves the committed contract half written.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MatchersV3, PactV3, type V3MockServer } from '@pact-foundation/pact';
import { getFfiLib } from '@pact-foundation/pact-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  NotFoundError,
  ValidationError,
  createPaymentClient,
  type CheckoutSessionCreateRequest,
  type PaymentClient,
} from '../../client/index.ts';
import { CONTRACTS_DIR, verifyContracts } from '../../scripts/verify-contracts.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';
import { paced } from '../support/pace.ts';

const { like, regex, eachLike, fromProviderState, string, boolean, nullValue } = MatchersV3;

const CONTRACT_FILE = 'payment-client-payment-service.json';
const COMMITTED = join(CONTRACTS_DIR, CONTRACT_FILE);
const written = mkdtempSync(join(tmpdir(), 'pact-contract-'));
const CONTRACT = join(written, CONTRACT_FILE);
const pact = new PactV3({
  consumer: 'payment-client',
  provider: 'payment-service',
  dir: written,
  logLevel: 'error',
});

/**
 * Pact's mock server answers a request before it records it as matched, and `executeTest`
 * reads the records as soon as the test's function returns: on a busy machine an answered
 * request can read as never received (pact-js #1835, pact-reference #535). So the test's
 * function ends once the mock server has recorded every expected request, or a mismatch
 * (which executeTest then reports). A request the client never sent can never be recorded:
 * that wait alone ends at a bound, after which executeTest reports it missing.
 */
const ffi = getFfiLib('error');
const LOOKS_FOR_A_REQUEST_NEVER_SENT = 500;
async function recorded(mock: V3MockServer): Promise<void> {
  for (let look = 0; look < LOOKS_FOR_A_REQUEST_NEVER_SENT; look++) {
    if (ffi.pactffiMockServerMatched(mock.port)) return;
    const mismatches = JSON.parse(ffi.pactffiMockServerMismatches(mock.port) || '[]') as { type: string }[];
    if (mismatches.some((m) => m.type !== 'missing-request')) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** `pact.executeTest`, judged once the mock server has recorded what the client sent. */
const executeTest = (test: (mock: V3MockServer) => Promise<void>) =>
  pact.executeTest(async (mock) => {
    try {
      await test(mock);
    } finally {
      await recorded(mock);
    }
  });

const EXAMPLE = {
  clientId: 'ck_test_example',
  clientSecret: 'cs_test_secret_example',
  token: 'eyJhbGciOiJIUS.example.token',
};
const ISO = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$';
const UUID = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
const order: CheckoutSessionCreateRequest = {
  type: 'single',
  amount: { total: 25.5 },
  creditorReference: { reference: 'INV-1001' },
  redirectUrl: 'https://shop.example.com/done?order=1001',
  checkoutMethod: 'both',
};
const linkBody = {
  amount: { total: 12 },
  creditorReference: { reference: 'LINK-1' },
  redirectUrl: 'https://shop.example.com/done',
  checkoutMethod: 'card' as const,
};

const bearer = regex('^Bearer \\S+$', `Bearer ${EXAMPLE.token}`);
const docUrl = (code: string) => regex(`^\\S+/errors/#${code}$`, `https://pay.example.com/docs/errors/#${code}`);

const tokenInteraction = (state = 'an organisation with card and open banking enabled') =>
  pact
    .given(state)
    .uponReceiving('a token request with a key pair')
    .withRequest({
      method: 'POST',
      path: '/api/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ clientId: EXAMPLE.clientId, clientSecret: EXAMPLE.clientSecret }).toString(),
    })
    .willRespondWith({
      status: 200,
      headers: { 'Content-Type': 'application/json' },
      body: { accessToken: string(EXAMPLE.token), tokenType: 'Bearer', expiresIn: string('5m') },
    });

const sessionBody = (status: string) => ({
  id: regex('^cs_\\S+$', 'cs_example'),
  status: status === 'any' ? string('created') : status,
  code: string('ABC123'),
  amount: { total: like(25.5), currency: regex('^(NZD|AUD)$', 'NZD') },
  checkoutMethod: 'both',
  reference: 'INV-1001',
  testMode: boolean(true),
  expiresAt: regex(ISO, '2026-01-02T00:00:00.000Z'),
});

function clientOf(baseUrl: string, sent: string[] = []): PaymentClient {
  return createPaymentClient({
    baseUrl,
    clientId: EXAMPLE.clientId,
    clientSecret: EXAMPLE.clientSecret,
    maxRetries: 0,
    fetch: (request) => {
      sent.push(`${request.method} ${new URL(request.url).pathname}`);
      return fetch(request);
    },
  });
}

describe('consumer: payment-client', () => {
  let everyTestPassed = true;
  afterEach(({ task }) => {
    if (task.result?.state !== 'pass') everyTestPassed = false;
  });
  afterAll(() => {
    if (!everyTestPassed) return;
    const contract = readFileSync(CONTRACT, 'utf8');
    if (readFileSync(COMMITTED, 'utf8') !== contract) writeFileSync(COMMITTED, contract);
  });

  it('fetches a token with the form-encoded key pair', async () => {
    tokenInteraction();
    await executeTest(async (mock) => {
      expect(await clientOf(mock.url).getAccessToken()).toBe(EXAMPLE.token);
    });
  });

  it('creates a checkout session with an Idempotency-Key', async () => {
    tokenInteraction();
    pact
      .given('an organisation with card and open banking enabled')
      .uponReceiving('a checkout session create')
      .withRequest({
        method: 'POST',
        path: '/api/checkout-sessions',
        headers: {
          authorization: bearer,
          'content-type': 'application/json',
          'idempotency-key': regex('^\\S{1,255}$', 'f3b0c442-98fc-4c14-9afb-4c8996fb9242'),
        },
        body: order,
      })
      .willRespondWith({
        status: 200,
        headers: { 'Content-Type': 'application/json' },
        body: { ...sessionBody('created'), url: regex('^https?://\\S+$', 'https://pay.example.com/pay/cs_example') },
      });
    await executeTest(async (mock) => {
      const session = await clientOf(mock.url).createCheckoutSession(order);
      expect(session.id).toMatch(/^cs_/);
      expect(session.status).toBe('created');
    });
  });

  it('reads a checkout session back', async () => {
    tokenInteraction('a checkout session exists');
    pact
      .given('a checkout session exists')
      .uponReceiving('a checkout session read')
      .withRequest({
        method: 'GET',
        path: fromProviderState('/api/checkout-sessions/${sessionId}', '/api/checkout-sessions/cs_example'),
        headers: { authorization: bearer },
      })
      .willRespondWith({
        status: 200,
        headers: { 'Content-Type': 'application/json' },
        body: {
          ...sessionBody('any'),
          particulars: string(''),
          transactionType: regex('^(open_banking|card)$', 'open_banking'),
          foreignTransactionId: nullValue(),
          createdAt: regex(ISO, '2026-01-01T00:00:00.000Z'),
          updatedAt: regex(ISO, '2026-01-01T00:00:00.000Z'),
        },
      });
    await executeTest(async (mock) => {
      const confirmation = await clientOf(mock.url).confirmPayment('cs_example');
      expect(confirmation.paid).toBe(false);
    });
  });

  it('maps validation_failed, with every failing field', async () => {
    tokenInteraction();
    const invalid = { ...order, amount: { total: 10000.01 } };
    pact
      .given('an organisation with card and open banking enabled')
      .uponReceiving('a checkout session create with an amount over the maximum')
      .withRequest({
        method: 'POST',
        path: '/api/checkout-sessions',
        headers: { authorization: bearer, 'content-type': 'application/json' },
        body: invalid,
      })
      .willRespondWith({
        status: 400,
        headers: { 'Content-Type': 'application/json' },
        body: {
          error: {
            code: 'validation_failed',
            message: string('amount.total must not be greater than 10000'),
            param: 'amount.total',
            doc_url: docUrl('validation_failed'),
            details: eachLike({
              field: 'amount.total',
              constraints: like({ max: 'amount.total must not be greater than 10000' }),
            }),
          },
        },
      });
    await executeTest(async (mock) => {
      const error = await clientOf(mock.url)
        .createCheckoutSession(invalid)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).param).toBe('amount.total');
    });
  });

  it('maps not_found', async () => {
    tokenInteraction();
    pact
      .given('an organisation with card and open banking enabled')
      .uponReceiving('a read of a checkout session that does not exist')
      .withRequest({
        method: 'GET',
        path: '/api/checkout-sessions/cs_doesnotexist',
        headers: { authorization: bearer },
      })
      .willRespondWith({
        status: 404,
        headers: { 'Content-Type': 'application/json' },
        body: {
          error: {
            code: 'not_found',
            message: string('No such checkout session.'),
            param: nullValue(),
            doc_url: docUrl('not_found'),
          },
        },
      });
    await executeTest(async (mock) => {
      const error = await clientOf(mock.url)
        .getCheckoutSession('cs_doesnotexist')
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotFoundError);
    });
  });

  it('on token_expired fetches a new token and repeats the request once', async () => {
    tokenInteraction('the access token has expired');
    pact
      .given('the access token has expired')
      .uponReceiving('a checkout session read with an expired token')
      .withRequest({
        method: 'GET',
        path: fromProviderState('/api/checkout-sessions/${sessionId}', '/api/checkout-sessions/cs_example'),
        headers: { authorization: bearer },
      })
      .willRespondWith({
        status: 401,
        headers: { 'Content-Type': 'application/json' },
        body: {
          error: {
            code: 'token_expired',
            message: string('The access token has expired.'),
            param: nullValue(),
            doc_url: docUrl('token_expired'),
          },
        },
      });
    await executeTest(async (mock) => {
      const sent: string[] = [];
      const error = await clientOf(mock.url, sent)
        .getCheckoutSession('cs_example')
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthenticationError);
      expect((error as AuthenticationError).code).toBe('token_expired');
      // The mock keeps answering token_expired, so the client stops after one renewal.
      expect(sent).toEqual([
        'POST /api/token',
        'GET /api/checkout-sessions/cs_example',
        'POST /api/token',
        'GET /api/checkout-sessions/cs_example',
      ]);
    });
  });

  it('creates and reads a payment link', async () => {
    tokenInteraction();
    pact
      .given('an organisation with card and open banking enabled')
      .uponReceiving('a payment link create')
      .withRequest({
        method: 'POST',
        path: '/api/payment-links',
        headers: {
          authorization: bearer,
          'content-type': 'application/json',
          'idempotency-key': regex('^\\S{1,255}$', 'b5c1d7c2-1f7e-4a55-9f0e-3d4c1c2b7a10'),
        },
        body: linkBody,
      })
      .willRespondWith({
        status: 200,
        headers: { 'Content-Type': 'application/json' },
        body: {
          id: regex(UUID, '6f1c2a9e-3b7d-4c55-8e21-0a9b8c7d6e5f'),
          status: string('created'),
          url: regex('^https?://\\S+$', 'https://pay.example.com/pay/link'),
          amount: { total: like(12), currency: 'NZD' },
          checkoutMethod: 'card',
          testMode: boolean(true),
        },
      });
    await executeTest(async (mock) => {
      const link = await clientOf(mock.url).createPaymentLink(linkBody);
      expect(link.id).toMatch(new RegExp(UUID));
    });

    tokenInteraction('a payment link exists');
    pact
      .given('a payment link exists')
      .uponReceiving('a payment link read')
      .withRequest({
        method: 'GET',
        path: fromProviderState(
          '/api/payment-links/${linkId}',
          '/api/payment-links/6f1c2a9e-3b7d-4c55-8e21-0a9b8c7d6e5f',
        ),
        headers: { authorization: bearer },
      })
      .willRespondWith({
        status: 200,
        headers: { 'Content-Type': 'application/json' },
        body: {
          id: regex(UUID, '6f1c2a9e-3b7d-4c55-8e21-0a9b8c7d6e5f'),
          status: string('created'),
          amount: { total: like(25.5), currency: 'NZD' },
          checkoutMethod: string('both'),
          transactionType: regex('^(open_banking|card)$', 'open_banking'),
          testMode: boolean(true),
          createdAt: regex(ISO, '2026-01-01T00:00:00.000Z'),
        },
      });
    await executeTest(async (mock) => {
      const confirmation = await clientOf(mock.url).confirmPayment('6f1c2a9e-3b7d-4c55-8e21-0a9b8c7d6e5f');
      expect(confirmation).toMatchObject({ paid: false, status: 'created' });
    });
  });
});

describe('provider: the reference server', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  it(
    'satisfies every interaction in the contract',
    async () => {
      // Resolves only when every interaction verified (a mismatch rejects, as the next test shows).
      const output = await verifyContracts({ baseUrl: t.url, sandboxToken: SANDBOX_TOKEN, pactUrls: [CONTRACT] });
      const interactions = (JSON.parse(readFileSync(CONTRACT, 'utf8')) as { interactions: unknown[] }).interactions;
      expect(interactions.length).toBeGreaterThan(3);
      expect(typeof output).toBe('string');
    },
    paced(60_000),
  );

  it(
    'rejects a contract the server does not satisfy (a 403 where the server answers 404)',
    async () => {
      const contract = JSON.parse(readFileSync(CONTRACT, 'utf8'));
      const notFound = contract.interactions.find(
        (i: { description: string }) => i.description === 'a read of a checkout session that does not exist',
      );
      notFound.response.status = 403;
      const altered = join(mkdtempSync(join(tmpdir(), 'pact-')), 'altered.json');
      writeFileSync(altered, JSON.stringify(contract));
      await expect(
        verifyContracts({ baseUrl: t.url, sandboxToken: SANDBOX_TOKEN, pactUrls: [altered] }),
      ).rejects.toThrow();
    },
    paced(60_000),
  );
});

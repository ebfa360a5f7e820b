/**
 * The payment lifecycle driven through the sandbox attempts endpoints (service document:
 * States and transitions, redirect rule), payment links and the legacy transaction paths.
 *
 * @tags postgres
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TOKEN, sessionRequest, startTestServer, type Org, type TestServer } from '../support/server.ts';

let t: TestServer;
let org: Org;

beforeAll(async () => {
  t = await startTestServer();
  org = await t.organisation();
});
afterAll(() => t.close());

async function session(overrides: Record<string, unknown> = {}) {
  return (await t.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest(overrides) }))
    .body;
}
const attempt = (id: string, rail: string, outcome: string) =>
  t.request('POST', `/sandbox/checkout-sessions/${id}/attempts`, { token: SANDBOX_TOKEN, body: { rail, outcome } });
const read = async (id: string) =>
  (await t.request('GET', `/api/checkout-sessions/${id}`, { token: org.testToken })).body;

describe('checkout session lifecycle', () => {
  it('created → pending → completed, with transactionType the rail used', async () => {
    const s = await session({ checkoutMethod: 'both' });
    expect((await attempt(s.id, 'card', 'pending')).body.session).toMatchObject({
      status: 'pending',
      transactionType: 'open_banking',
    });
    const done = await attempt(s.id, 'card', 'succeeded');
    expect(done.body.session).toMatchObject({ status: 'completed', transactionType: 'card' });
    expect(await read(s.id)).toMatchObject({ status: 'completed', transactionType: 'card' });
  });

  it('a declined attempt is not final: the status reports the last attempt and the payer may retry', async () => {
    const s = await session({ checkoutMethod: 'open_banking' });
    expect((await attempt(s.id, 'open_banking', 'declined')).body.session.status).toBe('failed');
    expect((await read(s.id)).status).toBe('failed');
    expect((await attempt(s.id, 'open_banking', 'pending')).body.session.status).toBe('pending');
    expect((await attempt(s.id, 'open_banking', 'declined')).body.session.status).toBe('failed');
    expect((await attempt(s.id, 'open_banking', 'succeeded')).body.session).toMatchObject({
      status: 'completed',
      transactionType: 'open_banking',
    });
  });

  it('completed is final: any further attempt is invalid_state', async () => {
    const s = await session();
    await attempt(s.id, 'card', 'succeeded');
    for (const outcome of ['succeeded', 'declined', 'pending']) {
      const answer = await attempt(s.id, 'card', outcome);
      expect(answer.status).toBe(400);
      expect(answer.body.error.code).toBe('invalid_state');
    }
    expect((await read(s.id)).status).toBe('completed');
  });

  it('completes once when two successful attempts race', async () => {
    const s = await session();
    const answers = await Promise.all([attempt(s.id, 'card', 'succeeded'), attempt(s.id, 'open_banking', 'succeeded')]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
  });

  it('expires unpaid after 24 hours: nothing can be paid after', async () => {
    const own = await t.organisation();
    const s = (await t.request('POST', '/api/checkout-sessions', { token: own.testToken, body: sessionRequest() }))
      .body;
    await attempt(s.id, 'card', 'declined');
    await t.advanceClock(own.id, 24 * 3600);
    const answer = await attempt(s.id, 'card', 'succeeded');
    expect(answer.body.error.code).toBe('invalid_state');
  });

  it.each([
    ['card', 'open_banking'],
    ['open_banking', 'card'],
  ])('refuses an attempt on a rail a %s session does not allow', async (method, rail) => {
    const s = await session({ checkoutMethod: method });
    const answer = await attempt(s.id, rail, 'succeeded');
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'validation_failed', param: 'rail' });
    expect((await read(s.id)).status).toBe('created');
  });

  it("sends the payer to redirectUrl with transactionId and checkoutSessionId appended, keeping the merchant's parameters", async () => {
    const s = await session({ redirectUrl: 'https://shop.example.com/done?order=42&lang=en#top' });
    const done = await attempt(s.id, 'card', 'succeeded');
    const url = new URL(done.body.redirectTo);
    expect(url.origin + url.pathname).toBe('https://shop.example.com/done');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      order: '42',
      lang: 'en',
      transactionId: s.transactionId,
      checkoutSessionId: s.id,
    });
    expect(url.hash).toBe('#top');
    expect((await attempt((await session()).id, 'card', 'declined')).body.redirectTo).toBeNull();
  });

  it("appends the ids to the merchant's query as written: an encoded space stays %20, a plus stays a plus", async () => {
    const s = await session({ redirectUrl: 'https://shop.example.com/done?q=a%20b+c&x=%2B' });
    const done = await attempt(s.id, 'card', 'succeeded');
    expect(done.body.redirectTo).toBe(
      `https://shop.example.com/done?q=a%20b+c&x=%2B&transactionId=${s.transactionId}&checkoutSessionId=${s.id}`,
    );
  });

  /** A session stored as an older server could have, with a redirectUrl creates refuse now. */
  async function storedSession(redirectUrl: string) {
    const template = (await t.server.store.findPayment({ sessionId: (await session()).id }))!;
    const stored = {
      ...template,
      transactionId: randomUUID(),
      sessionId: `cs_${randomUUID().replace(/-/g, '')}`,
      redirectUrl,
    };
    await t.server.store.createPayment(stored);
    return stored as typeof stored & { sessionId: string };
  }

  it('sends the payer on with a bare 303 on the hosted page, and never to a stored script URL', async () => {
    const stored = await storedSession('javascript:alert(document.domain)');
    const res = await fetch(`${t.url}/pay/${stored.sessionId}/attempts`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      body: 'rail=card&outcome=succeeded',
      redirect: 'manual',
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`/pay/${stored.sessionId}?result=succeeded`);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).not.toMatch(/<a|href/i);
    expect((await read(stored.sessionId)).status).toBe('completed');
  });

  it('completes a payment whose stored redirectUrl no longer parses, and redirects nowhere rather than failing', async () => {
    const stored = await storedSession('https://shop.example.com:99999/done');
    const done = await attempt(stored.sessionId, 'card', 'succeeded');
    expect(done.status).toBe(200);
    expect(done.body.redirectTo).toBeNull();
    expect((await read(stored.sessionId)).status).toBe('completed');
  });

  it('404s an attempt on an unknown session', async () => {
    expect((await attempt('cs_nope', 'card', 'succeeded')).status).toBe(404);
  });
});

describe('payment links', () => {
  const linkBody = (overrides: Record<string, unknown> = {}) => ({
    amount: { total: 120 },
    creditorReference: { reference: 'RENT-JUNE' },
    redirectUrl: 'https://shop.example.com/paid?x=1',
    checkoutMethod: 'open_banking',
    ...overrides,
  });

  it('creates a link whose id is its transaction id (a UUID), reads it back, and isolates it by organisation', async () => {
    const created = await t.request('POST', '/api/payment-links', {
      token: org.testToken,
      body: linkBody({ foreignTransactionId: 'rent-6' }),
    });
    expect(created.status).toBe(200);
    expect(created.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.body).toMatchObject({
      status: 'created',
      foreignTransactionId: 'rent-6',
      amount: { total: 120, currency: 'NZD' },
    });
    expect((await t.request('GET', `/api/payment-links/${created.body.id}`, { token: org.testToken })).body).toEqual(
      created.body,
    );
    const other = await t.organisation();
    expect((await t.request('GET', `/api/payment-links/${created.body.id}`, { token: other.testToken })).status).toBe(
      404,
    );
  });

  it('is paid through the sandbox, with only transactionId appended to the redirect', async () => {
    const link = (await t.request('POST', '/api/payment-links', { token: org.testToken, body: linkBody() })).body;
    const paid = await t.request('POST', `/sandbox/payment-links/${link.id}/attempts`, {
      token: SANDBOX_TOKEN,
      body: { rail: 'open_banking', outcome: 'succeeded' },
    });
    expect(paid.body.paymentLink.status).toBe('completed');
    expect(Object.fromEntries(new URL(paid.body.redirectTo).searchParams)).toEqual({ x: '1', transactionId: link.id });
  });

  it('answers the retired GET /api/transaction/{id} while payable, and 404 once it settles', async () => {
    const link = (await t.request('POST', '/api/payment-links', { token: org.testToken, body: linkBody() })).body;
    const payable = await t.request('GET', `/api/transaction/${link.id}`, { token: org.testToken });
    expect(payable.status).toBe(200);
    expect(payable.body.transactionId).toBe(link.id);
    await t.request('POST', `/sandbox/payment-links/${link.id}/attempts`, {
      token: SANDBOX_TOKEN,
      body: { rail: 'open_banking', outcome: 'declined' },
    });
    expect((await t.request('GET', `/api/transaction/${link.id}`, { token: org.testToken })).status).toBe(200);
    await t.request('POST', `/sandbox/payment-links/${link.id}/attempts`, {
      token: SANDBOX_TOKEN,
      body: { rail: 'open_banking', outcome: 'succeeded' },
    });
    expect((await t.request('GET', `/api/transaction/${link.id}`, { token: org.testToken })).status).toBe(404);
  });

  it('applies the same configuration errors as sessions', async () => {
    const aud = await t.organisation({ settlementCurrency: 'AUD' });
    const answer = await t.request('POST', '/api/payment-links', { token: aud.testToken, body: linkBody() });
    expect(answer.body.error.code).toBe('open_banking_currency_unsupported');
  });
});

describe('legacy transactions', () => {
  it('creates one through POST /api/transaction, reads it on the retired path, and pays it through the sandbox', async () => {
    const created = await t.request('POST', '/api/transaction', {
      token: org.testToken,
      body: {
        amount: { total: 42 },
        creditorReference: { reference: 'LEGACY-7' },
        redirectUrl: 'https://shop.example.com/paid',
        checkoutMethod: 'card',
      },
    });
    expect(created.status).toBe(200);
    const id = created.body.transactionId;
    expect((await t.request('GET', `/api/transaction/${id}`, { token: org.testToken })).body.status).toBe('created');
    const paid = await t.request('POST', `/sandbox/transactions/${id}/attempts`, {
      token: SANDBOX_TOKEN,
      body: { rail: 'card', outcome: 'succeeded' },
    });
    expect(paid.body.transaction).toMatchObject({ status: 'completed', transactionType: 'card' });
    expect((await t.request('GET', `/api/transaction/${id}`, { token: org.testToken })).body.status).toBe('completed');
  });

  it('does not pay a session or a link through the transactions attempts path', async () => {
    const s = await session();
    expect(
      (
        await t.request('POST', `/sandbox/transactions/${s.transactionId}/attempts`, {
          token: SANDBOX_TOKEN,
          body: { rail: 'card', outcome: 'succeeded' },
        })
      ).status,
    ).toBe(404);
  });
});

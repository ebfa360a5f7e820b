/**
 * What the sandbox API refuses, whoever holds its token (openapi/sandbox.yaml): wrong
 * tokens are throttled per source address (429 with Retry-After, in the sandbox's error
 * envelope) while the right one keeps opening it from every address; and a live-mode
 * payment is never paid through it (400 invalid_state), on any of its three attempt routes.
 *
 * Requests sent from other loopback addresses (127.0.0.x) stand for other machines.
 *
 * @tags postgres
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { THROTTLED_PACE_MS } from '../../server/auth/credentials.ts';
import { SANDBOX_FAILURE_LIMIT } from '../../server/http/backends.ts';
import {
  type Answer,
  contractProblems,
  type Org,
  SANDBOX_TOKEN,
  sessionRequest,
  startTestServer,
  type TestServer,
} from '../support/server.ts';

let t: TestServer;
let org: Org;
beforeAll(async () => {
  t = await startTestServer();
  org = await t.organisation();
});
afterAll(() => t.close());

/** A sandbox request sent from `localAddress`, its answer checked against the description. */
function sandboxFrom(localAddress: string, token: string | undefined, method: string, path: string, body?: unknown) {
  return new Promise<Answer>((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    const req = http.request(`${t.url}${path}`, { method, localAddress, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        const answerHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers))
          if (typeof value === 'string') answerHeaders.set(name, value);
        const answer: Answer = { status: res.statusCode!, headers: answerHeaders, body: JSON.parse(text), text };
        const problems = contractProblems(method, path, answer);
        if (problems.length > 0) reject(new Error(problems.join('\n')));
        else resolve(answer);
      });
    });
    req.on('error', reject).end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const advance = (from: string, token: string | undefined) =>
  sandboxFrom(from, token, 'POST', `/sandbox/organisations/${org.id}/clock`, { advanceSeconds: 0 });

describe('wrong sandbox tokens', () => {
  it(`are answered 401 until an address has sent ${SANDBOX_FAILURE_LIMIT} within a minute, then 429 with Retry-After, one token compared a second; the right one is let in at its turn`, async () => {
    const guesser = '127.0.0.6';
    for (let i = 0; i < SANDBOX_FAILURE_LIMIT; i++) {
      const answer = await advance(guesser, `${SANDBOX_TOKEN}-${i}`);
      expect(answer.status).toBe(401);
      expect(answer.body.error.code).toBe('unauthorized');
    }
    const refused = await advance(guesser, `${SANDBOX_TOKEN}-x`);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: 'unauthorized', param: null });
    expect(refused.body.error.message).toMatch(/too many wrong sandbox tokens/i);
    const seconds = Number(refused.headers.get('retry-after'));
    expect(Number.isInteger(seconds) && seconds >= 1 && seconds <= 60).toBe(true);

    // A throttled address has one token compared a second, so guessing slows to that pace
    // however many are sent at once: even the right token, sent within the second, is
    // answered 429 uncompared, and told to come back in a second.
    const early = await advance(guesser, SANDBOX_TOKEN);
    expect(early.status).toBe(429);
    expect(early.headers.get('retry-after')).toBe('1');
    // In its turn the right token opens the sandbox from that address, every time, on any route.
    const nextTurn = () => new Promise((resolve) => setTimeout(resolve, THROTTLED_PACE_MS + 50));
    for (let i = 0; i < 2; i++) {
      await nextTurn();
      expect((await advance(guesser, SANDBOX_TOKEN)).status).toBe(200);
    }
    const settings = {
      settlementCurrency: 'AUD',
      cardEnabled: true,
      openBankingApproved: false,
      settlementAccount: false,
    };
    await nextTurn();
    expect((await sandboxFrom(guesser, SANDBOX_TOKEN, 'POST', '/sandbox/organisations', settings)).status).toBe(200);
    // Still refused for wrong ones: a success does not reset the count.
    await nextTurn();
    const wrong = await advance(guesser, 'wrong');
    expect(wrong.status).toBe(429);
    expect(Number(wrong.headers.get('retry-after'))).toBeGreaterThan(1);
    // Offering no token guesses nothing: the plain 401, with its challenge.
    const none = await advance(guesser, undefined);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="sandbox"');
    // Another address has its own count.
    expect((await advance('127.0.0.7', 'wrong')).status).toBe(401);
  });
});

describe('live-mode payments', () => {
  const refusedLive = (answer: Answer) => {
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'invalid_state', param: null });
    expect(answer.body.error.message).toMatch(/live-mode payments cannot be driven by the sandbox/);
  };
  const attempt = (path: string) =>
    t.request('POST', path, { token: SANDBOX_TOKEN, body: { rail: 'open_banking', outcome: 'succeeded' } });

  it('a live checkout session is refused by the sandbox and stays unpaid; a test one is paid', async () => {
    const live = (await t.request('POST', '/api/checkout-sessions', { token: org.liveToken, body: sessionRequest() }))
      .body;
    expect(live.testMode).toBe(false);
    for (const outcome of ['succeeded', 'declined', 'pending'] as const) {
      const answer = await t.request('POST', `/sandbox/checkout-sessions/${live.id}/attempts`, {
        token: SANDBOX_TOKEN,
        body: { rail: 'card', outcome },
      });
      refusedLive(answer);
    }
    const read = await t.request('GET', `/api/checkout-sessions/${live.id}`, { token: org.liveToken });
    expect(read.body.status).toBe('created');

    const test = (await t.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() }))
      .body;
    expect((await attempt(`/sandbox/checkout-sessions/${test.id}/attempts`)).body.session.status).toBe('completed');
  });

  it('a live payment link and a live legacy transaction are refused too, and stay unpaid', async () => {
    const link = (
      await t.request('POST', '/api/payment-links', {
        token: org.liveToken,
        body: {
          amount: { total: 120 },
          creditorReference: { reference: 'RENT-JUNE' },
          redirectUrl: 'https://shop.example.com/paid',
          checkoutMethod: 'open_banking',
        },
      })
    ).body;
    refusedLive(await attempt(`/sandbox/payment-links/${link.id}/attempts`));
    expect((await t.request('GET', `/api/payment-links/${link.id}`, { token: org.liveToken })).body.status).toBe(
      'created',
    );

    const tx = (
      await t.request('POST', '/api/transaction', {
        token: org.liveToken,
        body: {
          amount: { total: 42 },
          creditorReference: { reference: 'LEGACY-7' },
          redirectUrl: 'https://shop.example.com/paid',
          checkoutMethod: 'open_banking',
        },
      })
    ).body;
    refusedLive(await attempt(`/sandbox/transactions/${tx.transactionId}/attempts`));
    expect((await t.request('GET', `/api/transaction/${tx.transactionId}`, { token: org.liveToken })).body.status).toBe(
      'created',
    );
  });
});

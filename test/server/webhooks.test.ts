/**
 * Webhook delivery against real local receivers (service document: Events; server/README.md:
 * webhook targets): signatures checked with the project's verifier and with Stripe's
 * verifier of the same scheme, the exact payload, attempts per rail for each kind of
 * answer, nothing sent for declines, expiry or without webhookUrl, rotation, unsigned
 * deliveries, legacy bodies, and the target check made again at delivery time.
 *
 * @tags postgres, long, slow
 */
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MissingSignatureError, SignatureMismatchError, verifyWebhook } from '../../client/webhooks.ts';
import { sendWebhook } from '../../server/webhooks/send.ts';
import { startReceiver, type Behaviour, type Receiver } from '../support/receiver.ts';
import { VirtualClock } from '../support/virtual-clock.ts';
import { sessionRequest, startTestServer, type Org, type TestServer } from '../support/server.ts';
import { paced, until } from '../support/pace.ts';

let t: TestServer;
let receiver: Receiver;
const stripe = new Stripe('sk_test_unused');

beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await t.close();
});

let pathCounter = 0;
/** A receiver path of its own for one test, answering as told. */
function hookPath(behaviour?: Behaviour): string {
  const path = `/hooks/${++pathCounter}`;
  if (behaviour) receiver.behave(path, behaviour);
  return path;
}

async function paidSession(
  org: Org,
  options: {
    rail?: 'card' | 'open_banking';
    path?: string;
    checkoutMethod?: string;
    token?: string;
    /** Another server than the file's (one with a virtual clock). */
    server?: TestServer;
  } = {},
) {
  const server = options.server ?? t;
  const rail = options.rail ?? 'card';
  const body = sessionRequest({
    checkoutMethod: options.checkoutMethod ?? rail,
    foreignTransactionId: `order-${pathCounter}`,
    ...(options.path ? { webhookUrl: `${receiver.url}${options.path}` } : {}),
  });
  const created = await server.request('POST', '/api/checkout-sessions', {
    token: options.token ?? org.testToken,
    body,
  });
  expect(created.status).toBe(200);
  const paid = await server.sandbox('POST', `/sandbox/checkout-sessions/${created.body.id}/attempts`, {
    rail,
    outcome: 'succeeded',
  });
  return { session: created.body, paid };
}

const deliveries = (query: string, server = t) =>
  server.sandbox('GET', `/sandbox/webhook-deliveries?${query}`).then((r: any) => r.deliveries as any[]);
const settle = (ms = 300) => new Promise((r) => setTimeout(r, ms));

describe('a signed delivery on completion', () => {
  it('sends checkout_session.completed with the exact documented payload, signed t=,v1=', async () => {
    const org = await t.organisation();
    const path = hookPath();
    const { session, paid } = await paidSession(org, { path });
    const [delivery] = await receiver.waitFor(path, 1);
    const read = await t.request('GET', `/api/checkout-sessions/${session.id}`, { token: org.testToken });
    expect(delivery!.headers['content-type']).toBe('application/json');
    expect(delivery!.body).toEqual({
      event: 'checkout_session.completed',
      createdAt: read.body.updatedAt,
      checkoutSessionId: session.id,
      transactionId: paid.session.transactionId,
      foreignTransactionId: read.body.foreignTransactionId,
    });
    const header = String(delivery!.headers['service-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const t0 = Number(/t=(\d+)/.exec(header)![1]);
    expect(Math.abs(t0 - Date.now() / 1000)).toBeLessThan(10);
    // The project's verifier, over the exact bytes received.
    expect(verifyWebhook(delivery!.raw, header, org.webhookSigningSecret)).toMatchObject({
      kind: 'event',
      event: { transactionId: paid.session.transactionId },
    });
    // Stripe's verifier of the same scheme, keyed with the whole whsec_ string.
    expect(stripe.webhooks.signature!.verifyHeader(delivery!.raw, header, org.webhookSigningSecret, 300)).toBe(true);
    expect(() => verifyWebhook(delivery!.raw, header, 'whsec_someone_else')).toThrow(SignatureMismatchError);
  });

  it('delivers the open-banking webhook inline: it has arrived when the attempt is answered', async () => {
    const org = await t.organisation();
    const path = hookPath();
    await paidSession(org, { path, rail: 'open_banking' });
    expect(receiver.deliveries.filter((d) => d.path === path)).toHaveLength(1);
  });

  it("sends a payment link's webhook with checkoutSessionId null and the link id as transactionId", async () => {
    const org = await t.organisation();
    const path = hookPath();
    const link = await t.request('POST', '/api/payment-links', {
      token: org.testToken,
      body: {
        amount: { total: 12 },
        creditorReference: { reference: 'LINK-1' },
        redirectUrl: 'https://shop.example.com/paid',
        checkoutMethod: 'card',
        webhookUrl: `${receiver.url}${path}`,
      },
    });
    await t.sandbox('POST', `/sandbox/payment-links/${link.body.id}/attempts`, { rail: 'card', outcome: 'succeeded' });
    const [delivery] = await receiver.waitFor(path, 1);
    expect(delivery!.body).toMatchObject({
      event: 'checkout_session.completed',
      checkoutSessionId: null,
      transactionId: link.body.id,
      foreignTransactionId: null,
    });
    expect(
      verifyWebhook(delivery!.raw, String(delivery!.headers['service-signature']), org.webhookSigningSecret).kind,
    ).toBe('event');
  });

  it('sends a legacy transaction the two-field body, unsigned', async () => {
    const org = await t.organisation();
    const path = hookPath();
    const tx = await t.request('POST', '/api/transaction', {
      token: org.testToken,
      body: {
        amount: { total: 42 },
        creditorReference: { reference: 'LEGACY-7' },
        redirectUrl: 'https://shop.example.com/paid',
        checkoutMethod: 'card',
        webhookUrl: `${receiver.url}${path}`,
        foreignTransactionId: 'legacy-7',
      },
    });
    await t.sandbox('POST', `/sandbox/transactions/${tx.body.transactionId}/attempts`, {
      rail: 'card',
      outcome: 'succeeded',
    });
    const [delivery] = await receiver.waitFor(path, 1);
    expect(delivery!.raw.toString()).toBe(
      JSON.stringify({ transactionId: tx.body.transactionId, foreignTransactionId: 'legacy-7' }),
    );
    expect(delivery!.headers['service-signature']).toBeUndefined();
    expect(verifyWebhook(delivery!.raw, undefined, org.webhookSigningSecret, { allowLegacy: true }).kind).toBe(
      'legacy',
    );
    // The receiver sees the attempt before the server records its answer.
    const records = await until(
      () => deliveries(`transactionId=${tx.body.transactionId}`),
      (found) => found.length > 0,
    );
    expect(records[0]).toMatchObject({ attempt: 1, signed: false, responseStatus: 200, final: true });
  });
});

describe('attempts per rail', () => {
  async function scenario(rail: 'card' | 'open_banking', behaviour: Behaviour) {
    const org = await t.organisation();
    const path = hookPath(behaviour);
    const { session } = await paidSession(org, { path, rail });
    const list = () => deliveries(`checkoutSessionId=${session.id}`);
    const waitForAttempts = async (n: number) => {
      await receiver.waitFor(path, n, 20_000);
      await until(list, (found) => found.length >= n);
    };
    return { org, path, session, list, waitForAttempts };
  }

  it.concurrent.each([
    [500, 3],
    [408, 3],
    [429, 3],
    [503, 3],
    [302, 3],
    [307, 3],
    [400, 1],
    [404, 1],
    [410, 1],
  ])(
    'card rail, receiver answers %i: %i attempt(s) in total, the retries 1 and 5 minutes apart on the org clock',
    async (status, expected) => {
      // A redirect is an answer that is not 2xx, so a failure (Events: retries); its
      // Location is never followed, so nothing ever reaches the address it names.
      const moved = `/moved/card-${status}`;
      const s = await scenario('card', { status, location: `${receiver.url}${moved}` });
      await s.waitForAttempts(1);
      // Not before the first retry is due.
      await t.advanceClock(s.org.id, 59);
      await settle();
      expect(await s.list()).toHaveLength(1);
      await t.advanceClock(s.org.id, 1);
      if (expected > 1) await s.waitForAttempts(2);
      await t.advanceClock(s.org.id, 299);
      await settle();
      expect((await s.list()).length).toBe(Math.min(expected, 2));
      await t.advanceClock(s.org.id, 1);
      if (expected > 2) await s.waitForAttempts(3);
      await t.advanceClock(s.org.id, 3600);
      await settle(400);
      const list = await s.list();
      expect(list.map((d) => d.attempt)).toEqual([1, 2, 3].slice(0, expected));
      expect(list.map((d) => d.responseStatus)).toEqual(Array(expected).fill(status));
      expect(list.map((d) => d.final)).toEqual([...Array(expected - 1).fill(false), true]);
      const bodies = receiver.deliveries.filter((d) => d.path === s.path).map((d) => d.raw.toString());
      expect(bodies).toHaveLength(expected);
      expect(new Set(bodies).size).toBe(1); // identical bytes, so createdAt is identical on every attempt
      expect(receiver.deliveries.filter((d) => d.path === moved)).toHaveLength(0);
    },
    paced(30_000),
  );

  it.concurrent.each([
    [200, ''],
    [201, 'created'],
    [202, ''],
    [204, ''],
  ])(
    'card rail, receiver answers %i with body %j: delivered at the first attempt, never retried',
    async (status, body) => {
      // Success is any 2xx, whatever its body (Events: retries).
      const s = await scenario('card', { status, body });
      await s.waitForAttempts(1);
      await t.advanceClock(s.org.id, 3600);
      await settle(400);
      expect(await s.list()).toMatchObject([{ attempt: 1, responseStatus: status, final: true, error: null }]);
      expect(receiver.deliveries.filter((d) => d.path === s.path)).toHaveLength(1);
    },
    paced(20_000),
  );

  it.concurrent(
    'card rail, receiver never answers: each attempt gives up after 5 seconds, 3 in total (a virtual clock)',
    async () => {
      // A server of its own whose answer waits run on a clock this test moves.
      const clock = new VirtualClock();
      const v = await startTestServer({ webhookPollIntervalMs: 25, webhookAnswerClock: clock.start });
      try {
        const org = await v.organisation();
        const path = hookPath({ hang: true });
        const { session } = await paidSession(org, { path, server: v });
        const list = () => deliveries(`checkoutSessionId=${session.id}`, v);
        for (const [attempt, retryAfter] of [
          [1, 0],
          [2, 60],
          [3, 300],
        ] as const) {
          if (retryAfter > 0) await v.advanceClock(org.id, retryAfter);
          await receiver.waitFor(path, attempt, 20_000);
          await until(
            () => clock.waiting,
            (waiting) => waiting > 0,
          );
          // Still waiting a millisecond before five seconds: no record of the attempt yet.
          clock.advance(4999);
          await settle(100);
          expect(await list()).toHaveLength(attempt - 1);
          clock.advance(1);
          expect((await until(list, (found) => found.length >= attempt)).at(-1)).toMatchObject({
            attempt,
            responseStatus: null,
            final: attempt === 3,
            error: expect.stringMatching(/5 seconds/),
          });
        }
        await v.advanceClock(org.id, 3600);
        await settle(300);
        expect((await list()).map((d) => d.attempt)).toEqual([1, 2, 3]);
      } finally {
        await v.close();
      }
    },
    paced(40_000),
  );

  it.concurrent.each([[500], [400], [408], [429], [302]])(
    'open-banking rail, receiver answers %i: one attempt, no retry',
    async (status) => {
      const moved = `/moved/open-banking-${status}`;
      const s = await scenario('open_banking', { status, location: `${receiver.url}${moved}` });
      expect(await s.list()).toMatchObject([{ attempt: 1, responseStatus: status, final: true }]);
      await t.advanceClock(s.org.id, 3600);
      await settle(400);
      expect(await s.list()).toHaveLength(1);
      expect(receiver.deliveries.filter((d) => d.path === s.path)).toHaveLength(1);
      expect(receiver.deliveries.filter((d) => d.path === moved)).toHaveLength(0);
    },
    paced(20_000),
  );

  it.concurrent(
    'open-banking rail, receiver never answers: one attempt that gives up after 5 seconds',
    async () => {
      const started = Date.now();
      const s = await scenario('open_banking', { hang: true });
      expect(Date.now() - started).toBeGreaterThanOrEqual(4900);
      expect(await s.list()).toMatchObject([{ attempt: 1, responseStatus: null, final: true }]);
    },
    paced(20_000),
  );
});

describe('when nothing is sent', () => {
  it('sends nothing for a declined attempt, a pending one, or without a webhookUrl', async () => {
    const org = await t.organisation();
    const path = hookPath();
    const created = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      body: sessionRequest({ checkoutMethod: 'card', webhookUrl: `${receiver.url}${path}` }),
    });
    await t.sandbox('POST', `/sandbox/checkout-sessions/${created.body.id}/attempts`, {
      rail: 'card',
      outcome: 'declined',
    });
    await t.sandbox('POST', `/sandbox/checkout-sessions/${created.body.id}/attempts`, {
      rail: 'card',
      outcome: 'pending',
    });
    const silent = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      body: sessionRequest({ checkoutMethod: 'card' }),
    });
    await t.sandbox('POST', `/sandbox/checkout-sessions/${silent.body.id}/attempts`, {
      rail: 'card',
      outcome: 'succeeded',
    });
    await settle(500);
    expect(receiver.deliveries.filter((d) => d.path === path)).toHaveLength(0);
    expect(await deliveries(`checkoutSessionId=${silent.body.id}`)).toEqual([]);
  });

  it('sends nothing on expiry, and an expired session cannot be paid', async () => {
    const org = await t.organisation();
    const path = hookPath();
    const created = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      body: sessionRequest({ checkoutMethod: 'card', webhookUrl: `${receiver.url}${path}` }),
    });
    await t.advanceClock(org.id, 24 * 3600 + 1);
    const refused = await t.request('POST', `/sandbox/checkout-sessions/${created.body.id}/attempts`, {
      token: 'sandbox-test-token',
      body: { rail: 'card', outcome: 'succeeded' },
    });
    expect(refused.body.error.code).toBe('invalid_state');
    await settle(400);
    expect(receiver.deliveries.filter((d) => d.path === path)).toHaveLength(0);
  });
});

describe('signing secret', () => {
  it('signs with the rotated secret from then on, so a retry no longer verifies against the old one', async () => {
    const org = await t.organisation();
    const path = hookPath({ status: 500 });
    const { session } = await paidSession(org, { path });
    const [first] = await receiver.waitFor(path, 1);
    expect(verifyWebhook(first!.raw, String(first!.headers['service-signature']), org.webhookSigningSecret).kind).toBe(
      'event',
    );
    const { webhookSigningSecret } = await t.sandbox('POST', `/sandbox/organisations/${org.id}/webhook-secret`);
    receiver.behave(path, { status: 200 });
    await t.advanceClock(org.id, 60);
    const [, second] = await receiver.waitFor(path, 2);
    const header = String(second!.headers['service-signature']);
    expect(verifyWebhook(second!.raw, header, webhookSigningSecret).kind).toBe('event');
    expect(() => verifyWebhook(second!.raw, header, org.webhookSigningSecret)).toThrow(SignatureMismatchError);
    const records = await until(
      () => deliveries(`checkoutSessionId=${session.id}`),
      (found) => found.length >= 2,
    );
    expect(records.map((d) => d.responseStatus)).toEqual([500, 200]);
  });

  it('still sends, with no Service-Signature header at all, when the secret cannot be resolved', async () => {
    const org = await t.organisation();
    await t.sandbox('POST', '/sandbox/faults', { kind: 'signing_secret_unavailable', orgId: org.id });
    const path = hookPath();
    const { session } = await paidSession(org, { path, rail: 'open_banking' });
    const [delivery] = await receiver.waitFor(path, 1);
    expect('service-signature' in delivery!.headers).toBe(false);
    expect(() => verifyWebhook(delivery!.raw, undefined, org.webhookSigningSecret)).toThrow(MissingSignatureError);
    // The receiver sees the attempt before the server records its answer.
    const records = await until(
      () => deliveries(`checkoutSessionId=${session.id}`),
      (found) => found.length >= 1,
    );
    expect(records).toMatchObject([{ signed: false, responseStatus: 200 }]);
  });
});

describe('the delivery history', () => {
  it('needs exactly one of transactionId and checkoutSessionId, and 404s for an unknown payment', async () => {
    expect((await t.request('GET', '/sandbox/webhook-deliveries', { token: 'sandbox-test-token' })).status).toBe(400);
    const both = await t.request('GET', '/sandbox/webhook-deliveries?transactionId=a&checkoutSessionId=b', {
      token: 'sandbox-test-token',
    });
    expect(both.status).toBe(400);
    // Both are to blame: each is named, and param is null.
    expect(both.body.error.param).toBeNull();
    expect(both.body.error.details.map((d: any) => d.field)).toEqual(['transactionId', 'checkoutSessionId']);
    expect(
      (await t.request('GET', '/sandbox/webhook-deliveries?checkoutSessionId=cs_nope', { token: 'sandbox-test-token' }))
        .status,
    ).toBe(404);
  });
});

describe('the target, checked again at delivery time after DNS resolution', () => {
  const resolvesTo = (address: string) =>
    ((_host: string, _opts: unknown, cb: (e: null, a: Array<{ address: string; family: number }>) => void) =>
      cb(null, [{ address, family: address.includes(':') ? 6 : 4 }])) as never;

  it.each([['127.0.0.1'], ['10.1.2.3'], ['192.168.0.10'], ['169.254.169.254'], ['::1'], ['fd00::1']])(
    'live mode refuses a name that now resolves to %s',
    async (address) => {
      const result = await sendWebhook('https://hooks.shop.example.com/webhooks', '{}', {}, 'live', {
        resolver: resolvesTo(address),
      });
      expect(result).toMatchObject({ status: null, refused: true });
    },
  );

  it.each([['10.1.2.3'], ['169.254.169.254'], ['fd00::1']])(
    'test mode refuses a name that now resolves to %s',
    async (address) => {
      const result = await sendWebhook('https://hooks.shop.example.com/webhooks', '{}', {}, 'test', {
        resolver: resolvesTo(address),
      });
      expect(result).toMatchObject({ status: null, refused: true });
    },
  );

  it('test mode refuses http to a name that resolves off loopback', async () => {
    const result = await sendWebhook('http://localhost.example.com/hooks', '{}', {}, 'test', {
      resolver: resolvesTo('93.184.216.34'),
    });
    expect(result.refused).toBe(true);
  });

  it('live mode refuses a loopback or private literal without connecting', async () => {
    for (const url of ['https://127.0.0.1/h', 'https://[::1]/h', 'http://127.0.0.1/h', 'https://10.0.0.1/h']) {
      expect((await sendWebhook(url, '{}', {}, 'live')).refused).toBe(true);
    }
  });
});

describe('a backlog of due card retries', () => {
  it(
    'is attempted at most 32 at a time, so slow receivers cannot take the descriptors; the rest wait their turn',
    async () => {
      // A server of its own, whose answer waits end when this test moves their clock.
      const clock = new VirtualClock();
      const v = await startTestServer({ webhookPollIntervalMs: 25, webhookAnswerClock: clock.start });
      try {
        const org = await v.organisation();
        const path = hookPath({ status: 500 });
        const backlog = 40;
        const sessions: string[] = [];
        for (let i = 0; i < backlog; i++) sessions.push((await paidSession(org, { path, server: v })).session.id);
        await receiver.waitFor(path, backlog);
        // A retry is due a minute after its failure is recorded, on the org clock, and a
        // record may land after its answer arrived: the clock moves once every one is in.
        const concluded = (attempt: number) =>
          Promise.all(sessions.map((id) => deliveries(`checkoutSessionId=${id}`, v))).then(
            (lists) =>
              lists.filter((list) => list.some((d) => d.attempt === attempt && (d.responseStatus ?? d.error) !== null))
                .length,
          );
        expect(
          await until(
            () => concluded(1),
            (n) => n === backlog,
          ),
        ).toBe(backlog);
        // Every retry is now due at once, and the receiver holds every answer.
        receiver.behave(path, { hang: true });
        await v.advanceClock(org.id, 60);
        const heldNow = () => receiver.deliveries.filter((d) => d.path === path).length - backlog;
        // The first 32 are attempted and held; a sender without the limit would send all 40,
        // and any beyond the limit would follow straight after the 32nd.
        await until(heldNow, (held) => held >= 32);
        await settle(500);
        const held = heldNow();
        expect(held).toBe(32);
        expect(
          await until(
            () => clock.waiting,
            (waiting) => waiting >= held,
          ),
        ).toBe(held);
        // Held answers time out after five seconds; then the others get their attempt.
        clock.advance(5000);
        await receiver.waitFor(path, backlog + held + 1, 20_000);
        // Each move of the clock ends the answers then held; the next attempts follow. A move
        // may end an attempt's wait before its bytes reach the receiver (it is still made and
        // recorded, unanswered), so the records say that every entry had its turn.
        const retried = await until(
          () => {
            clock.advance(5000);
            return concluded(2);
          },
          (n) => n === backlog,
          20_000,
        );
        expect(retried).toBe(backlog);
      } finally {
        // A wait still running would hold the server's stop: end them all.
        clock.advance(60_000);
        await v.close();
      }
    },
    paced(40_000),
  );
});

/**
 * The merchant receiver example against the in-process reference server: a real payment
 * delivers a real signed webhook, the order is fulfilled once however often the event
 * arrives, forged deliveries are refused, and reconciliation catches a missed webhook.
 */
import type { AddressInfo } from 'node:net';
import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPaymentClient, signWebhook } from '../../client/index.ts';
import { createReceiver, openShopDb, placeOrder, reconcile, type Shop } from '../../examples/merchant-receiver.ts';
import { startTestServer, type Org, type TestServer } from '../support/server.ts';
import { paced, until } from '../support/pace.ts';

let t: TestServer;
let org: Org;
let shop: Shop;
let receiver: http.Server;
let receiverUrl: string;
const fulfilled: string[] = [];

beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 20 });
  org = await t.organisation();
  shop = {
    client: createPaymentClient({
      baseUrl: t.url,
      clientId: org.apiKeys.test.clientId,
      clientSecret: org.apiKeys.test.clientSecret,
    }),
    db: openShopDb(),
    signingSecret: org.webhookSigningSecret,
    fulfil: (orderId) => fulfilled.push(orderId),
  };
  receiver = createReceiver(shop);
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`;
});
afterAll(async () => {
  await new Promise((resolve) => receiver.close(resolve));
  await t.close();
});

async function defined<T>(probe: () => T | undefined, timeoutMs = 5000): Promise<T> {
  const value = await until(probe, (found) => found !== undefined, timeoutMs);
  if (value === undefined) throw new Error(`nothing after ${paced(timeoutMs)} ms`);
  return value;
}

const paymentIdOf = (orderId: string) =>
  shop.db.prepare<[string], { payment_id: string }>('SELECT payment_id FROM orders WHERE order_id = ?').get(orderId)!
    .payment_id;
const post = (body: string, signature?: string) =>
  fetch(receiverUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(signature ? { 'service-signature': signature } : {}) },
    body,
  });

describe('merchant receiver example', () => {
  it('fulfils an order once when its payment completes, and answers 200 to every repeat', async () => {
    await placeOrder(shop, {
      id: 'A-1',
      total: 20,
      webhookUrl: receiverUrl,
      redirectUrl: 'https://shop.example/thanks',
    });
    const sessionId = paymentIdOf('A-1');
    await t.sandbox('POST', `/sandbox/checkout-sessions/${sessionId}/attempts`, { rail: 'card', outcome: 'succeeded' });
    await defined(() => (fulfilled.includes('A-1') ? true : undefined));

    const { deliveries } = await t.sandbox<{ deliveries: { transactionId: string; responseStatus: number }[] }>(
      'GET',
      `/sandbox/webhook-deliveries?checkoutSessionId=${sessionId}`,
    );
    expect(deliveries.map((d) => d.responseStatus)).toEqual([200]);
    const transactionId = deliveries[0]!.transactionId;

    const body = JSON.stringify({
      event: 'checkout_session.completed',
      createdAt: new Date().toISOString(),
      checkoutSessionId: sessionId,
      transactionId,
      foreignTransactionId: 'A-1',
    });
    const repeats = await Promise.all(
      Array.from({ length: 10 }, () => post(body, signWebhook(body, org.webhookSigningSecret))),
    );
    expect(repeats.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(fulfilled.filter((id) => id === 'A-1')).toHaveLength(1);
  });

  it('refuses unsigned, tampered and re-serialised deliveries with 400, and ignores unknown events with 200', async () => {
    await placeOrder(shop, {
      id: 'B-1',
      total: 5,
      webhookUrl: receiverUrl,
      redirectUrl: 'https://shop.example/thanks',
    });
    const sessionId = paymentIdOf('B-1');
    await t.sandbox('POST', `/sandbox/checkout-sessions/${sessionId}/attempts`, { rail: 'card', outcome: 'succeeded' });
    // The session is paid, but none of these deliveries may be the reason it is fulfilled.
    const body = `{"event":"checkout_session.completed","createdAt":"2026-01-01T00:00:00Z","checkoutSessionId":"${sessionId}","transactionId":"00000000-0000-4000-8000-000000000001","foreignTransactionId":null}`;
    const signature = signWebhook(body, org.webhookSigningSecret);
    expect((await post(body)).status).toBe(400);
    expect((await post(body.replace('2026', '2027'), signature)).status).toBe(400);
    expect((await post(JSON.stringify(JSON.parse(body), null, 2), signature)).status).toBe(400);
    const unknown = '{"event":"checkout_session.refunded","transactionId":"00000000-0000-4000-8000-000000000002"}';
    expect((await post(unknown, signWebhook(unknown, org.webhookSigningSecret))).status).toBe(200);
    expect(
      shop.db.prepare('SELECT count(*) AS n FROM processed_transactions WHERE transaction_id LIKE ?').get('00000000%'),
    ).toEqual({ n: 0 });
  });

  it('reconciles an order whose webhook never arrived by reading the session back', async () => {
    await placeOrder(shop, {
      id: 'C-1',
      total: 7,
      webhookUrl: 'http://127.0.0.1:9/unreachable',
      redirectUrl: 'https://shop.example/thanks',
    });
    await placeOrder(shop, {
      id: 'C-2',
      total: 8,
      webhookUrl: 'http://127.0.0.1:9/unreachable',
      redirectUrl: 'https://shop.example/thanks',
    });
    await t.sandbox('POST', `/sandbox/checkout-sessions/${paymentIdOf('C-1')}/attempts`, {
      rail: 'open_banking',
      outcome: 'succeeded',
    });
    const done = await reconcile(shop);
    expect(done).toContain('C-1');
    expect(done).not.toContain('C-2');
    expect(await reconcile(shop)).not.toContain('C-1');
    expect(fulfilled.filter((id) => id === 'C-1')).toHaveLength(1);
  });

  it('places an order once however often it is retried', async () => {
    const first = await placeOrder(shop, {
      id: 'D-1',
      total: 9,
      webhookUrl: receiverUrl,
      redirectUrl: 'https://shop.example/thanks',
    });
    const again = await placeOrder(shop, {
      id: 'D-1',
      total: 9,
      webhookUrl: receiverUrl,
      redirectUrl: 'https://shop.example/thanks',
    });
    expect(again).toBe(first);
  });
});

/**
 * A merchant's side of a payment, as the service document asks for it (Events: Response
 * and retry behaviour, Receiver verification steps; Checkout session read):
 *
 * 1. `placeOrder` creates a checkout session with a `webhookUrl`, keyed by the order id so
 *    a retried order never makes a second payment.
 * 2. The receiver verifies every delivery against the raw bytes, ignores events it does
 *    not know (answering 2xx), reads the payment back (the webhook is a prompt, not the
 *    answer), and fulfils once: a unique constraint on `transactionId` makes a repeated
 *    delivery a no-op that still gets 200.
 * 3. `reconcile` reads back every unfulfilled order, because retries run out and the
 *    open banking rail has none.
 *
 * Run it: PAYMENT_BASE_URL=http://127.0.0.1:4010 CLIENT_ID=... CLIENT_SECRET=...
 * WEBHOOK_SECRET=whsec_... npx tsx examples/merchant-receiver.ts
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import {
  COMPLETED_EVENT,
  SIGNATURE_HEADER,
  WebhookVerificationError,
  createPaymentClient,
  verifyWebhook,
  type PaymentClient,
  type VerifiedWebhook,
} from '@payment-service/client';

export interface Shop {
  client: PaymentClient;
  db: Database.Database;
  /** The signing secret of the organisation (`whsec_...`), from the portal. */
  signingSecret: string;
  /** Called once per order when its payment is confirmed. */
  fulfil?: (orderId: string) => void;
}

/** The merchant's tables: orders, and the deliveries already acted on (unique per transaction). */
export function openShopDb(file = ':memory:'): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(`
    CREATE TABLE IF NOT EXISTS orders (
      order_id TEXT PRIMARY KEY,
      payment_id TEXT NOT NULL UNIQUE,  -- the cs_ id of the checkout session
      fulfilled_at TEXT
    );
    CREATE TABLE IF NOT EXISTS processed_transactions (
      transaction_id TEXT PRIMARY KEY,  -- the uniqueness guarantee deduplication relies on
      order_id TEXT NOT NULL,
      processed_at TEXT NOT NULL
    );
  `);
  return db;
}

/** Creates the payment for an order and returns the page to send the payer to. */
export async function placeOrder(
  shop: Shop,
  order: { id: string; total: number; webhookUrl: string; redirectUrl: string },
): Promise<string> {
  const session = await shop.client.createCheckoutSession(
    {
      type: 'single',
      amount: { total: order.total },
      creditorReference: { reference: order.id.slice(0, 12) },
      redirectUrl: order.redirectUrl,
      checkoutMethod: 'both',
      webhookUrl: order.webhookUrl,
      foreignTransactionId: order.id,
    },
    { idempotencyKey: `order-${order.id}` },
  );
  shop.db.prepare('INSERT OR IGNORE INTO orders (order_id, payment_id) VALUES (?, ?)').run(order.id, session.id);
  return session.url;
}

/**
 * Reads the payment back and, when it is paid, records the transaction and fulfils the
 * order in one transaction. Says what happened: `repeat` when the transaction was
 * already processed, `unpaid` when the read-back says not paid.
 */
async function confirmAndFulfil(
  shop: Shop,
  paymentId: string,
  transactionId: string | undefined,
): Promise<'fulfilled' | 'repeat' | 'unpaid' | 'unknown-order'> {
  const order = shop.db
    .prepare<[string], { order_id: string }>('SELECT order_id FROM orders WHERE payment_id = ?')
    .get(paymentId);
  if (!order) return 'unknown-order';
  const confirmation = await shop.client.confirmPayment(paymentId);
  if (!confirmation.paid) return 'unpaid';
  const txId = transactionId ?? (confirmation.payment as { transactionId?: string }).transactionId ?? paymentId;
  const fulfilOnce = shop.db.transaction(() => {
    const inserted = shop.db
      .prepare(
        'INSERT INTO processed_transactions (transaction_id, order_id, processed_at) VALUES (?, ?, ?) ON CONFLICT (transaction_id) DO NOTHING',
      )
      .run(txId, order.order_id, new Date().toISOString());
    if (inserted.changes === 0) return false;
    shop.db
      .prepare('UPDATE orders SET fulfilled_at = ? WHERE order_id = ? AND fulfilled_at IS NULL')
      .run(new Date().toISOString(), order.order_id);
    return true;
  });
  if (!fulfilOnce()) return 'repeat';
  shop.fulfil?.(order.order_id);
  return 'fulfilled';
}

/** Handles one delivery; returns the status to answer with. */
export async function handleDelivery(
  shop: Shop,
  rawBody: Buffer,
  signatureHeader: string | undefined,
): Promise<{ status: number; outcome: string }> {
  let verified: VerifiedWebhook;
  try {
    verified = verifyWebhook(rawBody, signatureHeader, shop.signingSecret);
  } catch (error) {
    if (error instanceof WebhookVerificationError) return { status: 400, outcome: error.message };
    throw error;
  }
  if (verified.kind !== 'event' || verified.event.event !== COMPLETED_EVENT) return { status: 200, outcome: 'ignored' };
  const { checkoutSessionId, transactionId } = verified.event;
  // A payment link has no session; its id is the transaction id. This shop sells through sessions.
  const outcome = await confirmAndFulfil(shop, checkoutSessionId ?? transactionId, transactionId);
  return { status: 200, outcome };
}

/** The receiver: POST only, raw bytes kept, a 64 KiB body limit. */
export function createReceiver(shop: Shop): http.Server {
  return http.createServer((req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > 65_536) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const header = req.headers[SIGNATURE_HEADER.toLowerCase()];
      handleDelivery(shop, Buffer.concat(chunks), Array.isArray(header) ? header[0] : header).then(
        ({ status, outcome }) =>
          res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ outcome })),
        // Reading the payment back failed: answer 500 so the service tries again (card
        // rail), and nothing was recorded, so `reconcile` will also find the order.
        () => res.writeHead(500, { 'content-type': 'application/json' }).end('{"outcome":"error"}'),
      );
    });
  });
}

/** Reads back every unfulfilled order and fulfils the paid ones; returns the ids fulfilled. */
export async function reconcile(shop: Shop): Promise<string[]> {
  const open = shop.db
    .prepare<[], { order_id: string; payment_id: string }>(
      'SELECT order_id, payment_id FROM orders WHERE fulfilled_at IS NULL',
    )
    .all();
  const fulfilled: string[] = [];
  for (const order of open) {
    if ((await confirmAndFulfil(shop, order.payment_id, undefined)) === 'fulfilled') fulfilled.push(order.order_id);
  }
  return fulfilled;
}

async function main() {
  const env = (name: string): string => {
    const value = process.env[name];
    if (value !== undefined) return value;
    console.error(`Set ${name}.`);
    process.exit(2);
  };
  const shop: Shop = {
    client: createPaymentClient({
      baseUrl: env('PAYMENT_BASE_URL'),
      clientId: env('CLIENT_ID'),
      clientSecret: env('CLIENT_SECRET'),
    }),
    db: openShopDb(process.env.SHOP_DB ?? 'shop.sqlite'),
    signingSecret: env('WEBHOOK_SECRET'),
    fulfil: (orderId) => console.log(`fulfilled order ${orderId}`),
  };
  const server = createReceiver(shop).listen(Number(process.env.PORT ?? 4020), '127.0.0.1', () => {
    console.log(`merchant receiver on http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`);
  });
  setInterval(
    () => void reconcile(shop).catch((error) => console.error('reconcile failed:', error.message)),
    60_000,
  ).unref();
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();

/**
 * What a merchant's webhook receiver does with one delivery, whatever framework serves it
 * (service document: Events; Receiver verification steps; Response and retry behaviour).
 * Each recipe beside this file hands it the raw body and the Service-Signature header, and
 * answers with what it returns:
 *
 * 1. Verify over the exact raw bytes (WebCrypto: the same code runs on Node, Deno, Bun,
 *    workers and edge runtimes); a bad or missing signature is answered 400.
 * 2. Answer 2xx to events it does not know: more will be added.
 * 3. Read the payment back: the webhook is a prompt, not the answer. A payment the read
 *    does not find (another account's, or another mode's) is acknowledged and left alone.
 * 4. Fulfil once per transactionId: the same event can arrive more than once, and a repeat
 *    is answered 200 too.
 *
 * A failure to read the payment back is thrown: the framework answers 500, so the card
 * rail tries again; open banking has no retry, so run `reconcile` as well (see
 * ../merchant-receiver.ts), reading back every order not yet fulfilled.
 */
import {
  COMPLETED_EVENT,
  createPaymentClient,
  NotFoundError,
  type PaymentClient,
  verifyWebhookAsync,
  WebhookVerificationError,
} from '@payment-service/client';

/** The shop's record of fulfilled transactions. */
export interface Fulfilments {
  /**
   * Records the transaction as fulfilled for the order: true the first time, false for a
   * repeat. In production this is an insert under a unique key on transactionId, so two
   * deliveries at once cannot both win.
   */
  claim(transactionId: string, orderId: string): Promise<boolean>;
}

export interface ReceiverSetup {
  client: PaymentClient;
  /** The organisation's signing secret (`whsec_...`), from the portal. */
  signingSecret: string;
  fulfilments: Fulfilments;
  /** Ships the order; called once per paid transaction. */
  fulfil(orderId: string): Promise<void> | void;
}

export interface Answer {
  status: number;
  body: { outcome: string };
}

const answer = (status: number, outcome: string): Answer => ({ status, body: { outcome } });

/** Handles one delivery: `rawBody` exactly as received, before any JSON parsing. */
export async function handleDelivery(
  setup: ReceiverSetup,
  rawBody: string | Uint8Array | ArrayBuffer,
  signature: string | null | undefined,
): Promise<Answer> {
  let verified: Awaited<ReturnType<typeof verifyWebhookAsync>>;
  try {
    verified = await verifyWebhookAsync(rawBody, signature, setup.signingSecret);
  } catch (error) {
    if (error instanceof WebhookVerificationError) return answer(400, `rejected: ${error.name}`);
    throw error;
  }
  if (verified.kind !== 'event' || verified.event.event !== COMPLETED_EVENT) return answer(200, 'ignored');
  const { checkoutSessionId, transactionId } = verified.event;
  let confirmation: Awaited<ReturnType<PaymentClient['confirmPayment']>>;
  try {
    confirmation = await setup.client.confirmPayment(checkoutSessionId ?? transactionId);
  } catch (error) {
    if (error instanceof NotFoundError) return answer(200, 'not ours');
    throw error;
  }
  if (!confirmation.paid) return answer(200, 'not paid');
  const orderId = confirmation.payment.foreignTransactionId ?? transactionId;
  if (!(await setup.fulfilments.claim(transactionId, orderId))) return answer(200, 'repeat');
  await setup.fulfil(orderId);
  return answer(200, 'fulfilled');
}

/** Fulfilments kept in this process: for trying a recipe out, not for production. */
export function fulfilmentsInMemory(): Fulfilments {
  const claimed = new Map<string, string>();
  return {
    async claim(transactionId, orderId) {
      if (claimed.has(transactionId)) return false;
      claimed.set(transactionId, orderId);
      return true;
    },
  };
}

/** The setup of a recipe run from the shell: PAYMENT_BASE_URL, CLIENT_ID, CLIENT_SECRET, WEBHOOK_SECRET. */
export function setupFromEnv(env: Record<string, string | undefined>): ReceiverSetup {
  const need = (name: string): string => {
    const value = env[name];
    if (!value) throw new Error(`Set ${name}.`);
    return value;
  };
  return {
    client: createPaymentClient({
      baseUrl: need('PAYMENT_BASE_URL'),
      clientId: need('CLIENT_ID'),
      clientSecret: need('CLIENT_SECRET'),
    }),
    signingSecret: need('WEBHOOK_SECRET'),
    fulfilments: fulfilmentsInMemory(),
    fulfil: (orderId) => console.log(`fulfilled order ${orderId}`),
  };
}

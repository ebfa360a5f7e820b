import { createPaymentClient, verifyWebhook, isCompletedEvent, NotFoundError } from '@payment-service/client';

const pay = createPaymentClient({
  baseUrl: process.env.PAYMENT_BASE_URL ?? 'http://127.0.0.1:4010',
  clientId: process.env.CLIENT_ID!,
  clientSecret: process.env.CLIENT_SECRET!,
});

// 1. Create the payment: the token, an Idempotency-Key kept across retries and the retries themselves are handled.
export const createPayment = (orderId: string, total: number) =>
  pay.createCheckoutSession(
    {
      type: 'single',
      amount: { total },
      creditorReference: { reference: orderId },
      checkoutMethod: 'both',
      redirectUrl: `https://shop.example/thanks/${orderId}`,
      webhookUrl: 'https://shop.example/webhooks',
      foreignTransactionId: orderId,
    },
    { idempotencyKey: orderId },
  ); // then send the payer to the returned `url`

// 2. On a webhook: verify the raw bytes (throws on a bad signature: answer 400), then read the payment back before fulfilling.
export async function onWebhook(
  rawBody: Buffer,
  signature: string | undefined,
  fulfil: (orderId: string) => Promise<void>,
) {
  const delivery = verifyWebhook(rawBody, signature, process.env.WEBHOOK_SECRET!);
  if (delivery.kind !== 'event' || !isCompletedEvent(delivery.event)) return; // unknown events: answer 2xx and ignore
  const read = await pay
    .confirmPayment(delivery.event.checkoutSessionId ?? delivery.event.transactionId)
    .catch((error) => {
      if (error instanceof NotFoundError) return undefined; // not this account's payment: answer 2xx and ignore
      throw error; // the read failed: answer 500, and the card rail tries again
    });
  if (read?.paid) await fulfil(read.payment.foreignTransactionId!); // deduplicate on transactionId (examples/receivers/)
}

import { verifyWebhook, WebhookVerificationError } from '@payment-service/client/webhooks';

/**
 * The status to answer a delivery with: `rawBody` is the request's exact bytes, read before
 * any JSON parsing (express.raw() on the route, request.arrayBuffer() in a Web handler).
 * On runtimes without node:crypto, `await verifyWebhookAsync(...)` does the same.
 */
export function answerDelivery(rawBody: Buffer, signature: string | undefined, secret: string, now?: number): number {
  try {
    const delivery = verifyWebhook(rawBody, signature, secret, now === undefined ? {} : { now });
    if (delivery.kind === 'event') {
      // Read the payment back before fulfilling: pay.confirmPayment(delivery.event.checkoutSessionId ?? ...)
    }
    return 200;
  } catch (error) {
    if (error instanceof WebhookVerificationError) return 400; // reject: bad or missing signature
    throw error;
  }
}

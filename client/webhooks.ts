/**
 * Signing and verifying webhook deliveries on Node (service document: Events, Signature
 * header), synchronously with node:crypto. The scheme and its steps are in signature.ts;
 * the asynchronous WebCrypto versions (webhooks-web.ts) are exported here too, and are
 * what browser and worker bundles get for this entry (package.json `exports` conditions).
 * Test vectors: `@payment-service/contract/webhook-signature-vectors.json`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  beginVerification,
  finishVerification,
  fromHex,
  nowSeconds,
  type RawBody,
  rawBytes,
  signatureHeader,
  signedPayload,
  type VerifiedWebhook,
  type VerifyOptions,
} from './signature.ts';

export * from './signature.ts';
export { computeSignatureAsync, signWebhookAsync, verifyWebhookAsync } from './webhooks-web.ts';

/** The hex `v1` digest of a body at a timestamp. */
export function computeSignature(rawBody: RawBody, secret: string, timestamp: number): string {
  return createHmac('sha256', secret)
    .update(signedPayload(rawBytes(rawBody), timestamp))
    .digest('hex');
}

/** The Service-Signature header value for a body (for the sender, and for tests). */
export function signWebhook(rawBody: RawBody, secret: string, options: { timestamp?: number } = {}): string {
  const timestamp = options.timestamp ?? nowSeconds();
  return signatureHeader(timestamp, computeSignature(rawBody, secret, timestamp));
}

/** Step 3: constant-time comparison of the expected digest with a given hex one. */
function sameDigest(expected: Buffer, givenHex: string): boolean {
  const given = fromHex(givenHex);
  return given !== undefined && given.length === expected.length && timingSafeEqual(expected, given);
}

/**
 * Verifies a delivery and returns its payload. `rawBody` must be the exact bytes received,
 * before any JSON parsing; `signatureHeader` the Service-Signature header, or undefined
 * when absent. Unknown `event` values are returned as they are, for the caller to ignore.
 */
export function verifyWebhook(
  rawBody: RawBody,
  signatureHeader: string | undefined | null,
  secret: string,
  options: VerifyOptions = {},
): VerifiedWebhook {
  const pending = beginVerification(rawBody, signatureHeader, options);
  if (pending.done) return pending.done;
  const expected = createHmac('sha256', secret).update(signedPayload(pending.body, pending.timestamp)).digest();
  const matched = pending.v1.some((digest) => sameDigest(expected, digest));
  return finishVerification(pending.body, pending.timestamp, matched, options);
}

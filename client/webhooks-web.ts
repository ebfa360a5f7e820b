/**
 * Signing and verifying webhook deliveries with WebCrypto (`globalThis.crypto.subtle`),
 * asynchronously: for browsers, Cloudflare Workers, Deno, Bun and Node alike. It imports
 * no Node built-in, so browser and worker bundles of `@payment-service/client/webhooks`
 * get this module (package.json `exports` conditions); Node gets it beside the
 * synchronous node:crypto functions. The scheme and its steps are in signature.ts.
 */
import {
  beginVerification,
  finishVerification,
  fromHex,
  nowSeconds,
  type RawBody,
  rawBytes,
  signatureHeader,
  signedPayload,
  toHex,
  type VerifiedWebhook,
  type VerifyOptions,
} from './signature.ts';

export * from './signature.ts';

type Subtle = typeof globalThis.crypto.subtle;
type HmacKey = Awaited<ReturnType<Subtle['importKey']>>;

/**
 * WebCrypto's SubtleCrypto. Browsers give it only to secure contexts (pages served over
 * https, or from localhost or 127.0.0.1): elsewhere it is missing, and the error says so
 * rather than that some property of undefined cannot be read.
 */
function subtle(): Subtle {
  const found = (globalThis.crypto as { subtle?: Subtle } | undefined)?.subtle;
  if (found) return found;
  throw new Error(
    'WebCrypto (crypto.subtle) is not available here, so webhook signatures cannot be checked: browsers offer it only to secure contexts (https:// pages, or http://localhost and http://127.0.0.1). Serve the page over https, or verify on your server.',
  );
}

/** The HMAC-SHA256 key: the UTF-8 bytes of the whole `whsec_...` string. */
function hmacKey(secret: string): Promise<HmacKey> {
  return subtle().importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
    'verify',
  ]);
}

/** The hex `v1` digest of a body at a timestamp. */
export async function computeSignatureAsync(rawBody: RawBody, secret: string, timestamp: number): Promise<string> {
  const payload = signedPayload(rawBytes(rawBody), timestamp);
  return toHex(new Uint8Array(await subtle().sign('HMAC', await hmacKey(secret), payload)));
}

/** The Service-Signature header value for a body (for the sender, and for tests). */
export async function signWebhookAsync(
  rawBody: RawBody,
  secret: string,
  options: { timestamp?: number } = {},
): Promise<string> {
  const timestamp = options.timestamp ?? nowSeconds();
  return signatureHeader(timestamp, await computeSignatureAsync(rawBody, secret, timestamp));
}

/**
 * Verifies a delivery and returns its payload, as `verifyWebhook` does: `rawBody` must be
 * the exact bytes received (`await request.arrayBuffer()` or `await request.text()`).
 * Each v1 digest is checked by WebCrypto's HMAC verify, which compares in constant time.
 */
export async function verifyWebhookAsync(
  rawBody: RawBody,
  signatureHeader: string | undefined | null,
  secret: string,
  options: VerifyOptions = {},
): Promise<VerifiedWebhook> {
  const pending = beginVerification(rawBody, signatureHeader, options);
  if (pending.done) return pending.done;
  const key = await hmacKey(secret);
  const payload = signedPayload(pending.body, pending.timestamp);
  let matched = false;
  for (const digest of pending.v1) {
    const given = fromHex(digest);
    if (given && (await subtle().verify('HMAC', key, given, payload))) matched = true;
  }
  return finishVerification(pending.body, pending.timestamp, matched, options);
}

/**
 * Signing and verifying webhook deliveries (service document: Events, Signature header).
 *
 * `Service-Signature: t=<unix_seconds>,v1=<hex>`, where the hex is HMAC-SHA256 over
 * `<t>.<raw body bytes>`, keyed with the UTF-8 bytes of the whole `whsec_...` secret.
 * Verification follows the document's receiver steps, each failure with its own error:
 * parts read by name, digest over the exact raw bytes, constant-time comparison, stale
 * timestamps refused, and the body parsed only after the signature holds.
 * Test vectors: openapi/webhook-signature-vectors.json.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components } from '@payment-service/contract';

export const SIGNATURE_HEADER = 'Service-Signature';
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type WebhookEvent = components['schemas']['WebhookEvent'];
export type LegacyWebhookPayload = components['schemas']['LegacyWebhookPayload'];

/** A verified delivery: a signed event (known or not), or, when allowed, an unsigned legacy body. */
export type VerifiedWebhook =
  | { kind: 'event'; event: WebhookEvent; timestamp: number }
  | { kind: 'legacy'; payload: LegacyWebhookPayload };

/** Base class of every verification failure: reject the delivery (answer 400). */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}
/** Raised when the delivery has no Service-Signature header. */
export class MissingSignatureError extends WebhookVerificationError {
  override name = 'MissingSignatureError';
}
/** Raised when the header lacks a `t` or a `v1` part. */
export class MalformedSignatureError extends WebhookVerificationError {
  override name = 'MalformedSignatureError';
}
/** Raised when no `v1` digest matches the body. */
export class SignatureMismatchError extends WebhookVerificationError {
  override name = 'SignatureMismatchError';
}
/** Raised when `t` is older than the tolerance (five minutes by default). */
export class TimestampOutsideToleranceError extends WebhookVerificationError {
  override name = 'TimestampOutsideToleranceError';
}
/** Raised when a correctly signed body is not the JSON object of a webhook. */
export class InvalidPayloadError extends WebhookVerificationError {
  override name = 'InvalidPayloadError';
}

type Body = string | Uint8Array;

const bytesOf = (body: Body) =>
  typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);

/** The hex `v1` digest of a body at a timestamp. */
export function computeSignature(rawBody: Body, secret: string, timestamp: number): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(`${timestamp}.`)
    .update(bytesOf(rawBody))
    .digest('hex');
}

/** The Service-Signature header value for a body (for the sender, and for tests). */
export function signWebhook(rawBody: Body, secret: string, options: { timestamp?: number } = {}): string {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  return `t=${timestamp},v1=${computeSignature(rawBody, secret, timestamp)}`;
}

/** Step 1: split on commas, each part on its first `=`; `t` and every `v1` by name. */
export function parseSignatureHeader(header: string): { timestamp: number; v1: string[] } {
  let timestamp: number | undefined;
  const v1: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === 't' && timestamp === undefined && /^\d+$/.test(value)) timestamp = Number(value);
    if (name === 'v1') v1.push(value);
  }
  if (timestamp === undefined)
    throw new MalformedSignatureError(
      `The ${SIGNATURE_HEADER} header has no t=<unix seconds> part. Reject the delivery.`,
    );
  if (v1.length === 0)
    throw new MalformedSignatureError(`The ${SIGNATURE_HEADER} header has no v1= digest. Reject the delivery.`);
  return { timestamp, v1 };
}

/** Step 3: constant-time comparison of two hex digests. */
function sameDigest(expectedHex: string, givenHex: string): boolean {
  const expected = Buffer.from(expectedHex, 'hex');
  const given = Buffer.from(givenHex, 'hex');
  return given.length === expected.length && /^[0-9a-f]+$/i.test(givenHex) && timingSafeEqual(expected, given);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseJson(rawBody: Body): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(bytesOf(rawBody).toString('utf8'));
  } catch {
    throw new InvalidPayloadError('The delivery body is not JSON.');
  }
  if (!isObject(value)) throw new InvalidPayloadError('The delivery body is not a JSON object.');
  return value;
}

export interface VerifyOptions {
  /** Largest accepted age of `t`, in seconds (default 300: the document's five minutes). */
  toleranceSeconds?: number;
  /** The receiver's clock, in unix seconds (default: now). */
  now?: number;
  /** Accept the unsigned legacy two-field body (transactions created the older way). */
  allowLegacy?: boolean;
}

/**
 * Verifies a delivery and returns its payload. `rawBody` must be the exact bytes received,
 * before any JSON parsing; `signatureHeader` the Service-Signature header, or undefined
 * when absent. Unknown `event` values are returned as they are, for the caller to ignore.
 */
export function verifyWebhook(
  rawBody: Body,
  signatureHeader: string | undefined | null,
  secret: string,
  options: VerifyOptions = {},
): VerifiedWebhook {
  if (signatureHeader === undefined || signatureHeader === null || signatureHeader === '') {
    if (options.allowLegacy) {
      const body = parseJson(rawBody);
      if (!('event' in body) && typeof body.transactionId === 'string') {
        return {
          kind: 'legacy',
          payload: {
            transactionId: body.transactionId,
            foreignTransactionId: typeof body.foreignTransactionId === 'string' ? body.foreignTransactionId : null,
          },
        };
      }
    }
    throw new MissingSignatureError(
      `The delivery has no ${SIGNATURE_HEADER} header. Reject it: only legacy transaction bodies (no "event") are sent unsigned.`,
    );
  }
  const { timestamp, v1 } = parseSignatureHeader(signatureHeader);
  const expected = computeSignature(rawBody, secret, timestamp);
  if (!v1.some((digest) => sameDigest(expected, digest))) {
    throw new SignatureMismatchError(
      'No v1 signature matches this body. Pass the exact raw request bytes (not re-serialised JSON) and the whole signing secret, whsec_ prefix included; after a secret rotation, deliveries signed with the old secret fail.',
    );
  }
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (now - timestamp > tolerance) {
    throw new TimestampOutsideToleranceError(
      `The signature timestamp is ${now - timestamp} s old, more than ${tolerance} s. Reject the delivery (it may be a replay); check the receiver's clock.`,
    );
  }
  const body = parseJson(rawBody);
  if (typeof body.event !== 'string' || typeof body.transactionId !== 'string') {
    throw new InvalidPayloadError('The signed body has no event or transactionId.');
  }
  return { kind: 'event', event: body as unknown as WebhookEvent, timestamp };
}

/**
 * The webhook signature scheme without its cryptography (service document: Events,
 * Signature header, Receiver verification steps), shared by the Node verifier
 * (webhooks.ts, node:crypto, synchronous) and the WebCrypto one (webhooks-web.ts, for
 * browsers, workers, Deno, Bun and Node alike). It imports nothing, so it loads anywhere.
 *
 * `Service-Signature: t=<unix_seconds>,v1=<hex>`, where the hex is HMAC-SHA256 over
 * `<t>.<raw body bytes>`, keyed with the UTF-8 bytes of the whole `whsec_...` secret.
 * Verification is the document's steps, each failure with its own error: the raw bytes
 * checked first (a parsed body cannot be verified), the header's parts read by name, the
 * digest over the exact bytes compared in constant time, stale timestamps refused, and the
 * body parsed only after the signature holds. Test vectors:
 * `@payment-service/contract/webhook-signature-vectors.json`.
 */
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
/** Raised when the body given is not the raw bytes received (a parsed object, say): nothing can be verified. */
export class RawBodyRequiredError extends WebhookVerificationError {
  override name = 'RawBodyRequiredError';
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

/** The raw body as received: the exact bytes, or their UTF-8 text. */
export type RawBody = string | Uint8Array | ArrayBuffer;

export interface VerifyOptions {
  /** Largest accepted age of `t`, in seconds (default 300: the document's five minutes). */
  toleranceSeconds?: number;
  /** The receiver's clock, in unix seconds (default: now). */
  now?: number;
  /** Accept the unsigned legacy two-field body (transactions created the older way). */
  allowLegacy?: boolean;
}

const encoder = new TextEncoder();

/**
 * The exact bytes of a raw body. Anything else is the common mistake of passing a body a
 * framework already parsed (Express's `req.body` after `express.json()`, say): it cannot
 * be verified, and the error says how to get the raw bytes.
 */
export function rawBytes(rawBody: unknown): Uint8Array {
  if (typeof rawBody === 'string') return encoder.encode(rawBody);
  // By their tags, not instanceof: bytes may come from another realm (a worker, a vm).
  if (ArrayBuffer.isView(rawBody)) return new Uint8Array(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  if (Object.prototype.toString.call(rawBody) === '[object ArrayBuffer]') return new Uint8Array(rawBody as ArrayBuffer);
  const given = rawBody === null ? 'null' : typeof rawBody === 'object' ? 'a parsed object' : typeof rawBody;
  throw new RawBodyRequiredError(
    `The webhook body must be the raw request bytes (a string, Buffer, Uint8Array or ArrayBuffer) exactly as received; ${given} was given. Read the body before any JSON parsing: express.raw({ type: 'application/json' }) on the route, await request.text() or request.arrayBuffer() in a Web handler.`,
  );
}

/** The bytes HMAC-SHA256 runs over: `<t>.` followed by the raw body. */
export function signedPayload(body: Uint8Array, timestamp: number): Uint8Array {
  const prefix = encoder.encode(`${timestamp}.`);
  const payload = new Uint8Array(prefix.length + body.length);
  payload.set(prefix);
  payload.set(body, prefix.length);
  return payload;
}

export const toHex = (bytes: Uint8Array): string =>
  Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');

/** The bytes of a hex digest, or undefined when it is not hex of whole bytes. */
export function fromHex(hex: string): Uint8Array | undefined {
  if (hex.length % 2 !== 0 || !/^[0-9a-f]*$/i.test(hex)) return undefined;
  return Uint8Array.from({ length: hex.length / 2 }, (_, i) => Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16));
}

/** The header value for a timestamp and its v1 digest. */
export const signatureHeader = (timestamp: number, digestHex: string): string => `t=${timestamp},v1=${digestHex}`;

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseJson(body: Uint8Array): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new InvalidPayloadError('The delivery body is not JSON.');
  }
  if (!isObject(value)) throw new InvalidPayloadError('The delivery body is not a JSON object.');
  return value;
}

/** What is left to check once the header is read: the digests to compare, over these bytes. */
export type Pending =
  | { done: VerifiedWebhook }
  | { done?: undefined; body: Uint8Array; timestamp: number; v1: string[] };

/**
 * The steps before the digest: the raw bytes, then the header (or, without one, the
 * legacy body when allowed). Unknown `event` values are returned as they are, for the
 * caller to ignore.
 */
export function beginVerification(
  rawBody: RawBody,
  header: string | undefined | null,
  options: VerifyOptions,
): Pending {
  const body = rawBytes(rawBody);
  if (header === undefined || header === null || header === '') {
    if (options.allowLegacy) {
      const parsed = parseJson(body);
      if (!('event' in parsed) && typeof parsed.transactionId === 'string') {
        const foreignTransactionId =
          typeof parsed.foreignTransactionId === 'string' ? parsed.foreignTransactionId : null;
        return { done: { kind: 'legacy', payload: { transactionId: parsed.transactionId, foreignTransactionId } } };
      }
    }
    throw new MissingSignatureError(
      `The delivery has no ${SIGNATURE_HEADER} header. Reject it: only legacy transaction bodies (no "event") are sent unsigned.`,
    );
  }
  return { body, ...parseSignatureHeader(header) };
}

/** The steps after the digest comparison: its outcome, the timestamp's age, then the body. */
export function finishVerification(
  body: Uint8Array,
  timestamp: number,
  matched: boolean,
  options: VerifyOptions,
): VerifiedWebhook {
  if (!matched) {
    throw new SignatureMismatchError(
      'No v1 signature matches this body. Pass the exact raw request bytes (not re-serialised JSON) and the whole signing secret, whsec_ prefix included; after a secret rotation, deliveries signed with the old secret fail.',
    );
  }
  const now = options.now ?? nowSeconds();
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (now - timestamp > tolerance) {
    throw new TimestampOutsideToleranceError(
      `The signature timestamp is ${now - timestamp} s old, more than ${tolerance} s. Reject the delivery (it may be a replay); check the receiver's clock.`,
    );
  }
  const parsed = parseJson(body);
  if (typeof parsed.event !== 'string' || typeof parsed.transactionId !== 'string') {
    throw new InvalidPayloadError('The signed body has no event or transactionId.');
  }
  return { kind: 'event', event: parsed as unknown as WebhookEvent, timestamp };
}

/**
 * Proves that openapi/webhook-signature-vectors.json is a trustworthy set of
 * published test vectors for the `Service-Signature` webhook header:
 *  - every digest in the file is the HMAC-SHA256 (key = UTF-8 bytes of the whole
 *    whsec_ secret) of `<t>.` + the exact raw body bytes, recomputed here with node:crypto;
 *  - a small reference verifier written from the service document's receiver steps
 *    reaches exactly each vector's `valid` / `failure` verdict;
 *  - an independent implementation of the same scheme (Stripe's webhook verifier,
 *    stripe-node 23.1.0, offline) accepts exactly the valid vectors and rejects the rest;
 *  - the file contains every required case, with unique names and a >= 100 000 byte body.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';

type Failure = 'signature_mismatch' | 'timestamp_outside_tolerance' | 'missing_v1' | 'missing_timestamp';

interface SignatureVector {
  name: string;
  description: string;
  secret: string;
  /** Secret the header was actually signed with, when it differs from `secret`. */
  signingSecret?: string;
  timestamp: number;
  now: number;
  body?: string;
  bodyBase64?: string;
  /** Body the header was actually signed over, when it differs from the received body. */
  signedBody?: string;
  header: string;
  expectedDigest: string;
  valid: boolean;
  failure: Failure | null;
}

interface VectorFile {
  description: string;
  scheme: {
    header: string;
    format: string;
    algorithm: string;
    signedPayload: string;
    toleranceSeconds: number;
  };
  vectors: SignatureVector[];
}

type Verdict = { valid: true; failure: null } | { valid: false; failure: Failure };

const TOLERANCE_SECONDS = 300;
const FAILURES: ReadonlyArray<Failure | null> = [
  null,
  'signature_mismatch',
  'timestamp_outside_tolerance',
  'missing_v1',
  'missing_timestamp',
];
const REQUIRED_VECTOR_NAMES = [
  'plain',
  'unicode-body',
  'whitespace-significant',
  'empty-object',
  'large-body',
  'reordered-header',
  'extra-version',
  'tampered-body',
  'stale-timestamp',
  'boundary-timestamp',
  'missing-v1',
  'missing-t',
  'wrong-secret',
  'reserialised-body',
];
/**
 * Vectors on which Stripe's verifier legitimately differs from this scheme.
 * Empty: with `receivedAt` passed in milliseconds (see verifyWithStripe) Stripe agrees on
 * every vector, including missing `t` / missing `v1` (it throws for both).
 */
const STRIPE_SCHEME_DIFFERENCES: ReadonlySet<string> = new Set<string>();

function loadVectorFile(): VectorFile {
  const url = new URL('../openapi/webhook-signature-vectors.json', import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')) as VectorFile;
}

/** The exact raw request body bytes a vector describes. */
function rawBody(vector: SignatureVector): Buffer {
  if (vector.bodyBase64 !== undefined) return Buffer.from(vector.bodyBase64, 'base64');
  if (vector.body !== undefined) return Buffer.from(vector.body, 'utf8');
  throw new Error(`vector ${vector.name} has neither body nor bodyBase64`);
}

/** HMAC-SHA256 hex over `<t>.` + raw body, keyed with the UTF-8 bytes of the whole secret. */
function computeDigest(secret: string, timestamp: number | string, body: Buffer): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), body]))
    .digest('hex');
}

/** Splits the header on commas and each part on its first `=`; later duplicates do not overwrite. */
function parseSignatureHeader(header: string): Map<string, string> {
  const parts = new Map<string, string>();
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    const key = part.slice(0, eq).trim();
    if (!parts.has(key)) parts.set(key, part.slice(eq + 1).trim());
  }
  return parts;
}

function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Reference receiver, following the service document's steps in order. */
function referenceVerify(header: string, body: Buffer, secret: string, nowSeconds: number): Verdict {
  const parts = parseSignatureHeader(header);
  const t = parts.get('t');
  const v1 = parts.get('v1');
  if (t === undefined || !/^\d+$/.test(t)) return { valid: false, failure: 'missing_timestamp' };
  if (v1 === undefined) return { valid: false, failure: 'missing_v1' };
  if (!constantTimeEqual(computeDigest(secret, t, body), v1)) {
    return { valid: false, failure: 'signature_mismatch' };
  }
  if (nowSeconds - Number(t) > TOLERANCE_SECONDS) {
    return { valid: false, failure: 'timestamp_outside_tolerance' };
  }
  return { valid: true, failure: null };
}

const stripe = new Stripe('sk_test_x');

/**
 * stripe.webhooks.signature.verifyHeader(payload, header, secret, tolerance, cryptoProvider, receivedAt)
 * returns true or throws StripeSignatureVerificationError. NOTE: `receivedAt` is in
 * MILLISECONDS (Stripe computes `Math.floor(receivedAt / 1000) - t`), unlike `t` and our `now`.
 * Passing seconds silently disables the age check (the age becomes hugely negative).
 */
function verifyWithStripe(vector: SignatureVector): boolean {
  const signature = stripe.webhooks.signature;
  if (!signature) throw new Error('stripe.webhooks.signature helper is not available');
  return signature.verifyHeader(
    rawBody(vector),
    vector.header,
    vector.secret,
    TOLERANCE_SECONDS,
    undefined,
    vector.now * 1000,
  );
}

const file = loadVectorFile();
const validVectors = file.vectors.filter((v) => v.valid);
const invalidVectors = file.vectors.filter((v) => !v.valid);

describe('webhook signature vectors: file shape', () => {
  it('declares the Service-Signature scheme with a 300 s tolerance', () => {
    expect(file.scheme).toEqual({
      header: 'Service-Signature',
      format: 't=<unix_seconds>,v1=<hex_digest>',
      algorithm: 'HMAC-SHA256',
      signedPayload: '<t>.<raw body>',
      toleranceSeconds: TOLERANCE_SECONDS,
    });
    expect(file.description.length).toBeGreaterThan(0);
  });

  it('contains every required vector, with unique names', () => {
    const names = file.vectors.map((v) => v.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(expect.arrayContaining(REQUIRED_VECTOR_NAMES));
  });

  it('has a large-body vector of at least 100 000 bytes', () => {
    const large = file.vectors.find((v) => v.name === 'large-body');
    expect(large).toBeDefined();
    expect(rawBody(large!).length).toBeGreaterThanOrEqual(100_000);
  });

  it.each(file.vectors.map((v) => [v.name, v] as const))('%s is well formed', (_name, v) => {
    expect(v.secret).toMatch(/^whsec_[A-Za-z0-9_-]{32}$/);
    if (v.signingSecret !== undefined) expect(v.signingSecret).not.toBe(v.secret);
    expect(Number.isInteger(v.timestamp)).toBe(true);
    expect(Number.isInteger(v.now)).toBe(true);
    expect((v.body === undefined) !== (v.bodyBase64 === undefined)).toBe(true);
    expect(v.expectedDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(FAILURES).toContain(v.failure);
    expect(v.valid).toBe(v.failure === null);
  });
});

describe('webhook signature vectors: digests (node:crypto)', () => {
  it.each(file.vectors.map((v) => [v.name, v] as const))(
    '%s: expectedDigest is HMAC-SHA256(secret, "<timestamp>." + raw body)',
    (_name, v) => {
      expect(computeDigest(v.secret, v.timestamp, rawBody(v))).toBe(v.expectedDigest);
    },
  );

  it.each(validVectors.map((v) => [v.name, v] as const))(
    '%s: header v1 (read by name) and t equal the recomputed digest and timestamp',
    (_name, v) => {
      const parts = parseSignatureHeader(v.header);
      expect(parts.get('t')).toBe(String(v.timestamp));
      expect(parts.get('v1')).toBe(computeDigest(v.secret, v.timestamp, rawBody(v)));
      expect(parts.get('v1')).toBe(v.expectedDigest);
    },
  );

  it.each(invalidVectors.filter((v) => v.failure === 'signature_mismatch').map((v) => [v.name, v] as const))(
    '%s: header v1 was produced from signingSecret/signedBody, not from secret/body',
    (_name, v) => {
      expect(v.signingSecret !== undefined || v.signedBody !== undefined).toBe(true);
      const signedBytes = v.signedBody !== undefined ? Buffer.from(v.signedBody, 'utf8') : rawBody(v);
      const v1 = parseSignatureHeader(v.header).get('v1');
      expect(v1).toBe(computeDigest(v.signingSecret ?? v.secret, v.timestamp, signedBytes));
      expect(v1).not.toBe(v.expectedDigest);
    },
  );

  it('reserialised-body carries the same JSON value as the bytes that were signed', () => {
    const v = file.vectors.find((x) => x.name === 'reserialised-body');
    expect(v?.signedBody).toBeDefined();
    expect(JSON.parse(v!.body!)).toEqual(JSON.parse(v!.signedBody!));
    expect(v!.body).not.toBe(v!.signedBody);
  });
});

describe('webhook signature vectors: reference verifier', () => {
  it.each(file.vectors.map((v) => [v.name, v] as const))('%s -> expected verdict', (_name, v) => {
    const verdict = referenceVerify(v.header, rawBody(v), v.secret, v.now);
    expect(verdict).toEqual({ valid: v.valid, failure: v.failure });
  });
});

describe('webhook signature vectors: Stripe cross-check (stripe-node verifyHeader)', () => {
  const checked = file.vectors.filter((v) => !STRIPE_SCHEME_DIFFERENCES.has(v.name));

  it.each(checked.filter((v) => v.valid).map((v) => [v.name, v] as const))('%s: Stripe accepts', (_name, v) => {
    expect(verifyWithStripe(v)).toBe(true);
  });

  it.each(checked.filter((v) => !v.valid).map((v) => [v.name, v] as const))('%s: Stripe rejects', (_name, v) => {
    expect(() => verifyWithStripe(v)).toThrow(Stripe.errors.StripeSignatureVerificationError);
  });
});

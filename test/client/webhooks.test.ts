/**
 * client/webhooks.ts against the published signature vectors: the signer reproduces
 * every valid vector's header digest, and the verifier accepts exactly the valid ones and
 * rejects each failing one with the error class of its stated failure.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  InvalidPayloadError,
  MalformedSignatureError,
  MissingSignatureError,
  SignatureMismatchError,
  TimestampOutsideToleranceError,
  computeSignature,
  signWebhook,
  verifyWebhook,
} from '../../client/webhooks.ts';
import { repoRoot } from '../support/description.ts';

interface Vector {
  name: string;
  secret: string;
  timestamp: number;
  now: number;
  body?: string;
  bodyBase64?: string;
  header: string;
  expectedDigest: string;
  valid: boolean;
  failure: null | 'signature_mismatch' | 'timestamp_outside_tolerance' | 'missing_v1' | 'missing_timestamp';
}

const { vectors } = JSON.parse(readFileSync(path.join(repoRoot, 'openapi/webhook-signature-vectors.json'), 'utf8')) as {
  vectors: Vector[];
};
const bodyOf = (v: Vector) =>
  v.bodyBase64 !== undefined ? Buffer.from(v.bodyBase64, 'base64') : Buffer.from(v.body!, 'utf8');

const errorFor = {
  signature_mismatch: SignatureMismatchError,
  timestamp_outside_tolerance: TimestampOutsideToleranceError,
  missing_v1: MalformedSignatureError,
  missing_timestamp: MalformedSignatureError,
} as const;

describe('webhook signature vectors', () => {
  it.each(vectors.map((v) => [v.name, v] as const))('%s', (_name, v) => {
    expect(computeSignature(bodyOf(v), v.secret, v.timestamp)).toBe(v.expectedDigest);
    const verify = () => verifyWebhook(bodyOf(v), v.header, v.secret, { now: v.now });
    if (v.valid) {
      // A correctly signed body that is not a webhook event (e.g. {}) is refused only
      // after the signature holds, as InvalidPayloadError.
      const parsed = JSON.parse(bodyOf(v).toString('utf8'));
      if (typeof parsed.event === 'string' && typeof parsed.transactionId === 'string')
        expect(verify().kind).toBe('event');
      else expect(verify).toThrow(InvalidPayloadError);
    } else {
      expect(verify).toThrow(errorFor[v.failure!]);
    }
  });

  it('signs so that its own verifier accepts, and only with the same bytes and secret', () => {
    const body =
      '{"event":"checkout_session.completed","createdAt":"2026-01-01T00:00:00Z","checkoutSessionId":"cs_1","transactionId":"0b8f7d0e-3f1c-4a5e-9d2a-6c1b2e3f4a5b","foreignTransactionId":null}';
    const header = signWebhook(body, 'whsec_abc', { timestamp: 1_767_225_600 });
    expect(verifyWebhook(body, header, 'whsec_abc', { now: 1_767_225_601 })).toMatchObject({
      kind: 'event',
      event: { event: 'checkout_session.completed' },
    });
    expect(() =>
      verifyWebhook(JSON.stringify(JSON.parse(body), null, 1), header, 'whsec_abc', { now: 1_767_225_601 }),
    ).toThrow(/raw request bytes/);
    expect(() => verifyWebhook(body, header, 'abc', { now: 1_767_225_601 })).toThrow(SignatureMismatchError);
  });

  it('rejects a missing header, and accepts the legacy two-field body only when allowed', () => {
    const legacy = '{"transactionId":"9a1e2b3c-4d5e-4f60-8a7b-1c2d3e4f5a6b","foreignTransactionId":"legacy-7"}';
    expect(() => verifyWebhook(legacy, undefined, 'whsec_abc')).toThrow(MissingSignatureError);
    expect(verifyWebhook(legacy, undefined, 'whsec_abc', { allowLegacy: true })).toEqual({
      kind: 'legacy',
      payload: { transactionId: '9a1e2b3c-4d5e-4f60-8a7b-1c2d3e4f5a6b', foreignTransactionId: 'legacy-7' },
    });
    const unsignedEvent = '{"event":"checkout_session.completed","transactionId":"x"}';
    expect(() => verifyWebhook(unsignedEvent, undefined, 'whsec_abc', { allowLegacy: true })).toThrow(
      MissingSignatureError,
    );
  });

  it('passes an unknown event through', () => {
    const body =
      '{"event":"checkout_session.refunded","createdAt":"2026-01-01T00:00:00Z","checkoutSessionId":null,"transactionId":"t","foreignTransactionId":null}';
    const header = signWebhook(body, 'whsec_x');
    const result = verifyWebhook(body, header, 'whsec_x');
    expect(result.kind === 'event' && result.event.event).toBe('checkout_session.refunded');
  });
});

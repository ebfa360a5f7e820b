/**
 * Small merchant webhook receivers for testing `payment-conformance receiver`: one that
 * follows the document, and broken ones, each wrong in one way.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { type VerifiedWebhook, verifyWebhook } from '../../client/webhooks.ts';
import { startReceiver } from './receiver.ts';

export interface MerchantReceiver {
  url: string;
  close(): Promise<void>;
}

/** Decides the status for one delivery (raw bytes and the Service-Signature header). */
export type Handler = (raw: Buffer, signature: string | undefined) => number | Promise<number>;

export async function startMerchantReceiver(handle: Handler): Promise<MerchantReceiver> {
  const receiver = await startReceiver({
    handle: (d) =>
      handle(d.raw, typeof d.headers['service-signature'] === 'string' ? d.headers['service-signature'] : undefined),
  });
  return { url: `${receiver.url}/webhooks`, close: receiver.close };
}

/** The correct receiver: verify over the raw bytes, then deduplicate, ignore unknown events. */
export function correctReceiver(secret: string, options: { allowLegacy: boolean }): Handler {
  const seen = new Set<string>();
  return (raw, signature) => {
    let verified: VerifiedWebhook;
    try {
      verified = verifyWebhook(raw, signature, secret, { allowLegacy: options.allowLegacy });
    } catch {
      return 400;
    }
    const id = verified.kind === 'event' ? verified.event.transactionId : verified.payload.transactionId;
    if (seen.has(id)) return 200; // a repeat: already handled
    seen.add(id);
    return 200;
  };
}

const hmac = (secret: string, payload: string) => createHmac('sha256', secret).update(payload).digest('hex');
const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** Verifies over JSON.stringify(JSON.parse(body)): re-serialising breaks the digest. */
export function reserialisingReceiver(secret: string): Handler {
  return (raw, signature) => {
    const t = /t=(\d+)/.exec(signature ?? '')?.[1];
    const v1 = /v1=([0-9a-f]+)/.exec(signature ?? '')?.[1];
    if (!t || !v1) return 400;
    let body: string;
    try {
      body = JSON.stringify(JSON.parse(raw.toString('utf8')));
    } catch {
      return 400;
    }
    return same(hmac(secret, `${t}.${body}`), v1) && Date.now() / 1000 - Number(t) <= 300 ? 200 : 400;
  };
}

/** Checks the digest but never the age of t. */
export function noToleranceReceiver(secret: string): Handler {
  return (raw, signature) => {
    try {
      verifyWebhook(raw, signature, secret, { toleranceSeconds: Number.MAX_SAFE_INTEGER });
      return 200;
    } catch {
      return 400;
    }
  };
}

/** Reads the header by position: `t=...,v1=...` exactly. */
export function positionalReceiver(secret: string): Handler {
  return (raw, signature) => {
    const [tPart, v1Part, ...rest] = (signature ?? '').split(',');
    if (rest.length > 0 || !tPart?.startsWith('t=') || !v1Part?.startsWith('v1=')) return 400;
    const t = tPart.slice(2);
    return same(hmac(secret, `${t}.${raw.toString('utf8')}`), v1Part.slice(3)) && Date.now() / 1000 - Number(t) <= 300
      ? 200
      : 400;
  };
}

/** Answers 409 to a transaction it has seen. */
export function conflictOnRepeatReceiver(secret: string): Handler {
  const seen = new Set<string>();
  const verify = correctReceiver(secret, { allowLegacy: true });
  return async (raw, signature) => {
    const status = await verify(raw, signature);
    if (status !== 200) return status;
    const id = JSON.parse(raw.toString('utf8')).transactionId as string;
    if (seen.has(id)) return 409;
    seen.add(id);
    return 200;
  };
}

/** Refuses events it does not know. */
export function strictEventReceiver(secret: string): Handler {
  const verify = correctReceiver(secret, { allowLegacy: true });
  return async (raw, signature) => {
    const status = await verify(raw, signature);
    const event = JSON.parse(raw.toString('utf8')).event;
    return status === 200 && event !== undefined && event !== 'checkout_session.completed' ? 400 : status;
  };
}

/** Accepts everything without verifying. */
export const trustingReceiver: Handler = () => 200;

/** Correct, but answers after six seconds. */
export function slowReceiver(secret: string): Handler {
  const verify = correctReceiver(secret, { allowLegacy: true });
  return async (raw, signature) => {
    await new Promise((resolve) => setTimeout(resolve, 6000));
    return verify(raw, signature);
  };
}

/** Correct, but allows only 30 seconds of signature age instead of five minutes. */
export function shortToleranceReceiver(secret: string): Handler {
  return (raw, signature) => {
    try {
      verifyWebhook(raw, signature, secret, { toleranceSeconds: 30 });
      return 200;
    } catch {
      return 400;
    }
  };
}

/** Answers 200 to any unknown event before verifying it (so an unsigned one is accepted). */
export function unknownEventFirstReceiver(secret: string): Handler {
  const verify = correctReceiver(secret, { allowLegacy: true });
  return async (raw, signature) => {
    let event: unknown;
    try {
      event = JSON.parse(raw.toString('utf8')).event;
    } catch {
      event = undefined;
    }
    if (typeof event === 'string' && event !== 'checkout_session.completed') return 200;
    return verify(raw, signature);
  };
}

/** A receiver wrong in one way: the receiver checks it fails, and the flags it is run with. */
export interface BrokenReceiver {
  name: string;
  handler: (secret: string) => Handler;
  caughtBy: string[];
  args?: string[];
}

/**
 * The broken receivers the receiver mode must fail, each with exactly the checks it fails
 * (test/e2e/conformance-receiver.test.ts) and whose failures the checks' reference pages
 * show (scripts/record-failures.ts). The first three take no legacy bodies, so they run
 * with --legacy reject.
 */
export const BROKEN_RECEIVERS: readonly BrokenReceiver[] = [
  {
    name: 're-serialises the JSON before verifying',
    handler: reserialisingReceiver,
    caughtBy: ['RCV-003', 'RCV-004'],
    args: ['--legacy', 'reject'],
  },
  {
    name: 'does not check the age of t',
    handler: noToleranceReceiver,
    caughtBy: ['RCV-005'],
    args: ['--legacy', 'reject'],
  },
  {
    name: 'reads the header parts by position',
    handler: positionalReceiver,
    caughtBy: ['RCV-007', 'RCV-008'],
    args: ['--legacy', 'reject'],
  },
  { name: 'answers 409 to a repeat', handler: conflictOnRepeatReceiver, caughtBy: ['RCV-009'] },
  { name: 'refuses unknown event values', handler: strictEventReceiver, caughtBy: ['RCV-010'] },
  {
    name: 'verifies nothing',
    handler: () => trustingReceiver,
    caughtBy: ['RCV-002', 'RCV-004', 'RCV-005', 'RCV-006', 'RCV-011', 'RCV-012', 'RCV-015'],
  },
  { name: 'allows only 30 seconds of signature age', handler: shortToleranceReceiver, caughtBy: ['RCV-016'] },
  { name: 'answers unknown events before verifying them', handler: unknownEventFirstReceiver, caughtBy: ['RCV-015'] },
  { name: 'answers after six seconds', handler: slowReceiver, caughtBy: ['RCV-013'] },
];

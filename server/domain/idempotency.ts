/**
 * Idempotent creates (service document, POST /api/checkout-sessions, Idempotency rules):
 *
 * 1. The same key with an identical body within 24 hours completes the original request
 *    or replays its result (same status and body).
 * 2. The same key with a different body answers `idempotency_error`.
 * 3. A 500 is never stored: a retry with the same key completes the original request.
 *
 * Keys are scoped to the organisation and mode; "identical body" means the same JSON
 * value (key order and whitespace do not matter) sent to the same create endpoint: a key
 * first used to create a session, reused to create a payment link, is another request. Concurrent requests with one key wait
 * for the first, so exactly one payment is created and all get the same answer. Only
 * successful creates are remembered: a 4xx changes nothing, so after a fix the same key
 * can be used again.
 */
import { hash } from 'node:crypto';
import type { IdempotencyRecord, Mode, Payment, PaymentKind, Store } from '../store/types.ts';
import { HOUR } from './clock.ts';
import { DomainError } from './errors.ts';

export const IDEMPOTENCY_MEMORY_MS = 24 * HOUR;

/**
 * What a create answered, kept to replay it: its status and its body as sent. The domain
 * keeps them as it was given them, and gives them back the same.
 */
export interface Answer<J extends string = string> {
  status: number;
  /** The body as sent (JSON text). */
  json: J;
  /** True when this is a replay of an earlier request's answer. */
  replayed?: boolean;
}

/** Recursively sorted keys: two bodies with the same JSON value give the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  let out: string;
  if (Array.isArray(value)) {
    out = '[';
    for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + canonicalJson(value[i]);
    return `${out}]`;
  }
  const keys = Object.keys(value).sort();
  out = '{';
  for (let i = 0; i < keys.length; i++) {
    out += `${i > 0 ? ',' : ''}${JSON.stringify(keys[i])}:${canonicalJson((value as Record<string, unknown>)[keys[i]!])}`;
  }
  return `${out}}`;
}

export interface IdempotencyScope {
  orgId: string;
  mode: Mode;
  key: string;
  /** What the request creates (one kind per create endpoint). */
  kind: PaymentKind;
  now: number;
}

/**
 * Stores the created payment with the answer to send for it (`json`, as sent); rejects
 * with KeyTaken when a request that came first holds the key.
 */
export type Save = (payment: Payment, status: number, json: string) => Promise<void>;

/** The key is held by a live record: nothing was written, and the answer comes from it. */
class KeyTaken extends Error {
  constructor(readonly record: IdempotencyRecord) {
    super('idempotency key taken');
  }
}

export class Idempotency {
  private readonly inflight = new Map<string, Promise<Answer<string>>>();

  constructor(private readonly store: Store) {}

  /** Without a key: the payment is stored, and nothing is remembered for a retry. */
  readonly saveOnly: Save = async (payment) => {
    await this.store.createPayment(payment);
  };

  /**
   * `create` builds the payment and its answer and saves them with the save it is given.
   * The key is looked up by the store in the transaction that would insert the payment,
   * so a replay costs building an answer that is then dropped, and a create (the common
   * case) costs no read of its own.
   */
  async run<J extends string>(
    scope: IdempotencyScope,
    requestBody: unknown,
    create: (save: Save) => Promise<Answer<J>>,
  ): Promise<Answer<J>> {
    const id = `${scope.orgId}\u0000${scope.mode}\u0000${scope.key}`;
    const fingerprint = hash('sha256', canonicalJson(requestBody), 'base64url');
    const save: Save = async (payment, status, json) => {
      const holder = await this.store.createPayment(payment, {
        orgId: scope.orgId,
        mode: scope.mode,
        key: scope.key,
        kind: scope.kind,
        fingerprint,
        status,
        body: json,
        createdAt: scope.now,
        expiresAt: scope.now + IDEMPOTENCY_MEMORY_MS,
      });
      if (holder) throw new KeyTaken(holder);
    };
    for (;;) {
      const pending = this.inflight.get(id);
      if (pending) {
        // Wait for the request holding this key, then answer from what it left behind.
        await pending.catch(() => undefined);
        continue;
      }
      const attempt = create(save).catch((error: unknown) => {
        if (error instanceof KeyTaken) return replay<J>(error.record, scope.kind, fingerprint);
        throw error;
      });
      this.inflight.set(id, attempt);
      try {
        return await attempt;
      } finally {
        this.inflight.delete(id);
      }
    }
  }
}

function replay<J extends string>(record: IdempotencyRecord, kind: PaymentKind, fingerprint: string): Answer<J> {
  if (record.kind !== null && record.kind !== kind) {
    throw new DomainError(
      'idempotency_error',
      'This Idempotency-Key was used on another endpoint in the last 24 hours. Use a new key for a new payment.',
    );
  }
  if (record.fingerprint !== fingerprint) {
    throw new DomainError(
      'idempotency_error',
      'This Idempotency-Key was used with a different request body in the last 24 hours. Use a new key for a new payment.',
    );
  }
  // The record holds the answer of this very create endpoint (kind checked above): its text
  // is of the answer's type.
  return { status: record.status, json: record.body as J, replayed: true };
}

/**
 * Idempotent creates (service document, POST /api/checkout-sessions, Idempotency rules):
 *
 * 1. The same key with an identical body within 24 hours completes the original request
 *    or replays its result (same status and body).
 * 2. The same key with a different body answers `idempotency_error`.
 * 3. A 500 is never stored: a retry with the same key completes the original request.
 *
 * Keys are scoped to the organisation and mode; "identical body" means the same JSON
 * value (key order and whitespace do not matter). Concurrent requests with one key wait
 * for the first, so exactly one payment is created and all get the same answer. Only
 * successful creates are remembered: a 4xx changes nothing, so after a fix the same key
 * can be used again.
 */
import { createHash } from 'node:crypto';
import { ApiError } from '../http/errors.ts';
import type { IdempotencyRecord, Mode, Store } from '../store/types.ts';
import { HOUR } from './clock.ts';

export const IDEMPOTENCY_MEMORY_MS = 24 * HOUR;

export interface Reply {
  status: number;
  /** The body to send as JSON, unless `json` already holds it as text. */
  body?: unknown;
  /** The body already serialised (a stored answer, or one serialised once for storing). */
  json?: string;
  replayed?: boolean;
}

/** Recursively sorted keys: two bodies with the same JSON value give the same text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export interface IdempotencyScope {
  orgId: string;
  mode: Mode;
  key: string;
  now: number;
}

/** Builds the record to store with the created resource, in the same transaction (`json`: the answer's body as sent). */
export type RecordFor = (status: number, json: string) => IdempotencyRecord;

export class Idempotency {
  private readonly inflight = new Map<string, Promise<Reply>>();

  constructor(private readonly store: Store) {}

  async run(scope: IdempotencyScope, requestBody: unknown, create: (recordFor: RecordFor) => Promise<Reply>): Promise<Reply> {
    const id = `${scope.orgId}\u0000${scope.mode}\u0000${scope.key}`;
    const fingerprint = createHash('sha256').update(canonicalJson(requestBody)).digest('base64url');
    const recordFor: RecordFor = (status, json) => ({
      orgId: scope.orgId,
      mode: scope.mode,
      key: scope.key,
      fingerprint,
      status,
      body: json,
      createdAt: scope.now,
      expiresAt: scope.now + IDEMPOTENCY_MEMORY_MS,
    });
    for (;;) {
      const pending = this.inflight.get(id);
      if (pending) {
        // Wait for the request holding this key, then answer from what it left behind.
        await pending.catch(() => undefined);
        continue;
      }
      const attempt = this.replayOr(scope, fingerprint, () => create(recordFor));
      this.inflight.set(id, attempt);
      try {
        return await attempt;
      } finally {
        this.inflight.delete(id);
      }
    }
  }

  private async replayOr(scope: IdempotencyScope, fingerprint: string, create: () => Promise<Reply>): Promise<Reply> {
    const record = await this.store.getIdempotency(scope.orgId, scope.mode, scope.key);
    if (!record || record.expiresAt <= scope.now) return create();
    if (record.fingerprint !== fingerprint) {
      throw new ApiError(400, 'idempotency_error', 'This Idempotency-Key was used with a different request body in the last 24 hours. Use a new key for a new payment.');
    }
    return { status: record.status, json: record.body, replayed: true };
  }
}

/**
 * How the SQLite store answers the reads every request makes: from what it keeps in
 * memory, exact because its process is the file's only writer (lockFile, connection.ts)
 * and every write goes through the store, which updates or drops the entry after its
 * commit:
 *
 * - organisations and API keys, read on every authenticated request;
 * - payments read by session id, the most polled read ("the authoritative way to decide
 *   fulfilment"), handed out frozen (one object per stored row, so readers can memoise
 *   what they derive from it).
 *
 * Even an indexed read costs a WAL read transaction (file and shared-memory locks). Misses
 * are never kept, and each cache is bounded: anyone can send unknown ids. Bounded by bytes
 * as well as by count: a payment carries merchant strings (URLs, ids) that may be some KiB
 * each, so a count alone would let the largest payments hold far more than intended.
 */
import type { ApiKey, Organisation, Payment } from '../types.ts';

/** Payments kept by session id, at most. */
const SESSION_CACHE_SIZE = 2000;
/**
 * Their estimated bytes, at most: typical payments (about 1 KiB each) fill the count first;
 * payments with every string at its longest (about 10 KiB) are cut to some 800.
 */
const SESSION_CACHE_BYTES = 8 * 1024 * 1024;
/** API keys and organisations kept, at most (each a few hundred bytes). */
const ACCOUNT_CACHE_SIZE = 10_000;
const ACCOUNT_CACHE_BYTES = 8 * 1024 * 1024;

/** What an entry costs besides its strings: the object, its slots, the maps' entries. */
const ENTRY_OVERHEAD_BYTES = 256;

/**
 * An upper estimate of what a flat record holds in memory: V8 keeps a string with any
 * character past U+00FF at two bytes a character, so each counts at two.
 */
function estimatedBytes(record: object): number {
  let bytes = ENTRY_OVERHEAD_BYTES;
  for (const value of Object.values(record)) if (typeof value === 'string') bytes += value.length * 2;
  return bytes;
}

/**
 * A Map that forgets its oldest entries when over its count or its estimated bytes;
 * `onDrop` hears of every entry that leaves (forgotten, replaced or deleted).
 */
export class Bounded<K, V> extends Map<K, V> {
  private readonly sizes = new Map<K, number>();
  private bytes = 0;

  constructor(
    private readonly limit: number,
    private readonly maxBytes: number,
    private readonly sizeOf: (value: V) => number,
    private readonly onDrop?: (value: V) => void,
  ) {
    super();
  }

  /** The estimated bytes of the entries held. */
  get estimatedBytes(): number {
    return this.bytes;
  }

  override set(key: K, value: V): this {
    this.delete(key);
    const size = this.sizeOf(value);
    super.set(key, value);
    this.sizes.set(key, size);
    this.bytes += size;
    // The newest entry stays even when it alone is over the bytes: it was just asked for.
    while (this.size > this.limit || (this.bytes > this.maxBytes && this.size > 1))
      this.delete(this.keys().next().value!);
    return this;
  }

  override delete(key: K): boolean {
    if (!super.has(key)) return false;
    const value = super.get(key)!;
    this.bytes -= this.sizes.get(key) ?? 0;
    this.sizes.delete(key);
    super.delete(key);
    this.onDrop?.(value);
    return true;
  }

  override clear(): void {
    this.sizes.clear();
    this.bytes = 0;
    super.clear();
  }
}

export class AccountCache {
  readonly organisations = new Bounded<string, Organisation>(ACCOUNT_CACHE_SIZE, ACCOUNT_CACHE_BYTES, estimatedBytes);
  readonly apiKeys = new Bounded<string, ApiKey>(ACCOUNT_CACHE_SIZE, ACCOUNT_CACHE_BYTES, estimatedBytes);
}

export class SessionCache {
  /** Transaction id → bySession key, to drop an entry when its payment changes. */
  private readonly keys = new Map<string, string>();
  private readonly bySession = new Bounded<string, Readonly<Payment>>(
    SESSION_CACHE_SIZE,
    SESSION_CACHE_BYTES,
    estimatedBytes,
    (payment) => this.keys.delete(payment.transactionId),
  );

  private static key(orgId: string, sessionId: string): string {
    return `${orgId}\u0000${sessionId}`;
  }

  get(orgId: string, sessionId: string): Readonly<Payment> | undefined {
    return this.bySession.get(SessionCache.key(orgId, sessionId));
  }

  /** Keeps the payment as read (frozen), and returns it. */
  keep(payment: Payment): Readonly<Payment> {
    const frozen = Object.freeze(payment);
    if (payment.sessionId === null) return frozen;
    const key = SessionCache.key(payment.orgId, payment.sessionId);
    this.bySession.set(key, frozen);
    this.keys.set(payment.transactionId, key);
    return frozen;
  }

  forget(transactionId: string): void {
    const key = this.keys.get(transactionId);
    if (key !== undefined) this.bySession.delete(key);
  }
}

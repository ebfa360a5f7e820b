/**
 * What the SQLite store keeps in memory, exact because its process is the file's only
 * writer (file-lock.ts) and every write goes through the store, which updates or drops
 * the entry after its commit:
 *
 * - organisations and API keys, read on every authenticated request;
 * - payments read by session id, the most polled read ("the authoritative way to decide
 *   fulfilment"), handed out frozen (one object per stored row, so readers can memoise
 *   what they derive from it).
 *
 * Even an indexed read costs a WAL read transaction (file and shared-memory locks). Misses
 * are never kept, and each cache is bounded: anyone can send unknown ids.
 */
import type { ApiKey, Organisation, Payment } from '../types.ts';

/** Payments kept by session id, at most. */
const SESSION_CACHE_SIZE = 2000;
/** API keys and organisations kept, at most (each a few hundred bytes). */
const ACCOUNT_CACHE_SIZE = 10_000;

/** A Map that forgets its oldest entry when full. */
export class Bounded<K, V> extends Map<K, V> {
  constructor(private readonly limit: number) {
    super();
  }

  override set(key: K, value: V): this {
    if (!this.has(key) && this.size >= this.limit) this.delete(this.keys().next().value!);
    return super.set(key, value);
  }
}

export class AccountCache {
  readonly organisations = new Bounded<string, Organisation>(ACCOUNT_CACHE_SIZE);
  readonly apiKeys = new Bounded<string, ApiKey>(ACCOUNT_CACHE_SIZE);
}

export class SessionCache {
  private readonly bySession = new Map<string, Readonly<Payment>>();
  /** Transaction id → bySession key, to drop an entry when its payment changes. */
  private readonly keys = new Map<string, string>();

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
    if (!this.bySession.has(key) && this.bySession.size >= SESSION_CACHE_SIZE) {
      const [oldestKey, oldest] = this.bySession.entries().next().value!;
      this.bySession.delete(oldestKey);
      this.keys.delete(oldest.transactionId);
    }
    this.bySession.set(key, frozen);
    this.keys.set(payment.transactionId, key);
    return frozen;
  }

  forget(transactionId: string): void {
    const key = this.keys.get(transactionId);
    if (key === undefined) return;
    this.keys.delete(transactionId);
    this.bySession.delete(key);
  }
}

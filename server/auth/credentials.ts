/**
 * Whether an API key pair may have a token, under load from anyone. Checking a secret
 * costs a deliberately slow scrypt hash, made one at a time, so without limits a flood
 * of bad pairs makes every good one wait behind it. Three rules keep a valid key served
 * (the 429 of POST /api/token in the description):
 *
 * - A pair this server has accepted (or issued) is remembered, as a keyed digest of the
 *   secret beside the key's stored hash: a repeat is recognised with no scrypt, before
 *   any limit applies, so a flood cannot lock a valid key out, its own client id included.
 * - Hashing waits in a bounded queue: past MAX_WAITING the pair is refused at once (429),
 *   so an admitted check never waits long.
 * - Failed attempts are counted per client id: after FAILURE_LIMIT within a window, the id
 *   is refused (429) until the window ends.
 *
 * An unknown client id and a wrong secret go through the same steps with the same work,
 * so their answers and timing stay identical.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ApiKey, Store } from '../store/types.ts';
import type { Secrets } from './secrets.ts';

/** Checks waiting for, or in, the hash: a fraction of a second of hashing. */
export const MAX_WAITING = 8;
export const FAILURE_LIMIT = 10;
export const FAILURE_WINDOW_MS = 60_000;
/** Remembered pairs and counted client ids, each at most (the oldest go first). */
const REMEMBERED = 10_000;

export type Check = { ok: true; apiKey: ApiKey } | { ok: false; retryAfterSeconds?: number };

interface Failures {
  count: number;
  windowEndsAt: number;
}

export class Credentials {
  /** A key known to this process only: the digests mean nothing outside it. */
  private readonly digestKey = randomBytes(32);
  /** By client id: the stored hash the secret was checked against, and its digest. */
  private readonly accepted = new Map<string, { secretHash: string; digest: Buffer }>();
  private readonly failures = new Map<string, Failures>();
  private waiting = 0;

  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
    private readonly now: () => number = Date.now,
  ) {}

  private digest(secret: string): Buffer {
    return createHmac('sha256', this.digestKey).update(secret).digest();
  }

  /** The stored form of a new key's secret. */
  hash(secret: string): Promise<string> {
    return this.secrets.hash(secret);
  }

  /** A pair known to be good (one just created, or one just verified). */
  remember(apiKey: ApiKey, secret: string): void {
    this.accepted.delete(apiKey.clientId);
    if (this.accepted.size >= REMEMBERED) this.accepted.delete(this.accepted.keys().next().value!);
    this.accepted.set(apiKey.clientId, { secretHash: apiKey.secretHash, digest: this.digest(secret) });
  }

  async check(clientId: string, secret: string): Promise<Check> {
    const known = this.accepted.get(clientId);
    if (known && timingSafeEqual(this.digest(secret), known.digest)) {
      // Still the key whose secret was checked: a deleted or replaced key reads otherwise.
      const apiKey = await this.store.getApiKey(clientId);
      if (apiKey?.secretHash === known.secretHash) return { ok: true, apiKey };
      this.accepted.delete(clientId);
    }

    // Refused before anything else is asked of the database: a flood costs memory lookups only.
    const now = this.now();
    const failed = this.failures.get(clientId);
    if (failed && failed.windowEndsAt <= now) this.failures.delete(clientId);
    else if (failed && failed.count >= FAILURE_LIMIT)
      return { ok: false, retryAfterSeconds: Math.ceil((failed.windowEndsAt - now) / 1000) };
    if (this.waiting >= MAX_WAITING) return { ok: false, retryAfterSeconds: 1 };

    this.waiting++;
    let apiKey: ApiKey | undefined;
    let valid: boolean;
    try {
      apiKey = await this.store.getApiKey(clientId);
      valid = await this.secrets.verify(secret, apiKey?.secretHash);
    } finally {
      this.waiting--;
    }
    if (valid && apiKey) {
      this.failures.delete(clientId);
      this.remember(apiKey, secret);
      return { ok: true, apiKey };
    }
    this.fail(clientId);
    return { ok: false };
  }

  private fail(clientId: string): void {
    const now = this.now();
    const failed = this.failures.get(clientId);
    if (failed && failed.windowEndsAt > now) {
      failed.count++;
      return;
    }
    if (this.failures.size >= REMEMBERED) this.failures.delete(this.failures.keys().next().value!);
    this.failures.set(clientId, { count: 1, windowEndsAt: now + FAILURE_WINDOW_MS });
  }
}

/**
 * Whether an API key pair may have a token, under load from anyone. Checking a secret
 * costs a deliberately slow scrypt hash, made one at a time, so without limits a flood
 * of bad pairs makes every good one wait behind it. A client id is not secret: a limit
 * that refused a client id's right secret would let anyone lock its owner out, so only
 * the hash decides a pair that is not remembered, and the limits decide how much hashing
 * a source gets and how a wrong secret is answered (the 429 of POST /api/token in the
 * description):
 *
 * - A pair this server has accepted (or issued) is remembered, as a keyed digest of the
 *   secret beside the key's stored hash: a repeat is recognised with no scrypt, before
 *   any limit applies, so a flood cannot slow a valid key down, its own client id included.
 * - Any other pair is hashed whatever failed before it, so a right secret gets its token
 *   on every server and after every restart. A wrong one is answered 429 instead of 401
 *   once its client id (FAILURE_LIMIT) or its source address (SOURCE_FAILURE_LIMIT) has
 *   failed too often within the window.
 * - Hashing waits in a bounded queue: past MAX_WAITING the pair is refused at once (429),
 *   so an admitted check never waits long. One source may hold MAX_WAITING_PER_SOURCE of
 *   it, so a flood from one address leaves room for everyone else; a source over its
 *   failure limit gets one check at a time, one a THROTTLED_PACE_MS at most. The address
 *   is what slows a guesser: it is the one thing a guesser does not share with the owner.
 *   An owner behind the guesser's address (one network, one proxy) may be asked to retry
 *   within a second for want of a turn, but its secret, once hashed, is never refused.
 *
 * The counts are this process's own: a restart or another server starts them afresh,
 * which gives a guesser a few more answers but never refuses an owner.
 *
 * An unknown client id and a wrong secret go through the same steps with the same work,
 * so their answers and timing stay identical.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import type { ApiKey, Store } from '../store/types.ts';
import type { Secrets } from './secrets.ts';

/** Checks waiting for, or in, the hash: a fraction of a second of hashing. */
export const MAX_WAITING = 8;
/** Of those, what one source may hold: half, so one address never fills the queue. */
export const MAX_WAITING_PER_SOURCE = 4;
/** Failures per client id within a window before its wrong secrets are answered 429. */
export const FAILURE_LIMIT = 10;
/**
 * Failures per source within a window before it is throttled: above a client's retries of
 * one wrong secret (or a few) across its keys, below what guessing needs.
 */
export const SOURCE_FAILURE_LIMIT = 30;
export const FAILURE_WINDOW_MS = 60_000;
/** A throttled source starts one check at most this often: 60 guesses a minute, not the hash's pace. */
export const THROTTLED_PACE_MS = 1_000;
/**
 * Remembered pairs, counted client ids and counted sources, each at most (the oldest go
 * first). A count bounds their bytes too: client ids are at most 255 characters
 * (TokenRequest), refused longer before they get here.
 */
const REMEMBERED = 10_000;

export type Check = { ok: true; apiKey: ApiKey } | { ok: false; retryAfterSeconds?: number };

/**
 * The unit a source is counted in: an IPv4 address, or an IPv6 /64, since one subscriber
 * usually holds a whole /64 and could otherwise take a fresh address for every guess.
 */
export function sourceOf(address: string | undefined): string {
  if (address === undefined || !ipaddr.isValid(address)) return address ?? '';
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const prefix = (parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${prefix.join(':')}::/64`;
}

/** Failures per key within a fixed window, for at most REMEMBERED keys (the oldest go first). */
export class FailureCounts {
  private readonly counts = new Map<string, { count: number; windowEndsAt: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whole seconds until `key`'s window ends, when it has failed `limit` times in it; else undefined. */
  limited(key: string): number | undefined {
    const entry = this.current(key);
    if (!entry || entry.count < this.limit) return undefined;
    return Math.max(1, Math.ceil((entry.windowEndsAt - this.now()) / 1000));
  }

  add(key: string): void {
    const entry = this.current(key);
    if (entry) {
      entry.count++;
      return;
    }
    if (this.counts.size >= REMEMBERED) this.counts.delete(this.counts.keys().next().value!);
    this.counts.set(key, { count: 1, windowEndsAt: this.now() + this.windowMs });
  }

  private current(key: string) {
    const entry = this.counts.get(key);
    if (entry && entry.windowEndsAt <= this.now()) {
      this.counts.delete(key);
      return undefined;
    }
    return entry;
  }
}

/** One start per key at most every `intervalMs`, for at most REMEMBERED keys (the oldest go first). */
export class Pace {
  private readonly starts = new Map<string, number>();

  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether `key` may start now; if so, the start is noted. */
  take(key: string): boolean {
    const now = this.now();
    const last = this.starts.get(key);
    if (last !== undefined && now - last < this.intervalMs) return false;
    this.starts.delete(key);
    if (this.starts.size >= REMEMBERED) this.starts.delete(this.starts.keys().next().value!);
    this.starts.set(key, now);
    return true;
  }
}

export class Credentials {
  /** A key known to this process only: the digests mean nothing outside it. */
  private readonly digestKey = randomBytes(32);
  /** By client id: the stored hash the secret was checked against, and its digest. */
  private readonly accepted = new Map<string, { secretHash: string; digest: Buffer }>();
  private readonly idFailures: FailureCounts;
  private readonly sourceFailures: FailureCounts;
  private waiting = 0;
  /** Checks waiting or hashing, by source (none: no entry). */
  private readonly waitingBySource = new Map<string, number>();
  /** When each throttled source last started a check. */
  private readonly throttledStarts: Pace;

  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
    private readonly now: () => number = Date.now,
  ) {
    this.idFailures = new FailureCounts(FAILURE_LIMIT, FAILURE_WINDOW_MS, now);
    this.sourceFailures = new FailureCounts(SOURCE_FAILURE_LIMIT, FAILURE_WINDOW_MS, now);
    this.throttledStarts = new Pace(THROTTLED_PACE_MS, now);
  }

  private digest(secret: string): Buffer {
    return createHmac('sha256', this.digestKey).update(secret).digest();
  }

  /** The stored form of a new key's secret. */
  hash(secret: string): Promise<string> {
    return this.secrets.hash(secret);
  }

  /** The stored form of a secret nobody holds (Secrets.unmatchable). */
  unmatchable(): string {
    return this.secrets.unmatchable();
  }

  /** A pair known to be good (one just created, or one just verified). */
  remember(apiKey: ApiKey, secret: string): void {
    this.accepted.delete(apiKey.clientId);
    if (this.accepted.size >= REMEMBERED) this.accepted.delete(this.accepted.keys().next().value!);
    this.accepted.set(apiKey.clientId, { secretHash: apiKey.secretHash, digest: this.digest(secret) });
  }

  /** `address`: the caller's (the socket's remote address). */
  async check(clientId: string, secret: string, address?: string): Promise<Check> {
    const known = this.accepted.get(clientId);
    if (known && timingSafeEqual(this.digest(secret), known.digest)) {
      // Still the key whose secret was checked: a deleted or replaced key reads otherwise.
      const apiKey = await this.store.getApiKey(clientId);
      if (apiKey?.secretHash === known.secretHash) return { ok: true, apiKey };
      this.accepted.delete(clientId);
    }

    // Refused before anything is asked of the database, so a flood costs memory lookups
    // only; and for want of a turn at the hash, never for failures alone.
    const source = sourceOf(address);
    if (!this.admit(source)) return { ok: false, retryAfterSeconds: 1 };
    let apiKey: ApiKey | undefined;
    let valid: boolean;
    try {
      apiKey = await this.store.getApiKey(clientId);
      valid = await this.secrets.verify(secret, apiKey?.secretHash);
    } finally {
      this.release(source);
    }
    if (valid && apiKey) {
      this.remember(apiKey, secret);
      return { ok: true, apiKey };
    }
    // Judged by the failures before this one: the attempt that reaches a limit is still a 401.
    const seconds = [this.idFailures.limited(clientId), this.sourceFailures.limited(source)];
    this.idFailures.add(clientId);
    this.sourceFailures.add(source);
    const retryAfterSeconds = Math.max(...seconds.filter((s) => s !== undefined));
    return Number.isFinite(retryAfterSeconds) ? { ok: false, retryAfterSeconds } : { ok: false };
  }

  /** Whether `source` may have a check hashed now; if so, it is counted as waiting. */
  private admit(source: string): boolean {
    const mine = this.waitingBySource.get(source) ?? 0;
    if (this.waiting >= MAX_WAITING || mine >= MAX_WAITING_PER_SOURCE) return false;
    if (this.sourceFailures.limited(source) !== undefined && (mine > 0 || !this.throttledStarts.take(source)))
      return false;
    this.waiting++;
    this.waitingBySource.set(source, mine + 1);
    return true;
  }

  private release(source: string): void {
    this.waiting--;
    const mine = (this.waitingBySource.get(source) ?? 1) - 1;
    if (mine > 0) this.waitingBySource.set(source, mine);
    else this.waitingBySource.delete(source);
  }
}

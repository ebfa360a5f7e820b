/**
 * Access tokens (service document: Authentication 2-6, Access token response).
 *
 * A token is fetched with the form-encoded body, reused until shortly before it expires,
 * and fetched by one request at a time: concurrent callers share the request in flight.
 * The lifetime comes from `expiresIn`, capped at the documented five minutes (the
 * document's own sample is written in hour form, so a longer value is not trusted).
 * Because the service judges expiry on its own clock, a `token_expired` answer is the
 * real signal: the caller drops the token with `invalidate` and asks again.
 */

export const DOCUMENTED_TOKEN_LIFETIME_MS = 5 * 60_000;

export interface IssuedToken {
  accessToken: string;
  expiresIn: string;
}

export interface TokenCacheOptions {
  /** Fetches a new token (the client's POST /api/token). */
  fetchToken: () => Promise<IssuedToken>;
  /** Renew this long before the computed expiry (default 30 s). */
  refreshMarginMs?: number;
  /** The client's clock in milliseconds (default Date.now). */
  now?: () => number;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * The lifetime a duration text states, in milliseconds, or undefined when the text is not
 * understood. Reads `300`, `300s`, `5m`, `5 minutes`, `1h`, `1h30m`, `00:05:00` and ISO 8601 `PT5M`.
 */
export function parseDuration(text: string): number | undefined {
  const value = text.trim().toLowerCase();
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const iso = /^pt(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?$/.exec(value);
  if (iso && value !== 'pt')
    return (Number(iso[1] ?? 0) * 3600 + Number(iso[2] ?? 0) * 60 + Number(iso[3] ?? 0)) * 1000;
  const clock = /^(\d+):(\d{2}):(\d{2})$/.exec(value);
  if (clock) return (Number(clock[1]) * 3600 + Number(clock[2]) * 60 + Number(clock[3])) * 1000;
  const units = 'ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?';
  // The whole text must be parts such as `1h 30m`, or it is not understood.
  if (!new RegExp(`^(?:\\d+(?:\\.\\d+)?\\s*(?:${units})\\s*,?\\s*)+$`).test(value)) return undefined;
  let total = 0;
  for (const [, amount, unit] of value.matchAll(new RegExp(`(\\d+(?:\\.\\d+)?)\\s*(${units})(?![a-z])`, 'g'))) {
    const key = unit === 'ms' || unit!.startsWith('milli') ? 'ms' : unit![0]!;
    total += Number(amount) * UNIT_MS[key]!;
  }
  return total;
}

/** A shared, single-flight cache of one access token. */
export class TokenCache {
  private current: { token: string; renewAt: number } | undefined;
  private inFlight: Promise<string> | undefined;
  private readonly refreshMarginMs: number;
  private readonly now: () => number;

  constructor(private readonly options: TokenCacheOptions) {
    this.refreshMarginMs = options.refreshMarginMs ?? 30_000;
    this.now = options.now ?? Date.now;
  }

  /** A token that is still good by the client's clock: the cached one, or a new one. */
  async get(): Promise<string> {
    if (this.current && this.now() < this.current.renewAt) return this.current.token;
    this.inFlight ??= this.fetch().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /**
   * Drops `token` when it is still the cached one. Several requests that fail with the
   * same expired token therefore cause one renewal, not one each.
   */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }

  private async fetch(): Promise<string> {
    const issuedAt = this.now();
    const { accessToken, expiresIn } = await this.options.fetchToken();
    const stated = parseDuration(expiresIn) ?? DOCUMENTED_TOKEN_LIFETIME_MS;
    const lifetime = Math.min(stated, DOCUMENTED_TOKEN_LIFETIME_MS);
    this.current = { token: accessToken, renewAt: issuedAt + Math.max(0, lifetime - this.refreshMarginMs) };
    return accessToken;
  }
}

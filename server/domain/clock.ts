/**
 * Each organisation has its own clock: real time plus an offset that the sandbox API
 * moves forward. Token expiry, session expiry, idempotency memory and the webhook retry
 * schedule all read it, so tests advance time instead of waiting.
 */
import type { Organisation } from '../store/types.ts';

export function orgNow(org: Pick<Organisation, 'clockOffsetMs'>, realNow = Date.now()): number {
  return realNow + org.clockOffsetMs;
}

/** An instant as the service writes timestamps: ISO 8601, UTC, with milliseconds. */
export const iso = (ms: number): string => new Date(ms).toISOString();

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;

/**
 * Each organisation has its own clock: real time plus an offset that the sandbox API
 * moves forward. Token expiry, session expiry, idempotency memory and the webhook retry
 * schedule all read it, so tests advance time instead of waiting.
 */
import type { Organisation } from '../store/types.ts';

export function orgNow(org: Pick<Organisation, 'clockOffsetMs'>, realNow = Date.now()): number {
  return realNow + org.clockOffsetMs;
}

const pad2 = (n: number) => (n < 10 ? '0' : '') + n;
const pad3 = (n: number) => (n < 10 ? '00' : n < 100 ? '0' : '') + n;
/** 10000-01-01T00:00:00.000Z: from there on toISOString writes six-digit years. */
const YEAR_10000 = 253402300800000;

/**
 * `new Date(ms).toISOString()`, written out by arithmetic: every read answers three of
 * these and the Date round trip costs several times more. Days to a civil date by
 * Howard Hinnant's days_from_civil inverse; anything outside 1970–9999 (or not an
 * integer) goes to Date itself.
 */
export function iso(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0 || ms >= YEAR_10000) return new Date(ms).toISOString();
  const days = Math.floor(ms / 86_400_000);
  let rest = ms - days * 86_400_000;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const mp = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  // Years 1970–9999 have four digits, as toISOString writes them.
  return `${year}-${pad2(month)}-${pad2(day)}T${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${pad3(rest - seconds * 1000)}Z`;
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;

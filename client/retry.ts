/**
 * When and how long to wait before sending a request again (service document: HTTP
 * statuses, "500: retry with exponential backoff"; Idempotency rules). A retry is safe
 * because every create carries an Idempotency-Key that stays the same across attempts.
 */

export interface RetryPolicy {
  /** Further attempts after the first (default 2: three attempts in all). */
  maxRetries: number;
  /** First delay before the jitter, in milliseconds (default 500). */
  initialDelayMs: number;
  /** Ceiling of any one delay, in milliseconds (default 8000). */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxRetries: 2, initialDelayMs: 500, maxDelayMs: 8000 };

/** What happened to one attempt: an answer's status, or no answer at all. */
export type AttemptOutcome = { status: number } | { networkError: unknown };

/** Whether to send the request again after `retriesSoFar` retries ended in `outcome`. */
export function shouldRetry(outcome: AttemptOutcome, retriesSoFar: number, policy: RetryPolicy): boolean {
  // The budget is bounded: a service that keeps failing is reported, not hammered.
  if (retriesSoFar >= policy.maxRetries) return false;
  // No answer: the request may or may not have arrived; the idempotency key makes a repeat safe.
  if ('networkError' in outcome) return true;
  // 5xx: a service-side failure, the only status the document says to retry.
  if (outcome.status >= 500) return true;
  // Everything else (2xx, and every 4xx including 401) is an answer to act on, not to repeat.
  // An expired token is renewed by the token layer, not by this policy.
  return false;
}

/**
 * Exponential backoff with "equal jitter": half the delay is fixed, half random, so
 * clients that failed together do not retry together, yet each still waits.
 */
export function backoffDelay(retriesSoFar: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const exponential = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** retriesSoFar);
  return exponential / 2 + random() * (exponential / 2);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

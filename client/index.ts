/**
 * The payment service SDK: a typed client that handles tokens, idempotency keys, retries
 * and errors as the service document asks, and webhook signing and verification.
 */
export * from './client.ts';
export * from './errors.ts';
export { IDEMPOTENCY_HEADER, generateIdempotencyKey } from './idempotency.ts';
export * from './payments.ts';
export { DEFAULT_RETRY_POLICY, backoffDelay, shouldRetry, type RetryPolicy } from './retry.ts';
export { DOCUMENTED_TOKEN_LIFETIME_MS, parseDuration } from './token.ts';
export * from './webhooks.ts';

/**
 * The SDK for browsers and workers (package.json `exports` conditions `browser`, `worker`
 * and `workerd`): the same client, with webhook signing and verification on WebCrypto
 * only (`verifyWebhookAsync`, `signWebhookAsync`), so that no Node built-in is imported.
 */
export * from './client.ts';
export * from './errors.ts';
export { IDEMPOTENCY_HEADER, generateIdempotencyKey } from './idempotency.ts';
export * from './payments.ts';
export { DEFAULT_RETRY_POLICY, backoffDelay, shouldRetry, type RetryPolicy } from './retry.ts';
export { DOCUMENTED_TOKEN_LIFETIME_MS, parseDuration } from './token.ts';
export * from './webhooks-web.ts';

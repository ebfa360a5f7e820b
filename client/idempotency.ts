/**
 * Idempotency keys (service document: Idempotency rules). A create without a key turns a
 * 500 into an ambiguous answer, so the client gives every create one: the caller's, or
 * a random UUID generated once per call and kept for all of its retries.
 */

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/**
 * A fresh key: a random (version 4) UUID, unguessable and unique per create, from the
 * runtime's WebCrypto (Node, browsers, workers, Deno and Bun all have it).
 */
export function generateIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

/**
 * What a checkout session's answers keep (Resources: Checkout session; Idempotency rules;
 * Limits: checkout session lifetime).
 */
import { isDeepStrictEqual } from 'node:util';
import { at, show } from '../core/json.ts';

/** The fields of the create response (Resources: Checkout session (create response)). */
export const CREATE_FIELDS = [
  'id',
  'status',
  'url',
  'code',
  'amount',
  'checkoutMethod',
  'reference',
  'testMode',
  'expiresAt',
] as const;

/**
 * Idempotency rules 1: the same key and body "replays its result": the fields of the create
 * response in which the replay differs from the original answer. Extra fields may differ;
 * so may the status once the payment has moved on (`statusMoved`).
 */
export function replayDifferences(replay: unknown, original: unknown, statusMoved = false): string[] {
  return CREATE_FIELDS.filter(
    (f) => !(statusMoved && f === 'status') && !isDeepStrictEqual(at(replay, f), at(original, f)),
  );
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * "A session expires 24 hours after creation": expiresAt is createdAt plus 24 hours, to
 * within a minute (the document fixes the lifetime, not how precise either timestamp is).
 */
export function expiryProblem(read: unknown): string | undefined {
  const span = Date.parse(String(at(read, 'expiresAt'))) - Date.parse(String(at(read, 'createdAt')));
  if (Math.abs(span - DAY_MS) <= 60_000) return undefined;
  return `expiresAt ${show(at(read, 'expiresAt'))} is ${Number.isNaN(span) ? 'not a time after' : `${span / 3_600_000} h after`} createdAt ${show(at(read, 'createdAt'))}; a session expires 24 hours after creation.`;
}

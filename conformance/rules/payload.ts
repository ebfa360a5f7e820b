/**
 * The webhook payload of sessions and payment links (Events: Payload; Delivery target): a
 * small JSON body naming the transaction that changed, and nothing saying test or live.
 */
import { at, isObject, show } from '../core/json.ts';
import { isUtcTimestamp, UUID } from './values.ts';

/** Field names that would say whether a payment was test or live. */
const MODE_FIELD = /^(test_?mode|live_?mode|is_?test|is_?live|test|live|mode|environment)$/i;

/** What the payload of a completed payment must name: its session (null for a link) and the merchant's id. */
export interface PayloadOf {
  checkoutSessionId: string | null;
  foreignTransactionId: string | null;
}

export interface PayloadProblem {
  problem: string;
  clause: string;
}

/** Every way the body of a checkout_session.completed delivery differs from the documented payload. */
export function payloadProblems(body: unknown, expected: PayloadOf): PayloadProblem[] {
  const problems: PayloadProblem[] = [];
  const want = (ok: boolean, problem: string, clause: string) => {
    if (!ok) problems.push({ problem, clause });
  };
  const field = (name: string) => at(body, name);
  want(
    field('event') === 'checkout_session.completed',
    `event is ${show(field('event'))}, expected "checkout_session.completed"`,
    'event.completed',
  );
  want(
    isUtcTimestamp(field('createdAt')),
    `createdAt ${show(field('createdAt'))} is not an ISO 8601 UTC timestamp`,
    'payload.created',
  );
  want(
    field('checkoutSessionId') === expected.checkoutSessionId,
    `checkoutSessionId is ${show(field('checkoutSessionId'))}, expected ${show(expected.checkoutSessionId)}${expected.checkoutSessionId === null ? ' (a payment link)' : ''}`,
    'payload.session',
  );
  const transactionId = field('transactionId');
  want(
    typeof transactionId === 'string' && UUID.test(transactionId),
    `transactionId ${show(transactionId)} is not a UUID`,
    'payload.transaction',
  );
  // Present, and null when none was given: the key is always there.
  want(
    isObject(body) && 'foreignTransactionId' in body && body.foreignTransactionId === expected.foreignTransactionId,
    `foreignTransactionId is ${show(field('foreignTransactionId'))}, expected ${show(expected.foreignTransactionId)}`,
    'payload.foreign-id',
  );
  // "The payload does not say whether it was test": the merchant reads testMode back.
  const mode = Object.keys(isObject(body) ? body : {}).filter((k) => MODE_FIELD.test(k));
  want(mode.length === 0, `it says whether the payment was test (${mode.join(', ')})`, 'target.no-mode');
  return problems;
}

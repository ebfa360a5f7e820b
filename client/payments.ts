/**
 * Reading payments safely (service document: States and transitions 1, Event kinds).
 * Statuses and events are open sets: a value this client does not know is carried as
 * it is, never thrown on, and never taken to mean paid.
 */
import type { components } from '@payment-service/contract';

/** The statuses the document lists today; more may come. */
export const KNOWN_STATUSES = ['created', 'pending', 'completed', 'failed', 'expired'] as const;
export type KnownStatus = (typeof KNOWN_STATUSES)[number];

/** The one event that means paid. */
export const COMPLETED_EVENT = 'checkout_session.completed';

/** True only for `completed`, the one status to fulfil on; any other, known or not, is false. */
export function isPaid(payment: { status: string }): boolean {
  return payment.status === 'completed';
}

/** Whether a status is one the document lists (for logging an unfamiliar one, not for deciding). */
export function isKnownStatus(status: string): status is KnownStatus {
  return (KNOWN_STATUSES as readonly string[]).includes(status);
}

/** Whether a verified webhook event is the completion prompt; unknown events are to be ignored with a 2xx. */
export function isCompletedEvent(event: components['schemas']['WebhookEvent']): boolean {
  return event.event === COMPLETED_EVENT;
}

/**
 * Webhook delivery from a durable outbox (service document: Events, Response and retry
 * behaviour). Completing a payment queues its webhook in the same transaction; then:
 *
 * - open banking rail: one attempt, made inline before the payer's attempt is answered;
 * - card rail: up to three attempts in total, the 2nd one minute and the 3rd five minutes
 *   after the previous failure, on the organisation's clock (tests advance the clock);
 * - success is any 2xx; a 4xx other than 408 or 429 is final; anything else, or no answer
 *   within five seconds, is a failure, logged as an alert and recorded;
 * - each attempt is recorded before it is made, so a crash never resets the count: an
 *   attempt the crash interrupted counts as failed and the schedule carries on;
 * - the body bytes were fixed when the event happened (so `createdAt` is identical on
 *   every attempt); the signature is made at sending time with the organisation's current
 *   secret, or left off when the `signing_secret_unavailable` fault says so; legacy bodies
 *   are never signed.
 */
import type { Logger } from 'pino';
import { SIGNATURE_HEADER, signWebhook } from '@payment-service/client/webhooks';
import { MINUTE, orgNow } from '../domain/clock.ts';
import type { Faults } from '../sandbox/faults.ts';
import type { OutboxEntry, Store } from '../store/types.ts';
import { sendWebhook, type SendResult } from './send.ts';

export const CARD_ATTEMPTS = 3;
/** Wait before attempt 2 and attempt 3, after the previous attempt failed. */
export const RETRY_DELAYS_MS = [1 * MINUTE, 5 * MINUTE] as const;

const isSuccess = (status: number | null) => status !== null && status >= 200 && status < 300;
/** A 4xx other than 408 (timeout) and 429 (rate limit) says retrying will not help. */
const isFinalStatus = (status: number | null) =>
  status !== null && status >= 400 && status < 500 && status !== 408 && status !== 429;

export class WebhookDispatcher {
  private readonly running = new Map<number, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly faults: Faults,
    private readonly log: Logger,
    private readonly options: { pollIntervalMs?: number; timeoutMs?: number } = {},
  ) {}

  async start(): Promise<void> {
    for (const interrupted of await this.store.interruptedDeliveries()) {
      const entry = await this.store.getWebhook(interrupted.outboxId);
      if (entry)
        await this.conclude(entry, interrupted.id, interrupted.attempt, {
          status: null,
          error: 'interrupted: the service stopped during this attempt',
        });
    }
    const poll = () => {
      if (this.stopped) return;
      this.tick()
        .catch((err: unknown) => this.log.error({ err }, 'webhook polling failed'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(poll, this.options.pollIntervalMs ?? 100);
        });
    };
    poll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.allSettled(this.running.values());
  }

  /** Makes the entry's next attempt now (or joins the one under way). */
  deliver(entry: OutboxEntry): Promise<void> {
    const under = this.running.get(entry.id);
    if (under) return under;
    const run = this.attempt(entry).finally(() => this.running.delete(entry.id));
    this.running.set(entry.id, run);
    return run;
  }

  private async tick(): Promise<void> {
    const due = await this.store.dueWebhooks(Date.now(), 50);
    for (const entry of due) if (!this.running.has(entry.id)) void this.deliver(entry);
  }

  private async attempt(queued: OutboxEntry): Promise<void> {
    const entry = (await this.store.getWebhook(queued.id)) ?? queued;
    const org = await this.store.getOrganisation(entry.orgId);
    if (!org || entry.state !== 'pending') return;
    const attempt = entry.attemptsMade + 1;
    const unsigned = entry.legacy || (await this.faults.take(org.id, 'signing_secret_unavailable'));
    const headers: Record<string, string> = unsigned
      ? {}
      : { [SIGNATURE_HEADER]: signWebhook(entry.body, org.webhookSecret) };
    const deliveryId = await this.store.startDelivery(entry, {
      outboxId: entry.id,
      transactionId: entry.transactionId,
      url: entry.url,
      attempt,
      at: orgNow(org),
      signed: !unsigned,
    });
    const result = await sendWebhook(entry.url, entry.body, headers, entry.mode, this.options.timeoutMs);
    await this.conclude(entry, deliveryId, attempt, result);
  }

  private async conclude(entry: OutboxEntry, deliveryId: number, attempt: number, result: SendResult): Promise<void> {
    const org = await this.store.getOrganisation(entry.orgId);
    const now = org ? orgNow(org) : Date.now();
    const delivered = isSuccess(result.status);
    const maxAttempts = entry.rail === 'card' ? CARD_ATTEMPTS : 1;
    const final = delivered || Boolean(result.refused) || isFinalStatus(result.status) || attempt >= maxAttempts;
    const state: OutboxEntry['state'] = delivered ? 'delivered' : final ? 'failed' : 'pending';
    const nextAttemptAt = final ? now : now + RETRY_DELAYS_MS[attempt - 1]!;
    await this.store.finishDelivery(
      deliveryId,
      { responseStatus: result.status, error: result.error, final },
      { state, nextAttemptAt },
    );
    if (!delivered) {
      this.log.warn(
        {
          alert: 'webhook_delivery_failed',
          transactionId: entry.transactionId,
          target: new URL(entry.url).origin,
          attempt,
          status: result.status,
          error: result.error,
          final,
          rail: entry.rail,
        },
        final ? 'webhook delivery failed; no further attempt' : 'webhook delivery failed; will retry',
      );
    }
  }
}

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
 * - with several servers on one database, each attempt is made by the one server that
 *   holds the entry's lease: the server that completed the payment holds the first, and
 *   a due retry goes to whichever server's poller claims it first. A lease outlasts any
 *   attempt (LEASE_MS), so one that ends unfinished means its server stopped: another
 *   claims the entry, records the interrupted attempt as failed, and carries on;
 * - the body bytes were fixed when the event happened (so `createdAt` is identical on
 *   every attempt); the signature is made at sending time with the organisation's current
 *   secret, or left off when the `signing_secret_unavailable` fault says so; legacy bodies
 *   are never signed.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { SIGNATURE_HEADER, signWebhook } from '@payment-service/client/webhooks';
import { MINUTE, orgNow } from '../domain/clock.ts';
import type { Faults } from '../domain/faults.ts';
import type { Lease, OutboxEntry, Store } from '../store/types.ts';
import { ANSWER_TIMEOUT_MS, type AnswerClock, type SendResult, sendWebhook } from './send.ts';

export const CARD_ATTEMPTS = 3;
/** How long a server holds an attempt: longer than an attempt can take (ANSWER_TIMEOUT_MS and the writes around it). */
export const LEASE_MS = ANSWER_TIMEOUT_MS * 2;
/**
 * Attempts in flight at once from the queue, at most: each holds a socket (and a lease)
 * for up to the five-second answer wait, so a backlog aimed at slow receivers cannot take
 * the descriptors the server keeps for its store and its connections.
 */
const MAX_QUEUED_ATTEMPTS = 32;
/** Between polls while the database fails, and how often that is logged. */
const FAILING_POLL_MS = 1000;
/**
 * Waits between tries to record an attempt's outcome while the store fails. Should the
 * lease end first, another server concludes the attempt as interrupted and a late write
 * here changes nothing (finishDelivery concludes an attempt once).
 */
const RECORD_RETRY_MS = [250, 500, 1000, 2000] as const;
/** Wait before attempt 2 and attempt 3, after the previous attempt failed. */
export const RETRY_DELAYS_MS = [1 * MINUTE, 5 * MINUTE] as const;

const isSuccess = (status: number | null) => status !== null && status >= 200 && status < 300;
/** A 4xx other than 408 (timeout) and 429 (rate limit) says retrying will not help. */
const isFinalStatus = (status: number | null) =>
  status !== null && status >= 400 && status < 500 && status !== 408 && status !== 429;

export class WebhookDispatcher {
  private readonly running = new Map<number, Promise<void>>();
  /** This server's name on the leases it takes. */
  private readonly owner = `server-${randomBytes(6).toString('hex')}`;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Polls that failed in a row (the database unreachable, say). */
  private failing = 0;

  constructor(
    private readonly store: Store,
    private readonly faults: Faults,
    private readonly log: Logger,
    private readonly options: { pollIntervalMs?: number; answerClock?: AnswerClock } = {},
  ) {}

  /** A lease on a new entry's first attempt, for this server. */
  lease(): Lease {
    return { owner: this.owner, until: Date.now() + LEASE_MS };
  }

  async start(): Promise<void> {
    // The store's only user holds no lease at start: whoever took them has stopped.
    if (this.store.exclusive) await this.store.releaseWebhookLeases();
    const poll = () => {
      if (this.stopped) return;
      this.tick()
        .then(
          () => {
            if (this.failing > 0) this.log.info({ failedPolls: this.failing }, 'webhook polling works again');
            this.failing = 0;
          },
          (err: unknown) => {
            // Logged once, then every minute or so: a database that is down fails every poll.
            if (this.failing++ % 60 === 0) this.log.error({ err }, 'webhook polling failed');
          },
        )
        .finally(() => {
          if (this.stopped) return;
          const wait = this.failing > 0 ? FAILING_POLL_MS : (this.options.pollIntervalMs ?? 100);
          this.timer = setTimeout(poll, wait);
        });
    };
    poll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.allSettled(this.running.values());
  }

  /**
   * Makes the next attempt of an entry this server holds the lease of (or joins the one
   * under way). It never rejects: when the store fails on the way, the failure is logged
   * and the entry stays pending under its lease, so once the lease ends a poller (this
   * server's or another's) takes it up again under the document's retry rules, and an
   * attempt whose outcome could not be recorded counts as failed. Neither the payer's
   * attempt that started the delivery nor the process may end because of it. Once
   * stopping, no new attempt starts: the entry waits for the next server to run.
   */
  deliver(entry: OutboxEntry): Promise<void> {
    const under = this.running.get(entry.id);
    if (under) return under;
    if (this.stopped) return Promise.resolve();
    const run = this.attempt(entry)
      .catch((err: unknown) => {
        this.log.error(
          { err, transactionId: entry.transactionId, rail: entry.rail },
          'webhook attempt left unfinished: the store failed; it is taken up again when its lease ends',
        );
      })
      .finally(() => this.running.delete(entry.id));
    this.running.set(entry.id, run);
    return run;
  }

  private async tick(): Promise<void> {
    const room = MAX_QUEUED_ATTEMPTS - this.running.size;
    if (room <= 0) return;
    const claimed = await this.store.claimDueWebhooks(this.lease(), Date.now(), room);
    for (const entry of claimed) if (!this.running.has(entry.id)) void this.deliver(entry);
  }

  private async attempt(claimed: OutboxEntry): Promise<void> {
    const entry = (await this.store.getWebhook(claimed.id)) ?? claimed;
    const org = await this.store.getOrganisation(entry.orgId);
    if (!org || entry.state !== 'pending') return;
    const interrupted = await this.store.unfinishedDelivery(entry.id);
    if (interrupted) {
      await this.conclude(entry, interrupted.id, interrupted.attempt, {
        status: null,
        error: 'interrupted: the service stopped during this attempt',
      });
      return;
    }
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
    const result = await sendWebhook(entry.url, entry.body, headers, entry.mode, {
      clock: this.options.answerClock,
    });
    // The receiver has answered: its answer is what the record must say, so a store that
    // fails for a moment is tried again rather than leaving the attempt to be counted as
    // interrupted.
    for (const wait of [...RECORD_RETRY_MS, undefined]) {
      try {
        await this.conclude(entry, deliveryId, attempt, result);
        return;
      } catch (error) {
        if (wait === undefined) throw error;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
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

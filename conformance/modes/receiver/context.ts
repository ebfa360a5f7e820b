/**
 * What a receiver check works with: deliveries sent to the merchant's receiver as the
 * service would send them, each recorded with the receiver's answer and a curl line that
 * replays it byte for byte, and completed events to send, each for a transaction of its
 * own (a real payment with --base-url, a made-up one without).
 */
import { randomUUID } from 'node:crypto';
import { SIGNATURE_HEADER, signWebhook } from '@payment-service/client/webhooks';
import { responseText, shellQuote } from '../../core/http.ts';
import { Redactor } from '../../core/redact.ts';
import { CheckFailure, type Evidence } from '../../core/outcome.ts';
import type { TrafficEntry } from '../../core/traffic.ts';
import type { Payments } from './payments.ts';

/** The receiver under test: where it listens, the secret it verifies with, and what it does with legacy bodies. */
export interface ReceiverUnderTest {
  url: string;
  secret: string;
  /** Undefined: --legacy not given (handling legacy bodies is optional; either answer passes). */
  legacy: 'accept' | 'reject' | undefined;
}

/** Why a check cannot be judged with made-up events: said as its skip reason. */
export const NEEDS_REAL_PAYMENTS =
  'needs real payments: give --base-url with --sandbox-token or --adapter, and --client-id/--client-secret of the receiver’s organisation';

const MADE_UP_NOTE =
  ' The event names a made-up payment (no --base-url): a receiver that reads the payment back before acting may refuse it; run with --base-url to send events of real payments.';

export interface Sent {
  status: number | null;
  ms: number;
  error?: string;
  /** The delivery as sent, the answer, and a curl line replaying the delivery. */
  evidence: Evidence;
}

/** The service waits five seconds for an answer (Events: Response and retry behaviour). */
export const ANSWER_LIMIT_MS = 5000;
const ok = (s: Sent) => s.status !== null && s.status >= 200 && s.status < 300;
export const show = (s: Sent) => (s.status === null ? `no answer (${s.error})` : `${s.status} in ${s.ms} ms`);
export const now = () => Math.floor(Date.now() / 1000);
/** An event value the document does not name: "More event values will be added". */
export const UNKNOWN_EVENT = 'checkout_session.conformance_future_event';

/** What a receiver check works with: deliveries to the receiver, and events for them. */
export class ReceiverContext {
  constructor(
    private readonly options: ReceiverUnderTest,
    readonly payments: Payments | undefined,
    /** Where each delivery sent and its answer go, for the traffic reports (one context per check). */
    private readonly record: (entry: TrafficEntry) => void = () => undefined,
    private readonly checkId = '',
    /** Aborted when the check is abandoned (its time ran out): no further delivery is sent. */
    private readonly signal: AbortSignal = new AbortController().signal,
  ) {}

  get secret(): string {
    return this.options.secret;
  }

  get legacy(): 'accept' | 'reject' | undefined {
    return this.options.legacy;
  }

  /** Events name real payments (a receiver that reads them back finds them paid). */
  get real(): boolean {
    return this.payments !== undefined;
  }

  /** A completed event for a transaction of its own: a real payment when there is a target. */
  async event(overrides: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const foreignTransactionId =
      typeof overrides.foreignTransactionId === 'string'
        ? overrides.foreignTransactionId
        : `order-${randomUUID().slice(0, 8)}`;
    const ids = this.payments
      ? await this.payments.pay(foreignTransactionId)
      : {
          createdAt: new Date().toISOString(),
          checkoutSessionId: `cs_conf${randomUUID().replace(/-/g, '').slice(0, 16)}`,
          transactionId: randomUUID(),
        };
    return {
      event: 'checkout_session.completed',
      createdAt: ids.createdAt,
      checkoutSessionId: ids.checkoutSessionId,
      transactionId: ids.transactionId,
      ...overrides,
      foreignTransactionId,
    };
  }

  async send(raw: string, signature: string | undefined): Promise<Sent> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'payment-conformance',
      ...(signature !== undefined ? { [SIGNATURE_HEADER]: signature } : {}),
    };
    const { pathname, search, host } = new URL(this.options.url);
    const request = [
      `POST ${pathname}${search} HTTP/1.1`,
      `host: ${host}`,
      ...Object.entries(headers).map(([n, v]) => `${n}: ${v}`),
      '',
      raw,
    ].join('\n');
    // The bytes as they were sent: a signature is over them, so nothing is redacted or re-encoded.
    const curl = [
      'curl -sS -i -X POST',
      shellQuote(this.options.url),
      ...Object.entries(headers).map(([n, v]) => `-H ${shellQuote(`${n}: ${v}`)}`),
      '--data-raw',
      shellQuote(raw),
    ].join(' ');
    const started = Date.now();
    try {
      const response = await fetch(this.options.url, {
        method: 'POST',
        headers,
        body: raw,
        signal: AbortSignal.any([this.signal, AbortSignal.timeout(ANSWER_LIMIT_MS + 2000)]),
      });
      const body = await response.text();
      const ms = Date.now() - started;
      const answer: Record<string, string> = {};
      for (const [name, value] of response.headers) answer[name] = value;
      this.delivered(started, ms, headers, raw, { status: response.status, headers: answer, body });
      const redactor = new Redactor();
      redactor.remember(this.options.secret, '$WEBHOOK_SECRET');
      return {
        status: response.status,
        ms,
        evidence: {
          request,
          response: `${responseText({ status: response.status, headers: answer, text: body }, redactor)}\n(answered in ${ms} ms)`,
          curl,
        },
      };
    } catch (error) {
      const ms = Date.now() - started;
      const reason =
        (error as Error).name === 'TimeoutError'
          ? 'timed out'
          : String((error as Error & { cause?: { code?: string } }).cause?.code ?? (error as Error).message);
      this.delivered(started, ms, headers, raw, undefined, reason);
      return {
        status: null,
        ms,
        error: reason,
        evidence: { request, response: `no answer: ${reason} after ${ms} ms`, curl },
      };
    }
  }

  private delivered(
    startedAt: number,
    ms: number,
    headers: Record<string, string>,
    raw: string,
    response: TrafficEntry['response'],
    error?: string,
  ): void {
    this.record({
      kind: 'delivery',
      checkId: this.checkId,
      startedAt,
      durationMs: ms,
      request: { method: 'POST', url: this.options.url, headers, body: raw },
      response,
      ...(error !== undefined ? { error } : {}),
    });
  }

  /** A correctly signed delivery of these exact bytes. */
  signed(raw: string, timestamp?: number): Promise<Sent> {
    return this.send(raw, signWebhook(raw, this.options.secret, timestamp !== undefined ? { timestamp } : {}));
  }

  /** Fails the check unless the receiver answered 2xx. */
  accepts(what: string, s: Sent): void {
    if (ok(s)) return;
    throw new CheckFailure(
      `${what} must be accepted with a 2xx; the receiver answered ${show(s)}.${this.real ? '' : MADE_UP_NOTE}`,
      { evidence: s.evidence },
    );
  }

  /**
   * Fails the check unless the receiver accepted a delivery whose signature header has a
   * form of its own (parts reordered, another version). On a refusal, the same body is sent
   * again with a plain header, so that the reason says what the evidence shows: the
   * header's form refused (the plain one accepted), or something else (both refused).
   */
  async acceptsHeader(what: string, s: Sent, raw: string): Promise<void> {
    if (ok(s)) return;
    const plain = await this.signed(raw);
    const why = ok(plain)
      ? ` The same body with a plain header (t=...,v1=...) was accepted (${show(plain)}): the header's form is what was refused.`
      : ` The same body with a plain header was refused too (${show(plain)}), so the refusal is not the header's form alone.${this.real ? '' : MADE_UP_NOTE}`;
    throw new CheckFailure(`${what} must be accepted with a 2xx; the receiver answered ${show(s)}.${why}`, {
      evidence: s.evidence,
    });
  }

  /**
   * Fails the check when the receiver accepted (a 2xx). Any other answer, or none (a
   * closed connection, no answer within the five-second wait), is a failed delivery to the
   * service, so it rejects.
   */
  rejects(what: string, s: Sent): void {
    if (!ok(s)) return;
    throw new CheckFailure(`${what} must be rejected (not a 2xx); the receiver answered ${show(s)}.`, {
      evidence: s.evidence,
    });
  }
}

/**
 * `payment-conformance receiver`: checks a merchant's webhook receiver the way the
 * service would call it (service document: Events, Signature header, Receiver
 * verification steps, Response and retry behaviour, Legacy payload). The checks are
 * registered like the `run` checks (ids, clauses, levels, `--only`) and reported by the
 * same reporters, each failure with the delivery sent, the receiver's answer and a curl
 * line that replays the delivery byte for byte.
 *
 * Every delivery is made for a transaction of its own, so deduplication cannot hide a
 * wrong answer. Without --base-url the transactions are made up; with it (and the
 * receiver's organisation's credentials) each is a real card payment on the target whose
 * webhookUrl is the receiver, so a receiver that reads the payment back before acting,
 * as the document asks, finds it paid.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { computeSignature, SIGNATURE_HEADER, signWebhook } from '@payment-service/client/webhooks';
import { AdapterError, CAPABILITIES, type Capability, type Delivery, type TargetAdapter } from '../../adapter.ts';
import { baseUrlOf, targetAdapter } from '../../adapters/load.ts';
import type { Check, RegisteredCheck } from '../../runner/check-definition.ts';
import { responseText, send, shellQuote } from '../../http.ts';
import { text } from '../../json.ts';
import {
  CheckFailure,
  CheckSkipped,
  type Evidence,
  type Report,
  type Result,
  resultMaker,
  SetupError,
} from '../../runner/outcome.ts';
import { poll } from '../../poll.ts';
import { Redactor } from '../../redact.ts';
import { byStart, type TrafficEntry } from '../../traffic.ts';
import { Registry } from '../../runner/registry.ts';
import { ConsoleReporter, type Output } from '../../reporters/console.ts';
import { buildReport, exitCodeOf, parseReporters, writeReports } from '../../runner/reporting.ts';
import { DEFAULT_SETTLE_TIMEOUT_S } from '../run/command.ts';

export interface ReceiverOptions {
  url: string;
  secret: string;
  /** Undefined: --legacy not given (handling legacy bodies is optional; either answer passes). */
  legacy: 'accept' | 'reject' | undefined;
  only?: string;
  /** console, json, junit, html (comma-separated); console when not given. */
  reporter?: string;
  out?: string;
  /** The target that makes real payments for the events (with a way to pay: sandbox or adapter). */
  baseUrl?: string;
  sandboxToken?: string;
  adapter?: string | TargetAdapter;
  /** An API key of the receiver's own organisation: the payments are that organisation's. */
  clientId?: string;
  clientSecret?: string;
  settleTimeoutS?: number;
  /** Fail the run when an assumption check fails, instead of reporting it as `differs`. */
  strictAssumptions?: boolean;
}

export const DEFAULT_RECEIVER_OUT = 'reports/receiver';

/** Why a check cannot be judged with made-up events: said as its skip reason. */
export const NEEDS_REAL_PAYMENTS =
  'needs real payments: give --base-url with --sandbox-token or --adapter, and --client-id/--client-secret of the receiver’s organisation';

const MADE_UP_NOTE =
  ' The event names a made-up payment (no --base-url): a receiver that reads the payment back before acting may refuse it; run with --base-url to send events of real payments.';

interface Sent {
  status: number | null;
  ms: number;
  error?: string;
  /** The delivery as sent, the answer, and a curl line replaying the delivery. */
  evidence: Evidence;
}

const ANSWER_LIMIT_MS = 5000;
/** A token is used this long at most: a minute inside its five-minute lifetime (Authentication 4). */
const TOKEN_REUSE_MS = 4 * 60_000;
const ok = (s: Sent) => s.status !== null && s.status >= 200 && s.status < 300;
const show = (s: Sent) => (s.status === null ? `no answer (${s.error})` : `${s.status} in ${s.ms} ms`);
const now = () => Math.floor(Date.now() / 1000);

/** A completed payment of the receiver's organisation, as its event names it. */
interface RealPayment {
  checkoutSessionId: string;
  transactionId: string;
  foreignTransactionId: string;
  createdAt: string;
}

/**
 * Real payments on the target: a card session of the receiver's organisation whose
 * webhookUrl is the receiver, paid through the adapter's attempt. The target delivers its
 * own signed webhook for each; the checks then send their variants of that event.
 */
class Payments {
  private token: Promise<string> | undefined;
  private tokenAt = 0;

  constructor(
    private readonly o: {
      baseUrl: string;
      clientId: string;
      clientSecret: string;
      adapter: TargetAdapter;
      receiverUrl: string;
      /** How long a payment is awaited to read completed, and its delivery to be recorded (--settle-timeout). */
      settleTimeoutMs: number;
    },
    private readonly redactor: Redactor,
  ) {}

  get adapter(): TargetAdapter {
    return this.o.adapter;
  }

  get settleTimeoutMs(): number {
    return this.o.settleTimeoutMs;
  }

  /** A bearer token, reused until it nears the document's five-minute lifetime. */
  private accessToken(): Promise<string> {
    if (this.token && Date.now() - this.tokenAt > TOKEN_REUSE_MS) this.token = undefined;
    if (!this.token) this.tokenAt = Date.now();
    this.token ??= (async () => {
      const issued = await send(
        this.o.baseUrl,
        'POST',
        '/api/token',
        { form: { clientId: this.o.clientId, clientSecret: this.o.clientSecret } },
        'receiver',
        this.redactor,
      );
      const token = text(issued.json, 'accessToken');
      if (issued.status !== 200 || !token)
        throw new SetupError(
          `--client-id/--client-secret: the target answered ${issued.status} to POST /api/token (${this.redactor.text(issued.text).slice(0, 200)}).`,
        );
      return token;
    })();
    return this.token;
  }

  /** A card session whose webhook goes to the receiver; refused creation is a setup error. */
  async session(foreignTransactionId: string): Promise<string> {
    const created = await send(
      this.o.baseUrl,
      'POST',
      '/api/checkout-sessions',
      {
        token: await this.accessToken(),
        headers: { 'idempotency-key': `conf-receiver-${randomUUID()}` },
        json: {
          type: 'single',
          amount: { total: 1.23 },
          creditorReference: { reference: 'conformance' },
          redirectUrl: 'https://conformance.invalid/paid',
          checkoutMethod: 'card',
          webhookUrl: this.o.receiverUrl,
          foreignTransactionId,
        },
      },
      'receiver',
      this.redactor,
    );
    const id = text(created.json, 'id');
    if (created.status !== 200 || !id) {
      const param = text(created.json, 'error', 'details', 0, 'param') ?? text(created.json, 'error', 'param');
      const why =
        param === 'webhookUrl'
          ? ' The target refused the receiver as a webhookUrl (the document requires HTTPS, publicly reachable): give an HTTPS --url.'
          : '';
      throw new SetupError(
        `A checkout session for the receiver could not be created: ${created.status} ${this.redactor.text(created.text).slice(0, 300)}.${why}`,
      );
    }
    return id;
  }

  /** Pays a new session by card and waits until it reads `completed`. */
  async pay(foreignTransactionId: string): Promise<RealPayment> {
    const checkoutSessionId = await this.session(foreignTransactionId);
    const fail = (why: string) => new AdapterError(`A real payment (${checkoutSessionId}) could not be made: ${why}`);
    let redirectTo: string | null;
    try {
      ({ redirectTo } = await this.o.adapter.attempt!(
        { kind: 'checkout-session', id: checkoutSessionId },
        'card',
        'succeeded',
      ));
    } catch (error) {
      throw fail(`the adapter's attempt failed: ${(error as Error).message}`);
    }
    // The redirect carries the transaction id (redirect.params); the read response does not.
    let transactionId =
      redirectTo && URL.canParse(redirectTo) ? new URL(redirectTo).searchParams.get('transactionId') : null;
    const read = await poll(
      async () =>
        send(
          this.o.baseUrl,
          'GET',
          `/api/checkout-sessions/${encodeURIComponent(checkoutSessionId)}`,
          { token: await this.accessToken() },
          'receiver',
          this.redactor,
        ),
      (r) => text(r.json, 'status') === 'completed',
      this.o.settleTimeoutMs,
    );
    const status = text(read.json, 'status');
    if (status !== 'completed') throw fail(`it still reads ${status ?? read.status} after the settle timeout.`);
    const createdAt = text(read.json, 'updatedAt') ?? new Date().toISOString();
    if (!transactionId && this.o.adapter.capabilities.includes('webhookDeliveries')) {
      transactionId = (await this.deliveries(checkoutSessionId, () => true))[0]?.transactionId ?? null;
    }
    if (!transactionId)
      throw fail(
        'its transaction id is unknown: the adapter’s attempt returned no redirect with transactionId, and it offers no webhookDeliveries.',
      );
    return { checkoutSessionId, transactionId, foreignTransactionId, createdAt };
  }

  /** The target's delivery records of a session, once `enough` says so or the settle timeout ends. */
  async deliveries(checkoutSessionId: string, enough: (found: Delivery[]) => boolean): Promise<Delivery[]> {
    const read = async () => {
      try {
        return await this.o.adapter.webhookDeliveries!({ checkoutSessionId });
      } catch (error) {
        throw new AdapterError(`The adapter's webhookDeliveries failed: ${(error as Error).message}`);
      }
    };
    return poll(read, (found) => found.length > 0 && enough(found), this.o.settleTimeoutMs);
  }
}

/** What a receiver check works with: deliveries to the receiver, and events for them. */
export class ReceiverContext {
  constructor(
    private readonly options: Pick<ReceiverOptions, 'url' | 'secret' | 'legacy'>,
    readonly payments: Payments | undefined,
    /** Where each delivery sent and its answer go, for the traffic reports (one context per check). */
    private readonly record: (entry: TrafficEntry) => void = () => undefined,
    private readonly checkId = '',
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

  has(capability: Capability): boolean {
    return this.payments?.adapter.capabilities.includes(capability) ?? false;
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
        signal: AbortSignal.timeout(ANSWER_LIMIT_MS + 2000),
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

const SIGNATURE = 'Events: Signature header';
const RETRY = 'Events: Response and retry behaviour';
const KINDS = 'Events: Event kinds';
const LEGACY = 'Events: Legacy payload';
const UNKNOWN_EVENT = 'checkout_session.conformance_future_event';

/**
 * The receiver checks. RCV-014 depends on --legacy: handling the legacy body is optional,
 * so without it the check is `should` (either answer passes); a receiver declared to
 * accept or reject it is held to that answer at the strength of the clauses it cites.
 */
export function receiverCheckList(legacy: 'accept' | 'reject' | undefined): Check<ReceiverContext>[] {
  return [
    {
      id: 'RCV-001',
      clauses: ['retry.success'],
      section: RETRY,
      title: 'a valid signed delivery is accepted (2xx)',
      run: async (r) => r.accepts('A valid signed delivery', await r.signed(JSON.stringify(await r.event()))),
    },
    {
      id: 'RCV-002',
      clauses: ['verify.raw'],
      section: SIGNATURE,
      title: 'a tampered body (signature of the original) is rejected',
      run: async (r) => {
        const body = await r.event();
        const header = signWebhook(JSON.stringify(body), r.secret);
        r.rejects(
          'A tampered body',
          await r.send(JSON.stringify({ ...body, foreignTransactionId: 'tampered' }), header),
        );
      },
    },
    {
      id: 'RCV-003',
      clauses: ['verify.raw'],
      section: SIGNATURE,
      title:
        'a body with unusual spacing and escapes, signed over its exact bytes, is accepted (no re-serialising before verifying)',
      run: async (r) => {
        const tag = randomUUID().slice(0, 8);
        const e = await r.event({ foreignTransactionId: `caf\u00e9 \u2603 ${tag}` });
        const raw = `{ "event" : "${e.event}",\n  "createdAt":"${e.createdAt}" , "checkoutSessionId": "${e.checkoutSessionId}",\t"transactionId":"${e.transactionId}", "foreignTransactionId": "caf\\u00e9 \u2603 ${tag}" }`;
        r.accepts('A delivery verified over its exact raw bytes', await r.signed(raw));
      },
    },
    {
      id: 'RCV-004',
      clauses: ['verify.raw'],
      section: SIGNATURE,
      title: 'a body that differs from the signed bytes only by re-serialisation is rejected',
      run: async (r) => {
        const body = await r.event();
        const header = signWebhook(JSON.stringify(body), r.secret);
        r.rejects('A re-serialised body', await r.send(JSON.stringify(body, null, 2), header));
      },
    },
    {
      id: 'RCV-005',
      clauses: ['verify.age', 'limit.signature-age'],
      section: SIGNATURE,
      title: 'a correctly signed delivery with t ten minutes old is rejected',
      run: async (r) =>
        r.rejects('A stale timestamp (10 min)', await r.signed(JSON.stringify(await r.event()), now() - 600)),
    },
    {
      id: 'RCV-006',
      clauses: ['sig.reject-unsigned'],
      section: SIGNATURE,
      title: 'an event with no Service-Signature header is rejected',
      run: async (r) =>
        r.rejects('A delivery with no signature', await r.send(JSON.stringify(await r.event()), undefined)),
    },
    {
      id: 'RCV-007',
      clauses: ['verify.split', 'sig.versions'],
      section: SIGNATURE,
      title: 'a header with its parts reordered (v1=...,t=...) is accepted',
      run: async (r) => {
        const raw = JSON.stringify(await r.event());
        const t = now();
        r.accepts('A reordered header', await r.send(raw, `v1=${computeSignature(raw, r.secret, t)},t=${t}`));
      },
    },
    {
      id: 'RCV-008',
      clauses: ['sig.versions', 'ver.signature'],
      section: SIGNATURE,
      title: 'a header with an extra digest version (v2=) next to v1, before or after it, is accepted',
      run: async (r) => {
        const extra = 'ab'.repeat(32);
        const [after, before] = (await Promise.all([r.event(), r.event()])).map((e) => JSON.stringify(e)) as [
          string,
          string,
        ];
        const t = now();
        r.accepts(
          'A header with v2= after v1',
          await r.send(after, `t=${t},v1=${computeSignature(after, r.secret, t)},v2=${extra}`),
        );
        r.accepts(
          'A header with v2= before v1',
          await r.send(before, `t=${t},v2=${extra},v1=${computeSignature(before, r.secret, t)}`),
        );
      },
    },
    {
      id: 'RCV-009',
      clauses: ['retry.duplicates'],
      section: RETRY,
      title: 'a repeated delivery of the same event is answered 2xx again',
      run: async (r) => {
        const raw = JSON.stringify(await r.event());
        r.accepts('The first delivery', await r.signed(raw));
        r.accepts('A repeated delivery (same transactionId)', await r.signed(raw));
      },
    },
    {
      id: 'RCV-010',
      clauses: ['event.unknown'],
      section: KINDS,
      title: 'a signed delivery with an unknown event value is answered 2xx',
      run: async (r) =>
        r.accepts('An unknown event value', await r.signed(JSON.stringify(await r.event({ event: UNKNOWN_EVENT })))),
    },
    {
      id: 'RCV-011',
      clauses: ['verify.raw'],
      section: SIGNATURE,
      title: 'a delivery signed with another secret is rejected',
      run: async (r) => {
        const raw = JSON.stringify(await r.event());
        r.rejects('A wrong secret', await r.send(raw, signWebhook(raw, 'whsec_conformance_not_yours')));
      },
    },
    {
      id: 'RCV-012',
      clauses: ['verify.split'],
      section: SIGNATURE,
      title: 'a header without v1 (only t and v2) is rejected',
      run: async (r) => {
        const raw = JSON.stringify(await r.event());
        const t = now();
        r.rejects('A header without v1', await r.send(raw, `t=${t},v2=${computeSignature(raw, r.secret, t)}`));
      },
    },
    {
      id: 'RCV-013',
      clauses: ['retry.wait', 'limit.webhook-wait'],
      section: RETRY,
      title: 'the receiver answers a valid delivery within 5 seconds',
      run: async (r) => {
        const sent = await r.signed(JSON.stringify(await r.event()));
        if (sent.status === null || sent.ms >= ANSWER_LIMIT_MS)
          throw new CheckFailure(`The service waits five seconds; the receiver answered ${show(sent)}.`, {
            evidence: sent.evidence,
          });
      },
    },
    {
      id: 'RCV-014',
      ...(legacy === undefined ? { level: 'should' as const } : {}),
      // Accepting an unsigned legacy body follows legacy.branch; rejecting it, the rule that
      // receivers reject deliveries with no signature.
      clauses: legacy === 'accept' ? ['legacy.branch'] : ['legacy.branch', 'sig.reject-unsigned'],
      section: LEGACY,
      title:
        legacy === 'accept'
          ? 'a legacy two-field body (no event, no signature) is accepted (--legacy accept)'
          : legacy === 'reject'
            ? 'a legacy two-field body (no event, no signature) is rejected (--legacy reject)'
            : 'a legacy two-field body (no event, no signature) gets an answer: handling it is optional (give --legacy accept|reject to require one)',
      // Legacy bodies come from transactions made through POST /api/transaction, whose shape
      // the document does not show: this one names a made-up transaction even with a target.
      run: async (r) => {
        const raw = JSON.stringify({ transactionId: randomUUID(), foreignTransactionId: 'legacy-1' });
        const sent = await r.send(raw, undefined);
        if (r.legacy === 'accept') return r.accepts('A legacy body', sent);
        if (r.legacy === 'reject') return r.rejects('A legacy body', sent);
        if (sent.status === null)
          throw new CheckFailure(`A legacy body got ${show(sent)}.`, { evidence: sent.evidence });
      },
    },
    {
      id: 'RCV-015',
      clauses: ['sig.reject-unsigned', 'verify.parse-after'],
      section: SIGNATURE,
      title:
        'an unknown event value sent with no Service-Signature header is rejected (verify before looking at the event)',
      run: async (r) =>
        r.rejects(
          'An unsigned delivery of an unknown event',
          await r.send(JSON.stringify(await r.event({ event: UNKNOWN_EVENT })), undefined),
        ),
    },
    {
      id: 'RCV-016',
      clauses: ['verify.age', 'limit.signature-age'],
      section: SIGNATURE,
      title: 'a correctly signed delivery with t four minutes old is accepted (within the five-minute tolerance)',
      run: async (r) =>
        r.accepts('A timestamp four minutes old', await r.signed(JSON.stringify(await r.event()), now() - 240)),
    },
    {
      id: 'RCV-017',
      clauses: ['retry.success'],
      section: RETRY,
      title: 'the target’s own delivery of a real completed payment is accepted (2xx)',
      requires: ['webhookDeliveries'],
      run: async (r) => {
        if (!r.payments) throw new CheckSkipped(NEEDS_REAL_PAYMENTS);
        const payment = await r.payments.pay(`order-${randomUUID().slice(0, 8)}`);
        const answered = (d: Delivery) => d.responseStatus !== null || d.error !== null;
        const records = await r.payments.deliveries(payment.checkoutSessionId, (found) => found.some(answered));
        const first = records.find(answered);
        if (!first)
          throw new AdapterError(
            `The target recorded no answered delivery for ${payment.checkoutSessionId} within the settle timeout.`,
          );
        if (first.responseStatus !== null && first.responseStatus >= 200 && first.responseStatus < 300) return;
        throw new CheckFailure(
          `The target's delivery of ${payment.checkoutSessionId} (transaction ${payment.transactionId}) got ${first.responseStatus ?? `no answer (${first.error})`}; check that --secret is the signing secret of the organisation of --client-id.`,
          {
            evidence: {
              request: `the target's delivery to ${first.url} (its record; the suite does not see the bytes)\n${JSON.stringify(records, null, 2)}`,
              response:
                first.responseStatus !== null ? `HTTP/1.1 ${first.responseStatus}` : `no answer: ${first.error}`,
              curl: '',
            },
          },
        );
      },
    },
  ];
}

export function createReceiverRegistry(legacy: 'accept' | 'reject' | undefined): Registry<ReceiverContext> {
  return new Registry<ReceiverContext>().register(...receiverCheckList(legacy));
}

async function judge(
  check: RegisteredCheck<ReceiverContext>,
  r: ReceiverContext,
  redactor: Redactor,
  strict: boolean,
): Promise<Result> {
  const make = resultMaker(check, CAPABILITIES, (text) => redactor.text(text), strict);
  const requires = CAPABILITIES.filter((c) => check.requires?.includes(c));
  const finish = (status: Result['status'], reason: string, evidence?: Evidence, missing: Capability[] = []) =>
    make(status, reason, { ...(evidence ? { evidence } : {}), missing });
  // Capabilities matter only with a target: made-up events skip for want of one instead.
  const missing = r.real ? requires.filter((c) => !r.has(c)) : [];
  if (missing.length > 0)
    return finish(
      'skipped',
      `needs ${missing.join(', ')} (the adapter does not offer ${missing.length === 1 ? 'it' : 'them'})`,
      undefined,
      missing,
    );
  try {
    await check.run(r);
    return finish('passed', '');
  } catch (error) {
    if (error instanceof CheckSkipped) return finish('skipped', error.message, undefined, error.missing);
    if (error instanceof AdapterError) return make('error', error.message, { cause: 'adapter' });
    if (error instanceof SetupError) return make('error', error.message, { cause: 'setup' });
    if (error instanceof CheckFailure) {
      const subject = error.subject && 'evidence' in error.subject ? error.subject.evidence : undefined;
      return finish('failed', error.message, subject);
    }
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return finish('failed', `The check could not complete: ${message}`);
  }
}

async function paymentsFor(
  options: ReceiverOptions,
  redactor: Redactor,
): Promise<{ payments?: Payments; name: string }> {
  const wanted = [options.sandboxToken, options.adapter, options.clientId, options.clientSecret].some(
    (v) => v !== undefined,
  );
  if (options.baseUrl === undefined) {
    if (wanted)
      throw new SetupError('--sandbox-token, --adapter, --client-id and --client-secret need --base-url (the target).');
    return { name: 'made-up events (no --base-url)' };
  }
  const baseUrl = baseUrlOf(options.baseUrl);
  if (options.adapter !== undefined && options.sandboxToken !== undefined)
    throw new SetupError('--adapter and --sandbox-token both name the way to the target: give one.');
  if (options.clientId === undefined || options.clientSecret === undefined)
    throw new SetupError(
      '--base-url needs --client-id and --client-secret of the receiver’s organisation: the payments must be the ones the receiver can read back, signed with its --secret.',
    );
  if (options.adapter === 'manual')
    throw new SetupError(
      '--adapter manual cannot pay for the receiver checks: give --sandbox-token or an adapter module.',
    );
  const settleTimeoutS = options.settleTimeoutS ?? DEFAULT_SETTLE_TIMEOUT_S;
  if (!(settleTimeoutS >= 1 && settleTimeoutS <= 600))
    throw new SetupError('--settle-timeout must be from 1 to 600 seconds.');
  const chosen = await targetAdapter(options, baseUrl);
  if (!chosen) throw new SetupError('--base-url needs --sandbox-token or --adapter: the suite pays through it.');
  const { adapter, name } = chosen;
  if (!adapter.capabilities.includes('attempt'))
    throw new SetupError(`The ${name} adapter does not offer attempt: the suite cannot pay for the events.`);
  redactor.remember(options.clientSecret, '$CLIENT_SECRET');
  const payments = new Payments(
    {
      baseUrl,
      clientId: options.clientId,
      clientSecret: options.clientSecret,
      adapter,
      receiverUrl: options.url,
      settleTimeoutMs: settleTimeoutS * 1000,
    },
    redactor,
  );
  // Token and a session first: credentials or a webhookUrl the target refuses are setup errors, once.
  try {
    await payments.session(`conformance-preflight-${randomUUID().slice(0, 8)}`);
  } catch (error) {
    await adapter.close?.().catch(() => undefined);
    throw error;
  }
  return { payments, name: `${name}: real payments on ${baseUrl}` };
}

/** What a receiver run produced (the same report as `run`'s). */
export interface ReceiverOutcome {
  exitCode: 0 | 1 | 2;
  report: Report;
  files: string[];
}

/**
 * Why no TCP connection can be made to the receiver's host and port, or undefined when one
 * can. Nothing is sent: how a receiver treats a stray request (an answer, a closed
 * connection) is for the checks to judge, not a reason to stop.
 */
function connectionProblem(url: URL): Promise<string | undefined> {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: ANSWER_LIMIT_MS });
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(`no connection within ${ANSWER_LIMIT_MS / 1000} s`);
    });
    socket.once('error', (error) => resolve(error.message));
  });
}

export async function executeReceiver(options: ReceiverOptions, out: Output): Promise<ReceiverOutcome> {
  try {
    new URL(options.url);
  } catch {
    throw new SetupError(`--url ${options.url} is not an absolute URL.`);
  }
  if (!options.secret.startsWith('whsec_')) throw new SetupError('--secret must be the whsec_... signing secret.');
  const reporters = parseReporters(options.reporter ?? 'console');
  const checks = createReceiverRegistry(options.legacy).select(options.only);
  if (checks.length === 0) throw new SetupError(`--only ${options.only}: no check id matches.`);
  const redactor = new Redactor(options.sandboxToken);
  redactor.remember(options.secret, '$WEBHOOK_SECRET');
  const unreachable = await connectionProblem(new URL(options.url));
  if (unreachable) throw new SetupError(`The receiver ${options.url} is unreachable: ${unreachable}.`);
  const { payments, name } = await paymentsFor(options, redactor);
  try {
    const r = new ReceiverContext(options, payments);
    const traffic: TrafficEntry[] = [];
    const consoleOn = reporters.includes('console');
    const reporter = new ConsoleReporter(out, checks.length, options.strictAssumptions ?? false);
    const startedAt = new Date();
    const capabilities = CAPABILITIES.filter((c) => r.has(c));
    if (consoleOn) reporter.start(options.url, name, capabilities);
    // Every check delivers for a transaction of its own, so they run at once: a slow
    // receiver costs one answer limit, not one per check.
    const results = await Promise.all(
      checks.map(async (check) => {
        const own = new ReceiverContext(options, payments, (e) => traffic.push(e), check.id);
        const result = await judge(check, own, redactor, options.strictAssumptions ?? false);
        if (consoleOn) reporter.result(result);
        return result;
      }),
    );
    const report = buildReport(
      {
        target: options.url,
        startedAt,
        adapter: { name, capabilities },
        strictAssumptions: options.strictAssumptions ?? false,
        invocation: {
          command: 'receiver',
          ...(options.only !== undefined ? { only: options.only } : {}),
          ...(options.legacy !== undefined ? { legacy: options.legacy } : {}),
          strictAssumptions: options.strictAssumptions ?? false,
        },
      },
      results,
    );
    const files = writeReports(report, reporters, options.out ?? DEFAULT_RECEIVER_OUT, {
      entries: () => byStart(traffic),
      redactor,
    });
    if (consoleOn) reporter.summary(report, files);
    return { exitCode: exitCodeOf(report), report, files };
  } finally {
    await payments?.adapter.close?.().catch(() => undefined);
  }
}

/** `payment-conformance receiver`; throws SetupError for a problem of the run itself (exit 2). */
export async function receiverCommand(options: ReceiverOptions, out: Output): Promise<number> {
  return (await executeReceiver(options, out)).exitCode;
}

/** The registered receiver checks for a --legacy choice (traceability and tests read their clauses). */
export function receiverChecks(options: Partial<ReceiverOptions>): RegisteredCheck<ReceiverContext>[] {
  return createReceiverRegistry(options.legacy).all();
}

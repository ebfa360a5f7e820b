/**
 * Real payments for the receiver checks (--base-url): a card session of the receiver's
 * organisation whose webhookUrl is the receiver, paid through the adapter's attempt, so
 * that a receiver that reads the payment back before acting, as the document asks, finds
 * it paid. The target delivers its own signed webhook for each; the checks then send
 * their variants of that event.
 */
import { randomUUID } from 'node:crypto';
import { AdapterError, type Delivery, type TargetAdapter } from '../../core/adapter.ts';
import { send } from '../../core/http.ts';
import { text } from '../../core/json.ts';
import { poll } from '../../core/poll.ts';
import type { Redactor } from '../../core/redact.ts';
import { SetupError } from '../../core/outcome.ts';

/** A token is used this long at most: a minute inside its five-minute lifetime (Authentication 4). */
const TOKEN_REUSE_MS = 4 * 60_000;

/** A completed payment of the receiver's organisation, as its event names it. */
export interface RealPayment {
  checkoutSessionId: string;
  transactionId: string;
  foreignTransactionId: string;
  createdAt: string;
}

/** Real payments on the target, for the receiver's organisation, each awaited until it settles (--settle-timeout). */
export class Payments {
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

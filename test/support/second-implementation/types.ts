/**
 * What the second implementation is made of: its options, the limits it keeps (each named
 * by the clause it follows, or "ours"), the records it stores, and its error types.
 */
export interface SecondImplementationOptions {
  /** CA file the webhook sender trusts besides the public roots (the suite's receiver CA). */
  trustCaFile: string;
  /** Hosts this test deployment may deliver to although they are not public (its allowlist). */
  testHosts: string[];
  /** Secret of the /__control/ endpoints. */
  controlToken: string;
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const TOKEN_LIFETIME = 5 * MINUTE; // auth.lifetime, limit.token
export const SESSION_LIFETIME = 24 * HOUR; // res.create.expires, limit.session
export const IDEMPOTENCY_MEMORY = 24 * HOUR; // create.idempotency-key, limit.idempotency
export const WEBHOOK_WAIT = 5 * SECOND; // retry.wait, limit.webhook-wait
export const CARD_ATTEMPTS = 3; // retry.card, limit.card-attempts
export const CARD_RETRY_DELAYS = [1 * MINUTE, 10 * MINUTE]; // ours: the document states no spacing
export const COMPLETION_DELAY_MS = 300; // ours: a succeeded charge is `pending` this long (state.pending)
export const QUEUE_TICK_MS = 50; // ours: how often the card queue looks for due retries
export const BODY_LIMIT = 1 << 20; // ours

export type Mode = 'test' | 'live';
export type Rail = 'card' | 'open_banking';
export type Method = Rail | 'both';
export type Currency = 'NZD' | 'AUD';
export type Stored = 'created' | 'pending' | 'completed' | 'failed';

export interface Organisation {
  id: string;
  settlementCurrency: Currency;
  cardEnabled: boolean;
  openBankingApproved: boolean;
  settlementAccount: boolean;
  signingSecret: string;
  clockOffsetMs: number;
  faults: { afterCommit: number; unsigned: number };
}

export interface ApiKey {
  clientId: string;
  secretDigest: Buffer;
  orgId: string;
  mode: Mode;
}

export interface Token {
  clientId: string;
  orgId: string;
  mode: Mode;
  expiresAt: number;
}

/** What every payment has, whichever way it was created (svc.uuid, res.transaction). */
export interface Payable {
  transactionId: string;
  orgId: string;
  testMode: boolean;
  status: Stored;
  paidWith: Rail | null;
  notifyUrl: string | null;
  foreignTransactionId: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface Session extends Payable {
  kind: 'session';
  id: string;
  total: number;
  currency: Currency;
  checkoutMethod: Method;
  reference: string;
  particulars: string;
  code: string;
  redirectUrl: string;
  description: string | null;
  expiresAt: number;
}

export interface Link extends Payable {
  kind: 'link';
  amountDue: number;
  currency: Currency;
  label: string;
}

export interface LegacyTransaction extends Payable {
  kind: 'legacy';
  total: number;
  currency: Currency;
  reference: string;
}

export type Payment = Session | Link | LegacyTransaction;

export interface Delivery {
  transactionId: string;
  url: string;
  attempt: number;
  at: string;
  signed: boolean;
  responseStatus: number | null;
  error: string | null;
  final: boolean;
}

export interface Job {
  payment: Payment;
  url: string;
  body: string;
  /** Event bodies are signed; the legacy two-field body never is (legacy.payload). */
  signable: boolean;
  rail: Rail;
  attempts: number;
  dueAt: number;
  inFlight: boolean;
}

export interface Detail {
  field: string;
  constraints: Record<string, string>;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly details?: Detail[],
  ) {
    super(message);
  }
}

/** Every failing field at once (code.validation-failed), merged per field. */
export class Problems {
  private readonly fields = new Map<string, Record<string, string>>();
  add(field: string, constraints: Record<string, string>): void {
    this.fields.set(field, { ...this.fields.get(field), ...constraints });
  }
  get any(): boolean {
    return this.fields.size > 0;
  }
  error(): ApiError {
    const details = [...this.fields].map(([field, constraints]) => ({ field, constraints }));
    const message = details.flatMap((d) => Object.values(d.constraints)).join('; ');
    // err.param: the field when exactly one is to blame, else null.
    return new ApiError(400, 'validation_failed', message, details.length === 1 ? details[0]!.field : null, details);
  }
}

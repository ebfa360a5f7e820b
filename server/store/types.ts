/**
 * The narrow, asynchronous storage interface of the reference server. The SQLite store
 * implements it today; another database can implement it without touching handlers.
 * Times are milliseconds since the epoch: `...At` fields of organisation resources are on
 * that organisation's clock (see server/domain/clock.ts).
 */

export type Mode = 'test' | 'live';
export type Currency = 'NZD' | 'AUD';
export type Rail = 'open_banking' | 'card';
export type CheckoutMethod = Rail | 'both';
export type PaymentKind = 'checkout_session' | 'payment_link' | 'legacy';

export interface Organisation {
  id: string;
  name: string;
  settlementCurrency: Currency;
  cardEnabled: boolean;
  openBankingApproved: boolean;
  settlementAccount: boolean;
  webhookSecret: string;
  /** How far this organisation's clock is ahead of real time. */
  clockOffsetMs: number;
}

export interface ApiKey {
  clientId: string;
  orgId: string;
  mode: Mode;
  /** scrypt hash of the client secret (server/auth/secrets.ts). */
  secretHash: string;
}

/** A payment: a checkout session, a payment link or a legacy transaction. */
export interface Payment {
  transactionId: string;
  kind: PaymentKind;
  sessionId: string | null;
  orgId: string;
  mode: Mode;
  status: string;
  amountTotal: number;
  currency: Currency;
  checkoutMethod: CheckoutMethod;
  reference: string;
  particulars: string;
  code: string;
  redirectUrl: string;
  webhookUrl: string | null;
  foreignTransactionId: string | null;
  description: string | null;
  transactionType: Rail;
  createdAt: number;
  updatedAt: number;
  expiresAt: number | null;
}

/** The stored result of a create made with an Idempotency-Key. */
export interface IdempotencyRecord {
  orgId: string;
  mode: Mode;
  key: string;
  /** Hash of the request body's canonical JSON. */
  fingerprint: string;
  status: number;
  body: string;
  createdAt: number;
  expiresAt: number;
}

export type FaultKind = 'internal_error_after_commit' | 'signing_secret_unavailable';

export interface Store {
  migrate(): Promise<void>;
  close(): Promise<void>;

  getSetting(key: string): Promise<string | undefined>;
  putSetting(key: string, value: string): Promise<void>;

  createOrganisation(org: Organisation): Promise<void>;
  getOrganisation(id: string): Promise<Organisation | undefined>;
  countOrganisations(): Promise<number>;
  setClockOffset(orgId: string, clockOffsetMs: number): Promise<void>;
  setWebhookSecret(orgId: string, secret: string): Promise<void>;

  createApiKey(key: ApiKey): Promise<void>;
  getApiKey(clientId: string): Promise<ApiKey | undefined>;
  /** False when no such key existed. */
  deleteApiKey(clientId: string): Promise<boolean>;

  /** Inserts the payment, and its idempotency record when given, in one transaction. */
  createPayment(payment: Payment, idempotency?: IdempotencyRecord): Promise<void>;
  getPaymentBySessionId(orgId: string, sessionId: string): Promise<Payment | undefined>;
  getPayment(orgId: string, transactionId: string): Promise<Payment | undefined>;
  countPayments(orgId: string): Promise<number>;

  getIdempotency(orgId: string, mode: Mode, key: string): Promise<IdempotencyRecord | undefined>;

  setFault(orgId: string, kind: FaultKind, times: number): Promise<void>;
  /** Uses up one arming of the fault; true when it was armed. */
  takeFault(orgId: string, kind: FaultKind): Promise<boolean>;

  /** Deletes idempotency records past their 24 hours on their organisation's clock. */
  deleteExpired(realNowMs: number): Promise<{ idempotencyRecords: number }>;
}

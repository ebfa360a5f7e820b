/**
 * The narrow, asynchronous storage interface of the reference server (the Store contract
 * at the end). The SQLite store (sqlite/store.ts) and the PostgreSQL store
 * (postgres/store.ts) implement it, over the SQL they share (sql-store.ts); another
 * database can implement it without touching handlers. Records are typed from the description's
 * generated types.
 * Times are milliseconds since the epoch: `...At` fields of organisation resources are on
 * that organisation's clock (see server/domain/clock.ts).
 */

import type { components } from '@payment-service/contract';
import type { components as Sandbox } from '@payment-service/contract/sandbox';

type Schemas = components['schemas'];

export type Mode = Sandbox['schemas']['SandboxApiKeyCreateRequest']['mode'];
export type Currency = Schemas['Currency'];
export type Rail = Schemas['TransactionType'];
export type CheckoutMethod = Schemas['CheckoutMethod'];
export type PaymentStatus = Schemas['CheckoutSessionStatus'];
export type PaymentKind = 'checkout_session' | 'payment_link' | 'legacy';
export type FaultKind = Sandbox['schemas']['SandboxFaultRequest']['kind'];

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
  status: PaymentStatus;
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
  /** When it reached `completed` (the webhook's `createdAt`), on the organisation's clock. */
  completedAt: number | null;
}

/** A webhook waiting to be (re)delivered: the exact bytes are fixed when the event happens. */
export interface OutboxEntry {
  id: number;
  transactionId: string;
  orgId: string;
  mode: Mode;
  rail: Rail;
  url: string;
  body: string;
  /** The unsigned two-field body of a legacy transaction. */
  legacy: boolean;
  attemptsMade: number;
  /** Organisation-clock time of the next attempt. */
  nextAttemptAt: number;
  state: 'pending' | 'delivered' | 'failed';
}

/** A webhook to queue: its exact bytes, and where and when to send them first. */
export type NewWebhook = Omit<OutboxEntry, 'id' | 'attemptsMade' | 'state'>;

/**
 * A server's hold on a webhook's next attempt (real time): with several servers on one
 * database, only the holder makes the attempt; a lease that ends unanswered passes it on.
 */
export interface Lease {
  owner: string;
  until: number;
}

/** One delivery attempt, as the sandbox API lists it. */
export interface DeliveryRecord {
  id: number;
  outboxId: number;
  transactionId: string;
  url: string;
  attempt: number;
  at: number;
  signed: boolean;
  responseStatus: number | null;
  error: string | null;
  final: boolean;
}

/** What an attempt changes on a payment (see server/domain/lifecycle.ts). */
export interface PaymentUpdate {
  status: PaymentStatus;
  transactionType: Rail;
  updatedAt: number;
  completedAt: number | null;
}

/** The stored result of a create made with an Idempotency-Key. */
export interface IdempotencyRecord {
  orgId: string;
  mode: Mode;
  key: string;
  /** What the key created: the same key on another create endpoint is another request (null: a record from before this was kept). */
  kind: PaymentKind | null;
  /** Hash of the request body's canonical JSON. */
  fingerprint: string;
  status: number;
  body: string;
  createdAt: number;
  expiresAt: number;
}

export interface Store {
  migrate(): Promise<void>;
  close(): Promise<void>;
  /**
   * Whether this process is the database's only user (SQLite: one server per file), so
   * that what it keeps in memory of the database stays exact. False when several servers
   * share the database: then everything is read from it.
   */
  readonly exclusive: boolean;
  /** Why the database cannot be written now (a small write is tried), or undefined when it can. */
  writeProblem(): Promise<string | undefined>;

  getSetting(key: string): Promise<string | undefined>;
  putSetting(key: string, value: string): Promise<void>;
  /** The setting's value, set to `value` first if it has none: of servers starting together, the first decides. */
  ensureSetting(key: string, value: string): Promise<string>;

  createOrganisation(org: Organisation): Promise<void>;
  getOrganisation(id: string): Promise<Organisation | undefined>;
  countOrganisations(): Promise<number>;
  setClockOffset(orgId: string, clockOffsetMs: number): Promise<void>;
  setWebhookSecret(orgId: string, secret: string): Promise<void>;

  createApiKey(key: ApiKey): Promise<void>;
  getApiKey(clientId: string): Promise<ApiKey | undefined>;
  /** The key with its organisation (what every authenticated request reads), in one read. */
  getAccount(clientId: string): Promise<{ apiKey: ApiKey; org: Organisation } | undefined>;
  /** False when no such key existed. */
  deleteApiKey(clientId: string): Promise<boolean>;

  /**
   * Inserts the payment, and its idempotency record when given, in one transaction, unless
   * a record still inside its 24 hours (expiresAt after the new record's createdAt) holds
   * the key: then nothing is written, and that record is what it resolves to. Of creates
   * racing with one key, on any server, exactly one inserts.
   */
  createPayment(payment: Payment, idempotency?: IdempotencyRecord): Promise<IdempotencyRecord | undefined>;
  /** The payment as stored, read-only: a store may hand the same object to every reader until the row changes. */
  getPaymentBySessionId(orgId: string, sessionId: string): Promise<Readonly<Payment> | undefined>;
  getPayment(orgId: string, transactionId: string): Promise<Payment | undefined>;
  countPayments(orgId: string): Promise<number>;

  /** Any organisation's payment, by transaction id or by checkout session id (sandbox, hosted page). */
  findPayment(by: { transactionId: string } | { sessionId: string }): Promise<Payment | undefined>;
  /**
   * Applies an attempt's outcome, and queues its webhook in the same transaction, leased to
   * the server that will make its first attempt. False (nothing written) when the payment
   * completed meanwhile.
   */
  updatePayment(
    transactionId: string,
    update: PaymentUpdate,
    webhook?: { entry: NewWebhook; lease: Lease },
  ): Promise<OutboxEntry | undefined | false>;

  /**
   * Leases to `lease.owner` up to `limit` pending webhooks whose next attempt is due on
   * their organisation's clock and whose lease is free or ended (`realNowMs`); each is
   * leased to one caller only, however many claim at once.
   */
  claimDueWebhooks(lease: Lease, realNowMs: number, limit: number): Promise<OutboxEntry[]>;
  /** Frees every lease (a store's only user, at start: whoever held them has stopped). */
  releaseWebhookLeases(): Promise<void>;
  getWebhook(id: number): Promise<OutboxEntry | undefined>;
  /** The entry's attempt that was started and never finished: its server stopped during it. */
  unfinishedDelivery(outboxId: number): Promise<DeliveryRecord | undefined>;
  /** Records an attempt as started (it counts even if the process dies during it). */
  startDelivery(
    entry: OutboxEntry,
    attempt: Omit<DeliveryRecord, 'id' | 'responseStatus' | 'error' | 'final'>,
  ): Promise<number>;
  /**
   * Records the attempt's result and the entry's next state, and frees its lease; only
   * while the attempt is unfinished, so the first to conclude it (its own server, or one
   * that took the entry up as interrupted) decides, and a late writer changes nothing.
   */
  finishDelivery(
    deliveryId: number,
    result: { responseStatus: number | null; error: string | null; final: boolean },
    next: { state: OutboxEntry['state']; nextAttemptAt: number },
  ): Promise<void>;
  listDeliveries(transactionId: string): Promise<DeliveryRecord[]>;

  /** Faults armed through the sandbox API (sandbox/faults.ts): `times` more of `kind` for the organisation. */
  setFault(orgId: string, kind: FaultKind, times: number): Promise<void>;
  /** Uses up one arming of the fault; true when it was armed. */
  takeFault(orgId: string, kind: FaultKind): Promise<boolean>;
  organisationsWithFaults(): Promise<string[]>;

  /** Deletes idempotency records past their 24 hours on their organisation's clock. */
  deleteExpired(realNowMs: number): Promise<{ idempotencyRecords: number }>;
}

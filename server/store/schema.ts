/**
 * The tables as the migrations (migrations.ts) make them, and the mapping between their
 * rows and the records of the Store contract (types.ts): what every store shares.
 */
import type { Generated, Selectable } from 'kysely';
import type {
  ApiKey,
  CheckoutMethod,
  Currency,
  DeliveryRecord,
  FaultKind,
  IdempotencyRecord,
  Mode,
  Organisation,
  OutboxEntry,
  Payment,
  PaymentKind,
  PaymentStatus,
  Rail,
} from './types.ts';

export interface OrganisationsTable {
  id: string;
  name: string;
  settlement_currency: Currency;
  card_enabled: number;
  open_banking_approved: number;
  settlement_account: number;
  webhook_secret: string;
  clock_offset_ms: number;
  created_at: number;
}
export interface ApiKeysTable {
  client_id: string;
  org_id: string;
  mode: Mode;
  secret_hash: string;
  created_at: number;
}
export interface PaymentsTable {
  transaction_id: string;
  kind: PaymentKind;
  session_id: string | null;
  org_id: string;
  mode: Mode;
  status: PaymentStatus;
  amount_total: number;
  currency: Currency;
  checkout_method: CheckoutMethod;
  reference: string;
  particulars: string;
  code: string;
  redirect_url: string;
  webhook_url: string | null;
  foreign_transaction_id: string | null;
  description: string | null;
  transaction_type: Rail;
  created_at: number;
  updated_at: number;
  expires_at: number | null;
  completed_at: number | null;
}
export interface WebhookOutboxTable {
  id: Generated<number>;
  transaction_id: string;
  org_id: string;
  mode: Mode;
  rail: Rail;
  url: string;
  body: string;
  legacy: number;
  attempts_made: number;
  next_attempt_at: number;
  state: OutboxEntry['state'];
  lease_owner: string | null;
  lease_until: number | null;
}
export interface WebhookDeliveriesTable {
  id: Generated<number>;
  outbox_id: number;
  transaction_id: string;
  url: string;
  attempt: number;
  at: number;
  signed: number;
  response_status: number | null;
  error: string | null;
  final: number;
  done: number;
}
export interface IdempotencyKeysTable {
  org_id: string;
  mode: Mode;
  key: string;
  kind: PaymentKind | null;
  fingerprint: string;
  status: number;
  body: string;
  created_at: number;
  expires_at: number;
}
export interface Tables {
  settings: { key: string; value: string };
  organisations: OrganisationsTable;
  api_keys: ApiKeysTable;
  payments: PaymentsTable;
  idempotency_keys: IdempotencyKeysTable;
  faults: { org_id: string; kind: FaultKind; remaining: number };
  webhook_outbox: WebhookOutboxTable;
  webhook_deliveries: WebhookDeliveriesTable;
}

export function toOrganisation(row: Selectable<OrganisationsTable>): Organisation {
  return {
    id: row.id,
    name: row.name,
    settlementCurrency: row.settlement_currency,
    cardEnabled: row.card_enabled === 1,
    openBankingApproved: row.open_banking_approved === 1,
    settlementAccount: row.settlement_account === 1,
    webhookSecret: row.webhook_secret,
    clockOffsetMs: row.clock_offset_ms,
  };
}

export function toPayment(row: Selectable<PaymentsTable>): Payment {
  return {
    transactionId: row.transaction_id,
    kind: row.kind,
    sessionId: row.session_id,
    orgId: row.org_id,
    mode: row.mode,
    status: row.status,
    amountTotal: row.amount_total,
    currency: row.currency,
    checkoutMethod: row.checkout_method,
    reference: row.reference,
    particulars: row.particulars,
    code: row.code,
    redirectUrl: row.redirect_url,
    webhookUrl: row.webhook_url,
    foreignTransactionId: row.foreign_transaction_id,
    description: row.description,
    transactionType: row.transaction_type,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    expiresAt: row.expires_at,
    completedAt: row.completed_at,
  };
}

export function toOutbox(row: Selectable<WebhookOutboxTable>): OutboxEntry {
  return {
    id: row.id,
    transactionId: row.transaction_id,
    orgId: row.org_id,
    mode: row.mode,
    rail: row.rail,
    url: row.url,
    body: row.body,
    legacy: row.legacy === 1,
    attemptsMade: row.attempts_made,
    nextAttemptAt: row.next_attempt_at,
    state: row.state,
  };
}

export function toDelivery(row: Selectable<WebhookDeliveriesTable>): DeliveryRecord {
  return {
    id: row.id,
    outboxId: row.outbox_id,
    transactionId: row.transaction_id,
    url: row.url,
    attempt: row.attempt,
    at: row.at,
    signed: row.signed === 1,
    responseStatus: row.response_status,
    error: row.error,
    final: row.final === 1,
  };
}

export function paymentRow(p: Payment): PaymentsTable {
  return {
    transaction_id: p.transactionId,
    kind: p.kind,
    session_id: p.sessionId,
    org_id: p.orgId,
    mode: p.mode,
    status: p.status,
    amount_total: p.amountTotal,
    currency: p.currency,
    checkout_method: p.checkoutMethod,
    reference: p.reference,
    particulars: p.particulars,
    code: p.code,
    redirect_url: p.redirectUrl,
    webhook_url: p.webhookUrl,
    foreign_transaction_id: p.foreignTransactionId,
    description: p.description,
    transaction_type: p.transactionType,
    created_at: p.createdAt,
    updated_at: p.updatedAt,
    expires_at: p.expiresAt,
    completed_at: p.completedAt,
  };
}

export const PAYMENT_COLUMNS = [
  'transaction_id',
  'kind',
  'session_id',
  'org_id',
  'mode',
  'status',
  'amount_total',
  'currency',
  'checkout_method',
  'reference',
  'particulars',
  'code',
  'redirect_url',
  'webhook_url',
  'foreign_transaction_id',
  'description',
  'transaction_type',
  'created_at',
  'updated_at',
  'expires_at',
  'completed_at',
] as const satisfies ReadonlyArray<keyof PaymentsTable>;

export const IDEMPOTENCY_COLUMNS = [
  'org_id',
  'mode',
  'key',
  'kind',
  'fingerprint',
  'status',
  'body',
  'created_at',
  'expires_at',
] as const satisfies ReadonlyArray<keyof IdempotencyKeysTable>;

export function toApiKey(row: Selectable<ApiKeysTable>): ApiKey {
  return { clientId: row.client_id, orgId: row.org_id, mode: row.mode, secretHash: row.secret_hash };
}

export function toIdempotency(row: Selectable<IdempotencyKeysTable>): IdempotencyRecord {
  return {
    orgId: row.org_id,
    mode: row.mode,
    key: row.key,
    kind: row.kind,
    fingerprint: row.fingerprint,
    status: row.status,
    body: row.body,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}

export function idempotencyRow(record: IdempotencyRecord): IdempotencyKeysTable {
  return {
    org_id: record.orgId,
    mode: record.mode,
    key: record.key,
    kind: record.kind,
    fingerprint: record.fingerprint,
    status: record.status,
    body: record.body,
    created_at: record.createdAt,
    expires_at: record.expiresAt,
  };
}

/**
 * Creating payments and reading them back (service document: Resources, States and
 * transitions, POST /api/checkout-sessions). Checkout sessions, payment links and
 * legacy transactions share one record; what differs is their id and their shape.
 */
import type { components } from '@payment-service/contract';
import type { CheckoutMethod, Mode, Organisation, Payment, PaymentKind, PaymentStatus } from '../store/types.ts';
import { HOUR, iso } from './clock.ts';
import { DomainError } from './errors.ts';
import type { Ids } from './ids.ts';

type Schemas = components['schemas'];

export const SESSION_LIFETIME_MS = 24 * HOUR;

/** The fields every create request shares, as the description has them (already validated). */
export type CreateFields = Pick<
  Schemas['CheckoutSessionCreateRequest'] &
    Schemas['PaymentLinkCreateRequest'] &
    Schemas['LegacyTransactionCreateRequest'],
  | 'amount'
  | 'creditorReference'
  | 'redirectUrl'
  | 'checkoutMethod'
  | 'webhookUrl'
  | 'foreignTransactionId'
  | 'description'
>;

const usesCard = (m: CheckoutMethod) => m === 'card' || m === 'both';
const usesBank = (m: CheckoutMethod) => m === 'open_banking' || m === 'both';

/**
 * The organisation's configuration against the request, in the document's order:
 * currency, then the account-configuration codes as its table lists them, except that
 * `open_banking_currency_unsupported` (structural) is checked before
 * `open_banking_not_enabled` and `settlement_account_missing`, as the document states.
 */
export function checkConfiguration(org: Organisation, fields: CreateFields): void {
  const method = fields.checkoutMethod;
  if (fields.amount.currency !== undefined && fields.amount.currency !== org.settlementCurrency) {
    throw new DomainError(
      'currency_mismatch',
      `amount.currency ${fields.amount.currency} differs from the organisation's settlement currency ${org.settlementCurrency}; there is no conversion or repricing.`,
      'amount.currency',
    );
  }
  if (usesCard(method) && !org.cardEnabled) {
    throw new DomainError(
      'card_not_enabled',
      'Card payments are not configured for this organisation. Enable them in the portal, or use checkoutMethod open_banking.',
      'checkoutMethod',
    );
  }
  if (usesBank(method)) {
    if (org.settlementCurrency !== 'NZD') {
      throw new DomainError(
        'open_banking_currency_unsupported',
        'This organisation settles in AUD; the open-banking rail moves NZD only. Use checkoutMethod card.',
        'checkoutMethod',
      );
    }
    if (!org.openBankingApproved) {
      throw new DomainError(
        'open_banking_not_enabled',
        'The open-banking application for this organisation is not approved yet.',
        'checkoutMethod',
      );
    }
    if (!org.settlementAccount) {
      throw new DomainError(
        'settlement_account_missing',
        'A bank rail was requested but the organisation has no settlement account. Add one in the portal.',
        'checkoutMethod',
      );
    }
  }
}

export function newPayment(
  ids: Ids,
  kind: PaymentKind,
  org: Organisation,
  mode: Mode,
  fields: CreateFields,
  now: number,
): Payment {
  return {
    transactionId: ids.transactionId(),
    kind,
    sessionId: kind === 'checkout_session' ? ids.sessionId() : null,
    orgId: org.id,
    mode,
    status: 'created',
    amountTotal: fields.amount.total,
    currency: org.settlementCurrency,
    checkoutMethod: fields.checkoutMethod,
    reference: fields.creditorReference.reference,
    particulars: fields.creditorReference.particulars ?? '',
    // An empty code counts as omitted: the payer's statement needs one.
    code: fields.creditorReference.code || ids.referenceCode(),
    redirectUrl: fields.redirectUrl,
    webhookUrl: fields.webhookUrl ?? null,
    foreignTransactionId: fields.foreignTransactionId ?? null,
    description: fields.description ?? null,
    // Before completion the document has transactionType read open_banking whatever the method.
    transactionType: 'open_banking',
    createdAt: now,
    updatedAt: now,
    expiresAt: kind === 'checkout_session' ? now + SESSION_LIFETIME_MS : null,
    completedAt: null,
  };
}

/** The status as of `now`: an unpaid session past its 24 hours reads `expired`. */
export function statusAt(payment: Payment, now: number): PaymentStatus {
  if (payment.status !== 'completed' && payment.expiresAt !== null && now >= payment.expiresAt) return 'expired';
  return payment.status;
}

const amountOf = (p: Payment): Schemas['Amount'] => ({ total: p.amountTotal, currency: p.currency });

export function hostedPageUrl(publicUrl: string, payment: Payment): string {
  if (payment.sessionId) return `${publicUrl}/pay/${payment.sessionId}`;
  return `${publicUrl}/pay/${payment.kind === 'payment_link' ? 'links' : 'transactions'}/${payment.transactionId}`;
}

export function sessionCreatedShape(p: Payment, publicUrl: string): Schemas['CheckoutSessionCreated'] {
  return {
    id: p.sessionId!,
    status: p.status,
    url: hostedPageUrl(publicUrl, p),
    code: p.code,
    amount: amountOf(p),
    checkoutMethod: p.checkoutMethod,
    reference: p.reference,
    testMode: p.mode === 'test',
    expiresAt: iso(p.expiresAt!),
    transactionId: p.transactionId,
  };
}

/** What a session and a payment link both say about where the payment stands. */
function readFields(p: Payment, now: number) {
  return {
    status: statusAt(p, now),
    code: p.code,
    amount: amountOf(p),
    checkoutMethod: p.checkoutMethod,
    reference: p.reference,
    particulars: p.particulars,
    transactionType: p.transactionType,
    testMode: p.mode === 'test',
    foreignTransactionId: p.foreignTransactionId,
    createdAt: iso(p.createdAt),
    updatedAt: iso(p.updatedAt),
  };
}

export function sessionReadShape(p: Payment, now: number): Schemas['CheckoutSession'] {
  return { id: p.sessionId!, ...readFields(p, now), expiresAt: iso(p.expiresAt!), transactionId: p.transactionId };
}

export function paymentLinkShape(p: Payment, publicUrl: string, now: number): Schemas['PaymentLink'] {
  return { id: p.transactionId, url: hostedPageUrl(publicUrl, p), ...readFields(p, now) };
}

export function legacyTransactionShape(p: Payment, publicUrl: string, now: number): Schemas['LegacyTransaction'] {
  return {
    transactionId: p.transactionId,
    url: hostedPageUrl(publicUrl, p),
    status: statusAt(p, now),
    amount: amountOf(p),
    reference: p.reference,
    checkoutMethod: p.checkoutMethod,
    transactionType: p.transactionType,
    testMode: p.mode === 'test',
    foreignTransactionId: p.foreignTransactionId,
    createdAt: iso(p.createdAt),
  };
}

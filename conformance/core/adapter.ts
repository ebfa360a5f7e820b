/**
 * Target adapters: how the suite reaches a target's test controls (organisations, API
 * keys, its clock, payment attempts, its delivery records, faults), and the payments whose
 * shapes the document does not show (payment links, legacy transactions). The interface is
 * fixed (conformance/docs/adapter-reference.md documents it): teams write one for their
 * implementation, and the suite calls nothing but the capabilities an adapter declares. Capabilities are only
 * ever added, each optional, so an adapter written for an earlier list keeps working.
 */

/** Everything an adapter may offer, in the order reports list them. */
export const CAPABILITIES = [
  'createOrganisation',
  'createApiKey',
  'deleteApiKey',
  'rotateWebhookSecret',
  'advanceClock',
  'attempt',
  'webhookDeliveries',
  'injectFault',
  'paymentLinks',
  'legacyTransactions',
] as const;

export type Capability = (typeof CAPABILITIES)[number];

/** The methods each capability stands for: an adapter that declares one has them all. */
export const CAPABILITY_METHODS: Readonly<Record<Capability, readonly (keyof TargetAdapter)[]>> = {
  createOrganisation: ['createOrganisation'],
  createApiKey: ['createApiKey'],
  deleteApiKey: ['deleteApiKey'],
  rotateWebhookSecret: ['rotateWebhookSecret'],
  advanceClock: ['advanceClock'],
  attempt: ['attempt'],
  webhookDeliveries: ['webhookDeliveries'],
  injectFault: ['injectFault'],
  paymentLinks: ['createPaymentLink', 'readPaymentLink'],
  legacyTransactions: ['createLegacyTransaction'],
};

/**
 * Capabilities the suite can do without: the document does not show the request that makes
 * these payments, so without the capability the suite sends the one we modelled, and a
 * target that refuses it leaves the checks skipped. `--require-capabilities all` does not
 * ask for them up front; a check they leave unjudged is still an error under it.
 */
export const MODELLED_STAND_INS: readonly Capability[] = ['paymentLinks', 'legacyTransactions'];

export interface Credentials {
  clientId: string;
  clientSecret: string;
}

export interface OrganisationSettings {
  settlementCurrency: 'NZD' | 'AUD';
  cardEnabled: boolean;
  openBankingApproved: boolean;
  settlementAccount: boolean;
}

export interface CreatedOrganisation {
  id: string;
  webhookSigningSecret: string;
  apiKeys: { test: Credentials; live?: Credentials };
}

export type Rail = 'card' | 'open_banking';
export type Outcome = 'succeeded' | 'declined' | 'pending';
export type FaultKind = 'internal_error_after_commit' | 'signing_secret_unavailable';

export interface AttemptTarget {
  kind: 'checkout-session' | 'payment-link' | 'transaction';
  id: string;
}

/** What an attempt came to, as the adapter says. */
export interface AttemptDone {
  redirectTo: string | null;
  /** The session as the target's harness answered the attempt (its `status` after it), when the adapter passes it on. */
  session?: unknown;
  /** The payment link as the target's harness answered the attempt, when the adapter passes it on. */
  paymentLink?: unknown;
}

/** One finished delivery attempt, as the sandbox API lists them. */
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

/**
 * The merchant a payment link or legacy transaction is made or read for: an organisation's
 * API key of one mode, and a bearer token the suite got with that key.
 */
export interface Merchant {
  /** The organisation's id from createOrganisation; undefined for a --config profile. */
  orgId: string | undefined;
  /** The key's mode: the payment is made in it (test unless a check says otherwise). */
  mode: 'test' | 'live';
  credentials: Credentials;
  /** Valid when the call is made (tokens last five minutes): a new one comes from `credentials`. */
  accessToken: string;
}

/** What a payment link is made with: the only field the document says a link accepts. */
export interface PaymentLinkRequest {
  /** Where its completion event is sent; without it the link notifies nobody. */
  webhookUrl?: string;
}

/**
 * A payment link as it reads back, in the document's words: each field only where the
 * target's read has it.
 */
export interface PaymentLinkState {
  /**
   * `created` (payable), `pending`, `completed` (paid), `failed` or `expired`, translated
   * from the target's own words; a state none of these names may be passed as it is.
   */
  status?: string;
  testMode?: boolean;
}

/** What a legacy transaction is made with: where its legacy body goes, and the merchant's own id. */
export interface LegacyTransactionRequest {
  webhookUrl: string;
  foreignTransactionId: string;
}

export interface TargetAdapter {
  /** What the adapter can do; the suite calls nothing else. */
  capabilities: readonly Capability[];
  createOrganisation?(settings: OrganisationSettings): Promise<CreatedOrganisation>;
  createApiKey?(orgId: string, mode: 'test' | 'live'): Promise<Credentials>;
  deleteApiKey?(clientId: string): Promise<void>;
  /** Replaces the organisation's signing secret outright; returns the new one. */
  rotateWebhookSecret?(orgId: string): Promise<string>;
  /**
   * Moves the organisation's clock forward (token expiry, session expiry, idempotency memory,
   * retries). It may give what the target's harness answered (`now`, the organisation's time
   * after the move): then the suite takes the move as made, and judges what follows from it.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: an adapter written before the answer existed returns nothing, and must still fit
  advanceClock?(orgId: string, seconds: number): Promise<void | { now?: string }>;
  /**
   * A payment attempt as a payer would make it; `redirectTo` is where the payer's browser
   * goes on success. It may also give what the target's own harness answered (`session`, or
   * `paymentLink`: the payment as it stood after the attempt, as the sandbox API returns it):
   * then reads that contradict it are a verdict on the target, not a doubt about the adapter.
   */
  attempt?(target: AttemptTarget, rail: Rail, outcome: Outcome): Promise<AttemptDone>;
  webhookDeliveries?(query: { transactionId?: string; checkoutSessionId?: string }): Promise<Delivery[]>;
  /** `internal_error_after_commit`: the next create commits, then answers 500; `signing_secret_unavailable`: deliveries go unsigned. */
  injectFault?(kind: FaultKind, orgId: string, times?: number): Promise<void>;
  /**
   * paymentLinks: a payment link of the merchant's organisation, in its mode, payable by
   * card, made in the target's own shape; gives its id (its transaction id).
   */
  createPaymentLink?(merchant: Merchant, link: PaymentLinkRequest): Promise<{ id: string }>;
  /** paymentLinks: the link as the merchant reads it back (`GET /api/payment-links/{id}` in the target's shape). */
  readPaymentLink?(merchant: Merchant, id: string): Promise<PaymentLinkState>;
  /**
   * legacyTransactions: a transaction made the older way (`POST /api/transaction` in the
   * target's shape, a payment square or the portal), payable by card; gives its UUID.
   */
  createLegacyTransaction?(
    merchant: Merchant,
    transaction: LegacyTransactionRequest,
  ): Promise<{ transactionId: string }>;
  close?(): Promise<void>;
}

/** What `--adapter <module>` may export by default: an adapter, or a factory of one. */
export type AdapterFactory = (context: { baseUrl: string }) => TargetAdapter | Promise<TargetAdapter>;

/** Thrown by the suite when an adapter call failed or had no effect the target shows: a setup error, not a verdict. */
export class AdapterError extends Error {
  override name = 'AdapterError';
}

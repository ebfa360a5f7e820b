/**
 * Target adapters: how the suite reaches a target's test controls (organisations, API
 * keys, its clock, payment attempts, its delivery records, faults). The interface is
 * fixed (conformance/README.md, "Adapter reference", documents it): teams write one for their implementation, and
 * the suite calls nothing but the capabilities an adapter declares.
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
] as const;

export type Capability = (typeof CAPABILITIES)[number];

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

export interface TargetAdapter {
  /** What the adapter can do; the suite calls nothing else. */
  capabilities: readonly Capability[];
  createOrganisation?(settings: OrganisationSettings): Promise<CreatedOrganisation>;
  createApiKey?(orgId: string, mode: 'test' | 'live'): Promise<Credentials>;
  deleteApiKey?(clientId: string): Promise<void>;
  /** Replaces the organisation's signing secret outright; returns the new one. */
  rotateWebhookSecret?(orgId: string): Promise<string>;
  /** Moves the organisation's clock forward (token expiry, session expiry, idempotency memory, retries). */
  advanceClock?(orgId: string, seconds: number): Promise<void>;
  /** A payment attempt as a payer would make it; `redirectTo` is where the payer's browser goes on success. */
  attempt?(target: AttemptTarget, rail: Rail, outcome: Outcome): Promise<{ redirectTo: string | null }>;
  webhookDeliveries?(query: { transactionId?: string; checkoutSessionId?: string }): Promise<Delivery[]>;
  /** `internal_error_after_commit`: the next create commits, then answers 500; `signing_secret_unavailable`: deliveries go unsigned. */
  injectFault?(kind: FaultKind, orgId: string, times?: number): Promise<void>;
  close?(): Promise<void>;
}

/** What `--adapter <module>` may export by default: an adapter, or a factory of one. */
export type AdapterFactory = (context: { baseUrl: string }) => TargetAdapter | Promise<TargetAdapter>;

/** Thrown by the suite when an adapter call failed or had no effect the target shows: a setup error, not a verdict. */
export class AdapterError extends Error {
  override name = 'AdapterError';
}

/** What every handler receives besides its request: the server's services and this request's state. */
import type { components } from '@payment-service/contract';
import type { Context as KoaContext } from 'koa';
import type { Logger } from 'pino';
import type { Credentials } from './auth/credentials.ts';
import type { Authentication, Tokens } from './auth/tokens.ts';
import type { DomainError, ErrorDetail } from './domain/errors.ts';
import type { Idempotency } from './domain/idempotency.ts';
import type { Ids } from './domain/ids.ts';
import type { JsonText } from './json-text.ts';
import type { Faults } from './domain/faults.ts';
import type { Payment, Store } from './store/types.ts';
import type { WebhookDispatcher } from './webhooks/dispatcher.ts';

/** One server's services, made by its composition root (app.ts). */
/**
 * Answers of GET /api/checkout-sessions/{id} as sent, by stored payment, with the status
 * they state (one map per server). The read depends on the clock only through the status
 * (an unpaid session expires), and the store hands out one frozen object per stored row,
 * so a polled session is serialised once per status.
 */
export type SessionAnswers = WeakMap<
  Readonly<Payment>,
  { status: string; json: JsonText<components['schemas']['CheckoutSession']> }
>;

export interface Services {
  store: Store;
  tokens: Tokens;
  credentials: Credentials;
  idempotency: Idempotency;
  ids: Ids;
  faults: Faults;
  webhooks: WebhookDispatcher;
  sessionAnswers: SessionAnswers;
  publicUrl: string;
  log: Logger;
}

export interface Scope {
  services: Services;
  koa: KoaContext;
  rawBodyLength: number;
  /** Set by the bearer security check. */
  auth?: Authentication;
  /** What the bearer security check threw: answered as the server's failure, not a 401. */
  authError?: unknown;
  /** Why the body could not be taken (size, content type, coding, nesting), answered at validation. */
  bodyProblem?: DomainError;
  /** What JSON.parse changed in the body (http/decode.ts), refused along with validation's findings. */
  findings: readonly ErrorDetail[];
}

/** The authenticated API key and organisation; handlers of secured operations only. */
export function authenticated(scope: Scope) {
  if (!scope.auth?.ok) throw new Error('handler reached without authentication');
  return scope.auth;
}

/** What every handler receives besides its request: the server's services and this request's state. */
import type { Context as KoaContext } from 'koa';
import type { Logger } from 'pino';
import type { Credentials } from './auth/credentials.ts';
import type { Authentication, Tokens } from './auth/tokens.ts';
import type { DomainError, ErrorDetail } from './domain/errors.ts';
import type { Idempotency } from './domain/idempotency.ts';
import type { Ids } from './domain/ids.ts';
import type { SessionAnswers } from './handlers/get-checkout-session.ts';
import type { Faults } from './sandbox/faults.ts';
import type { Store } from './store/types.ts';
import type { WebhookDispatcher } from './webhooks/dispatcher.ts';

/** One server's services, made by its composition root (app.ts). */
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

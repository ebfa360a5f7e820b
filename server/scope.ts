/** What every handler receives besides openapi-backend's context. */
import type { Context as KoaContext } from 'koa';
import type { Logger } from 'pino';
import type { Authentication, Tokens } from './auth/tokens.ts';
import type { Idempotency } from './domain/idempotency.ts';
import type { Store } from './store/types.ts';
import type { WebhookDispatcher } from './webhooks/dispatcher.ts';

export interface Services {
  store: Store;
  tokens: Tokens;
  idempotency: Idempotency;
  publicUrl: string;
  docsUrl: string;
  sandboxToken: string | undefined;
  webhooks: WebhookDispatcher;
  log: Logger;
}

export interface Scope {
  services: Services;
  koa: KoaContext;
  /** Set by the bearer security check. */
  auth?: Authentication;
  /** Why the body could not be taken (size, content type, nesting), answered at validation. */
  bodyProblem?: import('./http/errors.ts').ApiError;
  /** Numbers in the body written with more digits than a double holds (refused at validation). */
  inexact?: readonly import('./http/errors.ts').ErrorDetail[];
}

/** The authenticated API key and organisation; handlers of secured operations only. */
export function authenticated(scope: Scope) {
  if (!scope.auth?.ok) throw new Error('handler reached without authentication');
  return scope.auth;
}

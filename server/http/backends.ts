/**
 * The two APIs, each a Backend (openapi/backend.ts) over its description: the public API
 * (bearer tokens from POST /api/token) and the sandbox API (the sandbox token). What each
 * adds to the description: how its security scheme is checked, how a failed check is
 * answered, and the field checks that depend on the caller. Each API's handlers are handed
 * in by the composition root (app.ts): handlers/ for the public API, sandbox/handlers.ts
 * for the sandbox's.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { operations, paths } from '@payment-service/contract';
import type { operations as SandboxOperations, paths as SandboxPaths } from '@payment-service/contract/sandbox';
import type { Document, Operation, ParsedRequest } from 'openapi-backend';
import { FAILURE_WINDOW_MS, FailureCounts, Pace, sourceOf, THROTTLED_PACE_MS } from '../auth/credentials.ts';
import type { ErrorDetail } from '../domain/errors.ts';
import { refuseWebhookUrl } from '../domain/webhook-target.ts';
import type { Scope } from '../scope.ts';
import { ApiError, MALFORMED_TOKEN_REQUEST } from './errors.ts';
import { sentTwice } from './headers.ts';
import { Backend } from './openapi/backend.ts';
import { type Handlers, untyped } from './operation.ts';

/** The public API's handlers, keyed by operationId (handlers/index.ts). */
export type PublicHandlers = Handlers<operations, paths, Scope>;
/** The sandbox API's handlers, keyed by operationId (sandbox/handlers.ts). */
export type SandboxHandlers = Handlers<SandboxOperations, SandboxPaths, Scope>;

/** RFC 9110 11.6.1: a 401 names the scheme that would work. */
const API_CHALLENGE = 'Bearer realm="api"';

/** A problem with the body found before validation is the answer, whatever validation adds. */
function bodyProblemFirst(_operation: Operation, scope: Scope) {
  if (scope.bodyProblem) throw scope.bodyProblem;
  return undefined;
}

/** Whether the operation declares the Idempotency-Key header (the creates). */
const takesIdempotencyKey = (operation: Operation) =>
  (operation.parameters ?? []).some(
    (p) => 'in' in p && p.in === 'header' && p.name.toLowerCase() === 'idempotency-key',
  );

function publicFieldChecks(operation: Operation, request: ParsedRequest, scope: Scope): ErrorDetail[] {
  const details: ErrorDetail[] = [...scope.findings];
  const req = scope.koa.req;
  if (scope.rawBodyLength > 0 && sentTwice(req, 'content-type')) {
    details.push({ field: 'Content-Type', constraints: { single: 'Content-Type must be sent once' } });
  }
  // Node joins a repeated header with ", ": two keys are not one key. Only the creates
  // read the key; other operations ignore it, repeated or not.
  const key = request.headers['idempotency-key'];
  if (
    typeof key === 'string' &&
    key.includes(', ') &&
    takesIdempotencyKey(operation) &&
    sentTwice(req, 'idempotency-key')
  ) {
    details.push({ field: 'Idempotency-Key', constraints: { single: 'Idempotency-Key must be sent once' } });
  }
  // Which webhook targets are allowed depends on the key's mode.
  const body = request.requestBody as { webhookUrl?: unknown } | undefined;
  if (scope.auth?.ok && typeof body === 'object' && body !== null && typeof body.webhookUrl === 'string') {
    const refusal = refuseWebhookUrl(body.webhookUrl, scope.auth.apiKey.mode);
    if (refusal) details.push({ field: 'webhookUrl', constraints: { publiclyReachable: refusal } });
  }
  return details;
}

export function publicApi(definition: Document, handlers: PublicHandlers): Promise<Backend<Scope>> {
  return Backend.create<Scope>({
    definition,
    handlers: untyped(handlers),
    security: {
      bearerAuth: async (request, scope) => {
        // Node keeps the first of two Authorization headers; which one is meant is unknowable.
        if (sentTwice(scope.koa.req, 'authorization')) {
          scope.auth = { ok: false, code: 'unauthorized', message: 'Send one Authorization header: Bearer <token>.' };
          return false;
        }
        try {
          scope.auth = await scope.services.tokens.authenticate(request.headers.authorization as string | undefined);
        } catch (error) {
          // The check itself failed (the database unreachable): not the caller's fault.
          scope.authError = error;
          return false;
        }
        return scope.auth.ok;
      },
    },
    unauthorized: ({ auth, authError }) => {
      if (authError !== undefined) throw authError;
      if (!auth || auth.ok || auth.code === 'unauthorized') {
        const message = auth?.ok === false ? auth.message : 'Authentication required.';
        return new ApiError('unauthorized', message, null, undefined, { 'www-authenticate': API_CHALLENGE });
      }
      // A token was sent and is not good (RFC 6750 3.1: invalid_token covers expired and revoked).
      return new ApiError(auth.code, auth.message, null, undefined, {
        'www-authenticate': `${API_CHALLENGE}, error="invalid_token"`,
      });
    },
    // The token endpoint answers its failures as { error: <string> }, not the envelope.
    onInvalid: (operation, scope) =>
      operation.operationId === 'createAccessToken' ? MALFORMED_TOKEN_REQUEST : bodyProblemFirst(operation, scope),
    moreValidation: publicFieldChecks,
  });
}

/**
 * Wrong sandbox tokens from one source (auth/credentials.ts sourceOf) within the window
 * before the source is throttled: the token opens organisations, clocks and payments, and
 * one chosen by hand may be short. A throttled source has one token compared a second
 * (THROTTLED_PACE_MS), the rest answered 429 uncompared, so guessing slows to that pace
 * however many requests are sent at once; its wrong tokens are answered 429 too.
 */
export const SANDBOX_FAILURE_LIMIT = 10;

function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export function sandboxApi(
  definition: Document,
  sandboxToken: string,
  handlers: SandboxHandlers,
): Promise<Backend<Scope>> {
  const failures = new FailureCounts(SANDBOX_FAILURE_LIMIT, FAILURE_WINDOW_MS);
  const pace = new Pace(THROTTLED_PACE_MS);
  /** Requests whose wrong token came from a source over the limit: seconds until it ends. */
  const throttled = new WeakMap<Scope, number>();
  return Backend.create<Scope>({
    definition,
    handlers: untyped(handlers),
    security: {
      sandboxToken: (request, scope) => {
        if (sentTwice(scope.koa.req, 'authorization')) return false;
        const match = /^Bearer +(\S+)$/i.exec(String(request.headers.authorization ?? '').trim());
        if (!match) return false;
        // A request that offers no token guesses nothing, so only wrong tokens are counted.
        // An unthrottled source always has its token compared, so the right one always opens
        // the sandbox; a throttled one waits its turn, a second at most.
        const source = sourceOf(scope.koa.req.socket.remoteAddress);
        const seconds = failures.limited(source);
        if (seconds !== undefined && !pace.take(source)) {
          throttled.set(scope, 1);
          return false;
        }
        if (sameSecret(match[1]!, sandboxToken)) return true;
        if (seconds !== undefined) throttled.set(scope, seconds);
        failures.add(source);
        return false;
      },
    },
    unauthorized: (scope) => {
      const seconds = throttled.get(scope);
      // The code stays unauthorized (the token is wrong); the status says to stop guessing.
      if (seconds !== undefined)
        return new ApiError(
          'unauthorized',
          `Too many wrong sandbox tokens from this address: retry after ${seconds} second${seconds === 1 ? '' : 's'} with the token the server printed at start.`,
          null,
          undefined,
          { 'retry-after': String(seconds) },
          429,
        );
      return new ApiError(
        'unauthorized',
        'Send the sandbox token as Authorization: Bearer <token> (printed by the server at start).',
        null,
        undefined,
        { 'www-authenticate': 'Bearer realm="sandbox"' },
      );
    },
    onInvalid: bodyProblemFirst,
    moreValidation: (_operation, _request, scope) => scope.findings,
  });
}

/**
 * The SDK's errors (service document: Errors). One base class carries what the service
 * said (`status`, `code`, `message`, `param`, `docUrl`, `details`); the subclasses say
 * what to do about it. `errorFromResponse` is the only place that picks a class, from
 * the code first and the status second, so a code added to the service later still
 * yields a usable error of the right family instead of a crash.
 */
import type { components } from '@payment-service/contract';
import { ACCOUNT_CONFIGURATION_CODES as CONFIGURATION_CODES } from '@payment-service/contract/errors';

export type KnownErrorCode = components['schemas']['KnownErrorCode'];
/** A known code, or any code the service adds later. */
export type ErrorCode = KnownErrorCode | (string & {});
export type ValidationErrorDetail = components['schemas']['ValidationErrorDetail'];

export interface PaymentErrorFields {
  /** HTTP status, or null when no answer arrived (network failure, timeout). */
  status: number | null;
  /** `error.code` of the envelope; null when the answer carried none (the token endpoint's string errors). */
  code: ErrorCode | null;
  message: string;
  param?: string | null;
  docUrl?: string | null;
  details?: ValidationErrorDetail[];
  /** The `x-request-id` of the answer, for support requests. */
  requestId?: string | null;
  cause?: unknown;
}

/** Base class of every failure the client reports; branch on `code`, never on `message`. */
export class PaymentError extends Error {
  override name = 'PaymentError';
  readonly status: number | null;
  readonly code: ErrorCode | null;
  readonly param: string | null;
  readonly docUrl: string | null;
  readonly details: ValidationErrorDetail[];
  readonly requestId: string | null;

  constructor(fields: PaymentErrorFields) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.status = fields.status;
    this.code = fields.code;
    this.param = fields.param ?? null;
    this.docUrl = fields.docUrl ?? null;
    this.details = fields.details ?? [];
    this.requestId = fields.requestId ?? null;
  }
}

/** Raised for a 400 that is not one of the more specific kinds below: change the request. */
export class InvalidRequestError extends PaymentError {
  override name = 'InvalidRequestError';
}
/** Raised for `validation_failed`: `details` lists every failing field at once. */
export class ValidationError extends InvalidRequestError {
  override name = 'ValidationError';
}
/** Raised for the account-configuration codes: fixed in the portal, never by retrying. */
export class AccountConfigurationError extends InvalidRequestError {
  override name = 'AccountConfigurationError';
}
/** Raised for `idempotency_error`: the key was used before with a different body. */
export class IdempotencyError extends InvalidRequestError {
  override name = 'IdempotencyError';
}
/** Raised for a 401: the credentials or the token were refused (an expired token is renewed before this surfaces). */
export class AuthenticationError extends PaymentError {
  override name = 'AuthenticationError';
}
/** Raised for a 404: no such resource, or it belongs to another organisation. */
export class NotFoundError extends PaymentError {
  override name = 'NotFoundError';
}
/** Raised for a 5xx once the retries are spent. */
export class ServerError extends PaymentError {
  override name = 'ServerError';
}
/** Raised when no answer arrived (network failure or timeout) once the retries are spent. */
export class ConnectionError extends PaymentError {
  override name = 'ConnectionError';
}
/** Raised when every attempt ran out of time (`timeoutMs`): no answer came in time. */
export class RequestTimeoutError extends ConnectionError {
  override name = 'RequestTimeoutError';
}
/**
 * Raised when the caller's `signal` aborted the call. A create may or may not have been
 * made: repeat it with the same Idempotency-Key to find out.
 */
export class RequestAbortedError extends PaymentError {
  override name = 'RequestAbortedError';
}

/** The account-configuration codes the document says are fixed in the portal (the description's `x-account-configuration`). */
export const ACCOUNT_CONFIGURATION_CODES: ReadonlySet<string> = new Set<KnownErrorCode>(CONFIGURATION_CODES);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const stringOrNull = (value: unknown) => (typeof value === 'string' ? value : null);

/** What an answer's body says, whichever of the service's two error shapes it has. */
function readErrorBody(status: number, body: unknown): Omit<PaymentErrorFields, 'status' | 'requestId'> {
  const error = isObject(body) ? body.error : undefined;
  // The envelope: { error: { code, message, param, doc_url, details? } }.
  if (isObject(error)) {
    return {
      code: stringOrNull(error.code),
      message: stringOrNull(error.message) ?? `The service answered ${status}.`,
      param: stringOrNull(error.param),
      docUrl: stringOrNull(error.doc_url),
      details: Array.isArray(error.details) ? (error.details as ValidationErrorDetail[]) : [],
    };
  }
  // The token endpoint: { error: "<string>" }. Its 500 gives the code itself as the
  // string; its 400 and 401 give a sentence, which is a message and not a code.
  if (typeof error === 'string') {
    return { code: /^[a-z][a-z0-9_]*$/.test(error) ? error : null, message: error };
  }
  return { code: null, message: `The service answered ${status} without an error body.` };
}

/** The one mapping from an answer to an error class: by code first, then by status. */
export function errorFromResponse(status: number, body: unknown, requestId: string | null = null): PaymentError {
  const fields: PaymentErrorFields = { status, requestId, ...readErrorBody(status, body) };
  const code = fields.code;
  if (code === 'validation_failed') return new ValidationError(fields);
  if (code === 'idempotency_error') return new IdempotencyError(fields);
  if (code !== null && ACCOUNT_CONFIGURATION_CODES.has(code)) return new AccountConfigurationError(fields);
  if (status === 401) return new AuthenticationError(fields);
  if (status === 404) return new NotFoundError(fields);
  if (status >= 500) return new ServerError(fields);
  if (status === 400) return new InvalidRequestError(fields);
  return new PaymentError(fields);
}

/** The error for a request that got no answer: RequestTimeoutError when its time ran out. */
export function connectionError(cause: unknown, timeoutMs?: number): ConnectionError {
  if (cause instanceof Error && cause.name === 'TimeoutError')
    return new RequestTimeoutError({
      status: null,
      code: null,
      message: `No answer from the payment service within ${timeoutMs === undefined ? 'the time limit' : `${timeoutMs} ms`} (timeoutMs).`,
      cause,
    });
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new ConnectionError({
    status: null,
    code: null,
    message: `No answer from the payment service: ${reason}`,
    cause,
  });
}

/** The error for a call the caller's signal aborted. */
export function abortedError(reason: unknown): RequestAbortedError {
  return new RequestAbortedError({
    status: null,
    code: null,
    message: 'The call was aborted by its signal.',
    cause: reason,
  });
}

/**
 * How errors are answered: each code with its HTTP status (service document: Errors, HTTP
 * statuses and Codes; the table is the description's), the envelope (`{ error: { code, message, param,
 * doc_url, details? } }`), and the token endpoint's plain-string form. The domain raises
 * DomainError, which knows no status; the HTTP layer raises ApiError for what only it
 * decides (authentication, a method a path does not take, a request it cannot read).
 */
import { ERROR_STATUS } from '@payment-service/contract/errors';
import { DomainError, type DomainCode, type ErrorDetail } from '../domain/errors.ts';

export type { ErrorDetail } from '../domain/errors.ts';

/** Codes only the HTTP layer answers with. */
export type HttpCode = 'unauthorized' | 'token_expired' | 'invalid_token' | 'unknown_api_key' | 'method_not_allowed';
export type ErrorCode = DomainCode | HttpCode;

/**
 * The status of each code, as the descriptions document it (their `x-error-status` maps,
 * generated into the contract): a code the server answers with that the descriptions do
 * not document fails to compile here.
 */
export const STATUS_OF: Readonly<Record<ErrorCode, number>> = ERROR_STATUS;

/** Raised to answer with the envelope: the code's status, or `status` where the answer needs another (408, 431). */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly param: string | null = null,
    readonly details?: ErrorDetail[],
    /** HTTP headers the answer must carry (Allow on a 405, WWW-Authenticate on a 401). */
    readonly headers?: Readonly<Record<string, string>>,
    status?: number,
  ) {
    super(message);
    this.status = status ?? STATUS_OF[code];
  }

  static from(error: DomainError): ApiError {
    return new ApiError(error.code, error.message, error.param, error.details);
  }
}

/** Any thrown value as an answer: a DomainError or ApiError as itself, anything else undefined (a 500). */
export function answerFor(thrown: unknown): ApiError | undefined {
  if (thrown instanceof ApiError) return thrown;
  if (thrown instanceof DomainError) return ApiError.from(thrown);
  return undefined;
}

export const internalError = () =>
  new ApiError('internal_error', 'Something went wrong on our side. Retry with exponential backoff.');

/** 405 with the `Allow` header RFC 9110 15.5.6 asks for: the methods the path does take. */
export const methodNotAllowed = (method: string, path: string, allowed: readonly string[]) =>
  new ApiError('method_not_allowed', `${method.toUpperCase()} is not supported on ${path}.`, null, undefined, {
    allow: allowed.join(', '),
  });

export function envelope(error: ApiError, docsUrl: string) {
  return {
    error: {
      code: error.code,
      message: error.message,
      param: error.param,
      doc_url: `${docsUrl}/errors/#${error.code}`,
      ...(error.code === 'validation_failed' && error.details ? { details: error.details } : {}),
    },
  };
}

/**
 * `POST /api/token` answers its failures as `{ error: <string> }` (the document's table
 * for that endpoint, 500 included): these values, whatever refused the request.
 */
export const TOKEN_FAILURES: Readonly<Record<number, string>> = {
  400: 'Invalid credentials - missing or malformed clientId/clientSecret',
  401: 'Invalid credentials',
  429: 'Too many requests - retry after the time in Retry-After',
  500: 'internal_error',
};

/**
 * The token endpoint's 400, whichever check refuses the request: validation (a field
 * missing or malformed, http/backends.ts) or the handler's own (a body not form-encoded).
 */
export const MALFORMED_TOKEN_REQUEST = { status: 400, body: { error: TOKEN_FAILURES[400]! } } as const;

export const TOKEN_PATH = '/api/token';

export const isTokenRequest = (method: string | undefined, path: string) => method === 'POST' && path === TOKEN_PATH;

/** The text of an error answer: the envelope, or the token endpoint's string form. */
export function errorJson(error: ApiError, docsUrl: string, tokenRequest: boolean): string {
  if (tokenRequest) return JSON.stringify({ error: TOKEN_FAILURES[error.status] ?? error.message });
  return JSON.stringify(envelope(error, docsUrl));
}

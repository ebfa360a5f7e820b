/**
 * The error envelope (`{ error: { code, message, param, doc_url, details? } }`), the
 * token endpoint's plain-string form, and the one exception type handlers throw to
 * answer with them.
 */

export interface ErrorDetail {
  field: string;
  constraints: Record<string, string>;
}

/** Raised when a request must be answered with the error envelope. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly details?: ErrorDetail[],
    /** HTTP headers the answer must carry (Allow on a 405, WWW-Authenticate on a 401). */
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const notFound = (what = 'resource') => new ApiError(404, 'not_found', `No such ${what}.`);

/** 405 with the `Allow` header RFC 9110 15.5.6 asks for: the methods the path does take. */
export const methodNotAllowed = (method: string, path: string, allowed: readonly string[]) =>
  new ApiError(405, 'method_not_allowed', `${method.toUpperCase()} is not supported on ${path}.`, null, undefined, {
    allow: allowed.join(', '),
  });

export function validationFailed(details: ErrorDetail[]): ApiError {
  // `param` names the field only when exactly one field is to blame.
  const fields = [...new Set(details.map((d) => d.field))];
  const param = fields.length === 1 && fields[0] !== '' ? fields[0]! : null;
  const message =
    fields.length === 1
      ? (Object.values(details[0]!.constraints)[0] ?? 'Invalid request.')
      : `${fields.length} fields are invalid.`;
  return new ApiError(400, 'validation_failed', message, param, details);
}

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
  500: 'internal_error',
};

export const TOKEN_PATH = '/api/token';

export const isTokenRequest = (method: string | undefined, path: string) => method === 'POST' && path === TOKEN_PATH;

/** The text of an error answer: the envelope, or the token endpoint's string form. */
export function errorJson(error: ApiError, docsUrl: string, tokenRequest: boolean): string {
  if (tokenRequest) return JSON.stringify({ error: TOKEN_FAILURES[error.status] ?? error.message });
  return JSON.stringify(envelope(error, docsUrl));
}

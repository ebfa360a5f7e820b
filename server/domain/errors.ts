/**
 * Why the domain refuses something, with no word of HTTP: a code of the service document
 * (Errors: Codes), the field to blame, and for `validation_failed` every failing field.
 * The HTTP layer answers each code with its status (http/errors.ts, one table).
 */
import type { components as PublicApi } from '@payment-service/contract';
import type { components as SandboxApi } from '@payment-service/contract/sandbox';

export type ErrorDetail = PublicApi['schemas']['ValidationErrorDetail'];

/** The codes the domain answers with: the document's, and the sandbox's `invalid_state`. */
export type DomainCode =
  | Extract<
      PublicApi['schemas']['KnownErrorCode'],
      | 'validation_failed'
      | 'currency_mismatch'
      | 'card_not_enabled'
      | 'open_banking_not_enabled'
      | 'settlement_account_missing'
      | 'open_banking_currency_unsupported'
      | 'idempotency_error'
      | 'not_found'
      | 'internal_error'
    >
  | SandboxApi['schemas']['SandboxErrorCode'];

/** Raised when the domain refuses a request: what is wrong, not how to answer it. */
export class DomainError extends Error {
  override name = 'DomainError';

  constructor(
    readonly code: DomainCode,
    message: string,
    /** The one field to blame, or null when no single field is. */
    readonly param: string | null = null,
    /** Every failing field, for validation_failed. */
    readonly details?: ErrorDetail[],
  ) {
    super(message);
  }
}

export const notFound = (what = 'resource') => new DomainError('not_found', `No such ${what}.`);

export function validationFailed(details: ErrorDetail[], summary?: string): DomainError {
  // `param` names the field only when exactly one field is to blame.
  const fields = [...new Set(details.map((d) => d.field))];
  const param = fields.length === 1 && fields[0] !== '' ? fields[0]! : null;
  const message =
    summary ??
    (fields.length === 1
      ? (Object.values(details[0]!.constraints)[0] ?? 'Invalid request.')
      : `${fields.length} fields are invalid.`);
  return new DomainError('validation_failed', message, param, details);
}

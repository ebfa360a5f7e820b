/**
 * Turns ajv's errors (from openapi-backend's request validation) into the envelope's
 * `details`: one entry per failing field, each mapping a constraint name to a message.
 */
import type { ErrorObject } from 'ajv';
import type { ErrorDetail } from '../../domain/errors.ts';

/** Where openapi-backend puts each part of the request it validates. */
const LOCATIONS = ['/requestBody', '/header', '/query', '/path'] as const;

/** `idempotency-key` → `Idempotency-Key`: header names are matched case-insensitively. */
function headerName(lower: string): string {
  return lower.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

function fieldOf(error: ErrorObject): string {
  let pointer = error.instancePath;
  if (error.keyword === 'required') pointer += `/${String(error.params.missingProperty)}`;
  if (error.keyword === 'additionalProperties') pointer += `/${String(error.params.additionalProperty)}`;
  const location = LOCATIONS.find((l) => pointer === l || pointer.startsWith(`${l}/`));
  const rest = (location ? pointer.slice(location.length) : pointer)
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (location === '/header') return rest.map(headerName).join('.');
  return rest.join('.');
}

function describe(error: ErrorObject, field: string): [name: string, message: string] {
  const subject = field || 'The request body';
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return ['required', `${subject} is required`];
    case 'type':
      return ['type', `${subject} must be of type ${[p.type].flat().join(' or ')}`];
    case 'maximum':
      return ['max', `${subject} must not be greater than ${p.limit}`];
    case 'minimum':
      return ['min', `${subject} must not be less than ${p.limit}`];
    case 'exclusiveMinimum':
      return ['min', `${subject} must be greater than ${p.limit}`];
    case 'multipleOf':
      return p.multipleOf === 0.01
        ? ['decimalPlaces', `${subject} must have at most 2 decimal places`]
        : ['multipleOf', `${subject} must be a multiple of ${p.multipleOf}`];
    case 'maxLength':
      return ['maxLength', `${subject} must be at most ${p.limit} characters`];
    case 'minLength':
      return ['minLength', `${subject} must be at least ${p.limit} character${p.limit === 1 ? '' : 's'}`];
    case 'pattern':
      return ['matches', `${subject} must match ${p.pattern}`];
    case 'format':
      return p.format === 'uri'
        ? ['isUrl', `${subject} must be a valid absolute URL`]
        : ['format', `${subject} must be a valid ${p.format}`];
    case 'enum':
      return ['isIn', `${subject} must be one of: ${(p.allowedValues as unknown[]).join(', ')}`];
    case 'const':
      return ['equals', `${subject} must be ${JSON.stringify(p.allowedValue)}`];
    case 'parse':
      return ['json', `The request body is not valid JSON (${error.message ?? 'parse error'})`];
    case 'additionalProperties':
      return ['unknown', `${subject} is not a known field`];
    default:
      return [error.keyword, `${subject} ${error.message ?? 'is invalid'}`];
  }
}

/** Errors of combinators (anyOf, allOf, if) repeat what their branches already said. */
const SUMMARY_KEYWORDS = new Set(['anyOf', 'oneOf', 'allOf', 'if', 'not']);

export function detailsFromAjv(errors: ErrorObject[]): ErrorDetail[] {
  // A body that is not JSON at all fails every schema keyword too; say only what matters.
  const parse = errors.find((e) => e.keyword === 'parse');
  const relevant = parse ? [parse] : errors;
  const byField = new Map<string, Record<string, string>>();
  for (const error of relevant) {
    if (SUMMARY_KEYWORDS.has(error.keyword)) continue;
    const field = fieldOf(error);
    const [name, message] = describe(error, field);
    const constraints = byField.get(field) ?? {};
    constraints[name] ??= message;
    byField.set(field, constraints);
  }
  return [...byField].map(([field, constraints]) => ({ field, constraints }));
}

/**
 * The error envelope (Errors: Envelope): `doc_url`, `details` and `param`; and the token
 * endpoint's exception, a plain string.
 */
import { at, isObject, list, show } from '../core/json.ts';

/**
 * `error.doc_url` is `{docs_url}/errors/#<code>`, where `{docs_url}` is "the address of the
 * service's public documentation": an absolute URL with a host, which a reader can open.
 */
export function docUrlProblem(docUrl: unknown, code: string): string | undefined {
  const suffix = `/errors/#${code}`;
  if (typeof docUrl === 'string' && URL.canParse(docUrl) && new URL(docUrl).host !== '' && docUrl.endsWith(suffix))
    return undefined;
  return `error.doc_url for ${code} is ${show(docUrl)}; it must be {docs_url}${suffix}, {docs_url} the address of the service's public documentation.`;
}

/** The `{docs_url}` of a doc_url that keeps the rule. */
export const docsUrlOf = (docUrl: string, code: string): string => docUrl.slice(0, -`/errors/#${code}`.length);

/** `details` comes "only on `validation_failed`". */
export function detailsPlacementProblem(error: unknown): string | undefined {
  const code = at(error, 'code');
  if (!isObject(error) || !('details' in error) || code === 'validation_failed') return undefined;
  return `error.details appears on ${String(code)}; it comes only on validation_failed.`;
}

/** The token endpoint answers its failures `{ error: <message string> }`, not the envelope. */
export function plainErrorProblem(json: unknown): string | undefined {
  if (typeof at(json, 'error') === 'string') return undefined;
  return `the body must be { "error": "<message string>" } (the token endpoint does not use the envelope); error is ${show(at(json, 'error'))}.`;
}

/** The objects of the create body (Endpoints: POST /api/checkout-sessions): fields with fields of their own. */
const OBJECTS = ['amount', 'creditorReference'];

/** The fields a validation_failed answer names in details. */
export function namedFields(json: unknown): string[] {
  return list(json, 'error', 'details').map((d) => String(at(d, 'field')));
}

/**
 * Does a validation_failed answer list every failing field at once in `details`, one entry
 * per failing field (`field`, and `constraints` mapping a constraint name to a message), and
 * no field that does not fail; and is `param` the offending field when one is to blame, null
 * when several are?
 *
 * `fails` are the fields that fail, `may` those the document leaves open. A missing or
 * mistyped object of the body may be named by itself or by the fields it lacks; then `param`
 * names the one entry, or the object (the single field to blame), or is null.
 */
export function validationDetailsProblem(
  json: unknown,
  fails: readonly string[],
  may: readonly string[] = [],
): string | undefined {
  const error = at(json, 'error');
  if (!Array.isArray(at(error, 'details'))) return 'validation_failed must carry details: one entry per failing field.';
  for (const d of list(error, 'details')) {
    const constraints = at(d, 'constraints');
    if (
      typeof at(d, 'field') !== 'string' ||
      !isObject(constraints) ||
      Object.keys(constraints).length === 0 ||
      !Object.values(constraints).every((c) => typeof c === 'string')
    )
      return `details entry ${show(d)} must have field (a string) and constraints (a name mapped to a message).`;
  }
  const named = namedFields(json);
  const covers = (field: string, name: string) =>
    name === field || (OBJECTS.includes(field) && name.startsWith(`${field}.`));
  const missing = fails.filter((f) => !named.some((n) => covers(f, n)));
  const extra = named.filter((n) => !fails.some((f) => covers(f, n)) && !may.some((f) => covers(f, n)));
  if (missing.length > 0 || extra.length > 0)
    return `details must name exactly ${fails.join(', ') || 'the failing fields'}${may.length > 0 ? ` (and may name ${may.join(', ')})` : ''}; they name ${named.join(', ') || 'nothing'}.`;
  if (!isObject(error) || !('param' in error)) return 'error.param must always be present.';
  const param = error.param;
  const distinct = [...new Set(named)];
  if (distinct.length === 1) {
    if (param === distinct[0]) return undefined;
    return `param must name the one failing field ${distinct[0]}; it is ${show(param)}.`;
  }
  // Several entries inside one failing object: that object is the single field to blame.
  const object = fails.find((f) => distinct.every((n) => n.startsWith(`${f}.`)));
  if (param === null || (object !== undefined && param === object)) return undefined;
  return `param must be null when several fields fail${object ? ` (or ${object}, the object they are in)` : ''}; it is ${show(param)}.`;
}

/**
 * Two readings of the description that are more exact than ajv's defaults, for the
 * server's request validation and for the tests that predict its answers:
 *
 * - `format: uri` as the document's "valid absolute URL": RFC 3986's syntax (ajv-formats),
 *   and a URL the URL Standard parses (what a browser or an HTTP client will open), so a
 *   port over 65535 or an empty or malformed host is refused at creation rather than
 *   failing when the payer is redirected or a webhook is sent;
 * - `multipleOf` decided on decimals (client/decimal.ts): 19.99 passes `multipleOf: 0.01`;
 *   1.005 and 1e-10 do not.
 */
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { decimalMultipleOf } from '@payment-service/client/decimal';

const rfc3986Uri = fullFormats.uri as (text: string) => boolean;

export const absoluteUrl = (text: string): boolean => rfc3986Uri(text) && URL.canParse(text);

/** Call after ajv-formats has added its formats. */
export function readExactly(ajv: Ajv2020): Ajv2020 {
  ajv.addFormat('uri', absoluteUrl);
  ajv.removeKeyword('multipleOf').addKeyword(decimalMultipleOf);
  return ajv;
}

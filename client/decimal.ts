/**
 * The document's "at most 2 decimal places" (`amount.total`), which the description
 * states as `multipleOf: 0.01`, decided on decimals rather than in binary floating
 * point: 19.99, 0.07 and 4.35 are multiples of 0.01 although 19.99 / 0.01 is not an
 * integer in doubles, while 1.005, 1e-10 and 0.30000000000000004 are not, although a
 * tolerance (ajv's `multipleOfPrecision`) lets the last two through.
 *
 * A number is taken as the shortest decimal that reads back as the same double (what
 * `String(n)` prints), which is the decimal the sender wrote unless it wrote more
 * digits than a double holds: readsExactly() tells, and the server refuses such numbers.
 * Shared by the server's request validation, the conformance suite's response checks
 * and the tests.
 */

/** A number's decimal text as an integer and a count of decimal places: "19.99" → [1999n, 2]. */
function decimalOf(text: string): [digits: bigint, places: number] {
  const [mantissa, exponent = '0'] = text.toLowerCase().split('e') as [string, string?];
  const [whole, fraction = ''] = mantissa.split('.') as [string, string?];
  const places = fraction.length - Number(exponent);
  const digits = BigInt(whole + fraction);
  return places >= 0 ? [digits, places] : [digits * 10n ** BigInt(-places), 0];
}

const decimal = (value: number) => decimalOf(String(value));

/** Whether two decimals are the same number. */
function sameDecimal([a, aPlaces]: [bigint, number], [b, bPlaces]: [bigint, number]): boolean {
  const places = Math.max(aPlaces, bPlaces);
  return a * 10n ** BigInt(places - aPlaces) === b * 10n ** BigInt(places - bPlaces);
}

/**
 * Whether a JSON number, as written, is the decimal its double stands for (the shortest
 * that reads back as it): "19.990" and "1e2" are; "1.0000000000000001" (read as 1) and
 * "1e400" (Infinity) are not. A number of at most 15 significant digits always is.
 */
export function readsExactly(text: string): boolean {
  const value = Number(text);
  if (!Number.isFinite(value)) return false;
  const written = text.toLowerCase().split('e')[0]!.replace(/[-+.]/g, '');
  // A zero is exact however it is written; a non-zero that underflows to 0 is not (and
  // its exponent may be too large to scale by).
  if (value === 0) return /^0*$/.test(written);
  return sameDecimal(decimalOf(text), decimal(value));
}

/** Whether `value` is a whole multiple of `step` (> 0) as decimals. */
export function isDecimalMultiple(value: number, step: number): boolean {
  if (!Number.isFinite(value) || !Number.isFinite(step) || step <= 0) return false;
  const [a, aPlaces] = decimal(value);
  const [b, bPlaces] = decimal(step);
  const places = Math.max(aPlaces, bPlaces);
  return (a * 10n ** BigInt(places - aPlaces)) % (b * 10n ** BigInt(places - bPlaces)) === 0n;
}

/**
 * JSON Schema's `multipleOf`, decided by isDecimalMultiple: an ajv keyword definition,
 * to add after `ajv.removeKeyword('multipleOf')`. Its errors look like ajv's own
 * (`keyword: 'multipleOf'`, `params.multipleOf`).
 */
export const decimalMultipleOf = {
  keyword: 'multipleOf',
  type: 'number',
  schemaType: 'number',
  errors: true,
  validate: function multipleOf(step: number, value: number): boolean {
    const ok = isDecimalMultiple(value, step);
    (multipleOf as { errors?: unknown }).errors = ok
      ? null
      : [{ keyword: 'multipleOf', params: { multipleOf: step }, message: `must be multiple of ${step}` }];
    return ok;
  },
} as const;

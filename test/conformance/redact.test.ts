/**
 * The Redactor with more secrets than it searches for one by one (a proxy before clients
 * that fetch a token per call): whatever texts hold them, whole or cut short, none is left
 * in what a report shows, and a text that holds none is shown as it is.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Redactor } from '../../conformance/core/redact.ts';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-'.split('');
/** What every token of one issuer starts with (a JWT's header), so that secrets share long starts. */
const SHARED_START = 'eyJhbGciOiJIUzI1NiJ9.';

const secretArb = fc
  .tuple(fc.boolean(), fc.array(fc.constantFrom(...ALPHABET), { minLength: 13, maxLength: 48 }))
  .map(([shared, chars]) => `${shared ? SHARED_START : ''}${chars.join('')}`);
const secretsArb = fc.uniqueArray(secretArb, { minLength: 70, maxLength: 140 });
/** Words that hold no secret: lower-case letters only, which no cut start of twelve characters is. */
const wordArb = fc.stringMatching(/^[a-z]{0,10}$/);
const delimiterArb = fc.constantFrom(' ', '"', '=', ': ', '&', '/', '\n');

/** A text of words and the secrets' places: whole, or cut short and marked so ("…"). */
const textArb = (secrets: string[]) =>
  fc.array(
    fc.oneof(
      wordArb,
      fc.nat({ max: secrets.length - 1 }).map((i) => secrets[i]!),
      fc.tuple(fc.nat({ max: secrets.length - 1 }), fc.nat()).map(([i, n]) => {
        const secret = secrets[i]!;
        return `${secret.slice(0, 12 + (n % (secret.length - 12)))}…`;
      }),
    ),
    { maxLength: 30 },
  );

describe('the Redactor with many secrets', () => {
  it('leaves no secret whole, nor the start of one cut short, in any text', () => {
    fc.assert(
      fc.property(
        secretsArb.chain((secrets) => fc.tuple(fc.constant(secrets), textArb(secrets), delimiterArb)),
        ([secrets, parts, delimiter]) => {
          const redactor = new Redactor();
          for (const secret of secrets) redactor.remember(secret, '$ACCESS_TOKEN');
          const out = redactor.text(parts.join(delimiter));
          for (const secret of secrets) {
            expect(out).not.toContain(secret);
            expect(out).not.toContain(secret.slice(0, 12));
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('shows a text that holds no secret as it is', () => {
    fc.assert(
      fc.property(secretsArb, fc.array(wordArb, { maxLength: 40 }), delimiterArb, (secrets, words, delimiter) => {
        const redactor = new Redactor();
        for (const secret of secrets) redactor.remember(secret, '$ACCESS_TOKEN');
        const text = words.join(delimiter);
        expect(redactor.text(text)).toBe(text);
      }),
      { numRuns: 60 },
    );
  });

  it('replaces each secret by its own placeholder, the longest of two that overlap', () => {
    const redactor = new Redactor();
    const tokens = Array.from({ length: 100 }, (_, i) => `${SHARED_START}token${String(i).padStart(8, '0')}`);
    for (const token of tokens) redactor.remember(token, '$ACCESS_TOKEN');
    redactor.remember('cs_test_secret_value_1234', '$CLIENT_SECRET');
    redactor.remember(`${tokens[7]}.signed`, '$TOKEN');
    expect(
      redactor.text(`a ${tokens[3]!} b cs_test_secret_value_1234 c ${tokens[7]}.signed d ${tokens[9]!.slice(0, 25)}…`),
    ).toBe('a $ACCESS_TOKEN b $CLIENT_SECRET c $TOKEN d $ACCESS_TOKEN…');
  });
});

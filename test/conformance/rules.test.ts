/**
 * The predicates of conformance/rules/, one for each rule the hand-written checks
 * and the exploration both call, as tables of answers and verdicts: what the document's words
 * allow passes, and each way of breaking them is named.
 */
import { describe, expect, it } from 'vitest';
import { configCodes, configurationTable } from '../../conformance/rules/configuration.ts';
import { docUrlProblem, validationDetailsProblem } from '../../conformance/rules/errors.ts';
import { payloadProblems } from '../../conformance/rules/payload.ts';
import { redirectProblem } from '../../conformance/rules/redirect.ts';
import { replayDifferences } from '../../conformance/rules/session.ts';
import { tokenResponseProblem } from '../../conformance/rules/token.ts';

const TX = '7d3c2a5e-9b1f-4c8e-8a6d-2f4b1e0c9a77';

describe('the redirect rule: transactionId and checkoutSessionId appended, the merchant’s parameters kept', () => {
  const redirectUrl = 'https://shop.example.com/done?order=1001&item=a%20b&item=c';
  const base = `https://shop.example.com/done?order=1001&item=a+b&item=c`;
  it.each([
    ['both ids appended', `${base}&transactionId=${TX}&checkoutSessionId=cs_1`, undefined],
    [
      'the ids before the merchant’s own',
      `https://shop.example.com/done?checkoutSessionId=cs_1&transactionId=${TX}&order=1001&item=a%20b&item=c`,
      undefined,
    ],
    // The rule names what the address carries, not that it carries nothing else.
    [
      'a parameter of the target’s own beside them',
      `${base}&transactionId=${TX}&checkoutSessionId=cs_1&utm_source=pay`,
      undefined,
    ],
    [
      'a merchant’s parameter dropped',
      `https://shop.example.com/done?item=a+b&item=c&transactionId=${TX}&checkoutSessionId=cs_1`,
      /order=1001 must be kept/,
    ],
    [
      'one value of a repeated parameter lost',
      `https://shop.example.com/done?order=1001&item=c&transactionId=${TX}&checkoutSessionId=cs_1`,
      /item=a b&item=c must be kept/,
    ],
    [
      'a value added to a merchant’s parameter',
      `${base}&order=2&transactionId=${TX}&checkoutSessionId=cs_1`,
      /order=1001 must be kept/,
    ],
    ['checkoutSessionId missing', `${base}&transactionId=${TX}`, /checkoutSessionId=cs_1 must be appended/],
    [
      'checkoutSessionId of another session',
      `${base}&transactionId=${TX}&checkoutSessionId=cs_2`,
      /checkoutSessionId=cs_1/,
    ],
    ['checkoutSessionId twice', `${base}&transactionId=${TX}&checkoutSessionId=cs_1&checkoutSessionId=cs_2`, /once/],
    ['transactionId not a UUID', `${base}&transactionId=42&checkoutSessionId=cs_1`, /transactionId=<uuid>/],
    [
      'another address',
      `https://shop.example.com/other?order=1001&item=a+b&item=c&transactionId=${TX}&checkoutSessionId=cs_1`,
      /not to redirectUrl/,
    ],
    ['not a URL', 'done?order=1001', /not a URL/],
  ])('%s', (_name, redirectTo, want) => {
    const problem = redirectProblem(redirectTo, redirectUrl, 'cs_1');
    if (want === undefined) expect(problem).toBeUndefined();
    else expect(problem).toMatch(want);
  });
});

describe('error.doc_url is {docs_url}/errors/#<code>, {docs_url} the documentation’s address', () => {
  it.each([
    ['https://docs.example.com/payments/errors/#not_found', true],
    ['http://127.0.0.1:4010/docs/errors/#not_found', true],
    ['https://docs.example.com/errors/#validation_failed', false],
    ['https://docs.example.com/errors/not_found', false],
    ['/docs/errors/#not_found', false],
    // Parses as a URL, but names no place a reader could open.
    ['file:///errors/#not_found', false],
    ['urn:x/errors/#not_found', false],
    [undefined, false],
  ])('%j: %s', (docUrl, ok) => expect(docUrlProblem(docUrl, 'not_found') === undefined).toBe(ok));
});

describe('validation_failed: details name every failing field and no other, param by the rule', () => {
  const answer = (param: unknown, ...fields: string[]) => ({
    error: { code: 'validation_failed', param, details: fields.map((field) => ({ field, constraints: { x: 'm' } })) },
  });
  it.each([
    ['the one failing field', answer('amount.total', 'amount.total'), ['amount.total'], undefined],
    ['several, param null', answer(null, 'amount.total', 'redirectUrl'), ['amount.total', 'redirectUrl'], undefined],
    [
      'several, param naming one',
      answer('redirectUrl', 'amount.total', 'redirectUrl'),
      ['amount.total', 'redirectUrl'],
      /null/,
    ],
    ['a failing field left out', answer(null, 'amount.total'), ['amount.total', 'redirectUrl'], /exactly/],
    ['a field that does not fail named too', answer(null, 'amount.total', 'description'), ['amount.total'], /exactly/],
    ['a missing object by itself', answer('amount', 'amount'), ['amount'], undefined],
    ['a missing object by the field it lacks', answer('amount.total', 'amount.total'), ['amount'], undefined],
    [
      'a missing object by its fields, param the object',
      answer('amount', 'amount.total', 'amount.currency'),
      ['amount'],
      undefined,
    ],
    [
      'a missing object by its fields, param null',
      answer(null, 'amount.total', 'amount.currency'),
      ['amount'],
      undefined,
    ],
    ['a scalar named by a field inside it', answer('redirectUrl.href', 'redirectUrl.href'), ['redirectUrl'], /exactly/],
    [
      'param missing',
      { error: { code: 'validation_failed', details: [{ field: 'type', constraints: { x: 'm' } }] } },
      ['type'],
      /param/,
    ],
    ['no details', { error: { code: 'validation_failed', param: 'type' } }, ['type'], /details/],
    [
      'an entry without constraints',
      { error: { code: 'validation_failed', param: 'type', details: [{ field: 'type' }] } },
      ['type'],
      /constraints/,
    ],
  ])('%s', (_name, json, fails, want) => {
    const problem = validationDetailsProblem(json, fails);
    if (want === undefined) expect(problem).toBeUndefined();
    else expect(problem).toMatch(want);
  });
});

describe('the token response and the webhook payload', () => {
  it.each([
    [{ accessToken: 't', tokenType: 'Bearer', expiresIn: '1h' }, undefined],
    [{ accessToken: 't', tokenType: 'Bearer', expiresIn: '' }, /expiresIn/],
    [{ accessToken: '', tokenType: 'Bearer', expiresIn: '1h' }, /accessToken/],
    [{ accessToken: 't', tokenType: 'bearer', expiresIn: '1h' }, /tokenType/],
  ])('token response %j', (json, want) => {
    const problem = tokenResponseProblem(json);
    if (want === undefined) expect(problem).toBeUndefined();
    else expect(problem).toMatch(want);
  });

  const payload = {
    event: 'checkout_session.completed',
    createdAt: '2026-01-01T00:00:00Z',
    checkoutSessionId: 'cs_1',
    transactionId: TX,
    foreignTransactionId: null,
  };
  it.each([
    ['as documented', payload, []],
    ['with a field of its own', { ...payload, attempt: 2 }, []],
    ['saying it was test', { ...payload, livemode: false }, ['target.no-mode']],
    ['without foreignTransactionId', { ...payload, foreignTransactionId: undefined }, ['payload.foreign-id']],
    ['createdAt in another form', { ...payload, createdAt: 'Thu, 01 Jan 2026 00:00:00 +0000' }, ['payload.created']],
  ])('payload %s', (_name, body, clauses) =>
    expect(
      payloadProblems(JSON.parse(JSON.stringify(body)), { checkoutSessionId: 'cs_1', foreignTransactionId: null }).map(
        (p) => p.clause,
      ),
    ).toEqual(clauses),
  );

  it('a replay repeats every field of the create response; the status only while the payment has not moved on', () => {
    const created = { id: 'cs_1', status: 'created', url: 'u', amount: { total: 1 }, extra: 1 };
    expect(replayDifferences({ ...created, extra: 2 }, created)).toEqual([]);
    expect(replayDifferences({ ...created, status: 'completed' }, created)).toEqual(['status']);
    expect(replayDifferences({ ...created, status: 'completed' }, created, true)).toEqual([]);
  });
});

describe('the configuration decision table: every cell, with the codes the stated order allows', () => {
  const table = configurationTable();
  const all = {
    settlementCurrency: 'NZD',
    cardEnabled: true,
    openBankingApproved: true,
    settlementAccount: true,
  } as const;

  it('holds every organisation × checkoutMethod × currency given: 16 × 3 × 3 cells', () => {
    expect(table).toHaveLength(144);
    expect(new Set(table.map((c) => JSON.stringify([c.settings, c.method, c.currency]))).size).toBe(144);
  });

  it('accepts a create that needs nothing missing, in its own currency or with none given', () => {
    const accepted = table.filter((c) => c.codes.length === 0);
    // Never in the other currency; an AUD organisation only by card.
    expect(accepted.every((c) => c.currency !== 'other')).toBe(true);
    expect(accepted.filter((c) => c.settings.settlementCurrency === 'AUD').every((c) => c.method === 'card')).toBe(
      true,
    );
    // Card on: card accepted (2 currencies given) for each of 8 organisations; a bank rail needs NZD, approval and an account.
    expect(accepted).toHaveLength(8 * 2 + 3 * 2);
  });

  it.each([
    [{ ...all }, 'both', undefined, []],
    [{ ...all }, 'card', 'AUD', ['currency_mismatch']],
    [{ ...all, cardEnabled: false }, 'open_banking', undefined, []],
    [{ ...all, cardEnabled: false }, 'both', 'NZD', ['card_not_enabled']],
    [{ ...all, settlementCurrency: 'AUD' }, 'open_banking', 'AUD', ['open_banking_currency_unsupported']],
    [
      { ...all, settlementCurrency: 'AUD', openBankingApproved: false, settlementAccount: false },
      'both',
      undefined,
      ['open_banking_currency_unsupported'],
    ],
    [
      { ...all, openBankingApproved: false, settlementAccount: false },
      'open_banking',
      undefined,
      ['open_banking_not_enabled', 'settlement_account_missing'],
    ],
    [
      { ...all, cardEnabled: false, openBankingApproved: false },
      'both',
      'AUD',
      ['currency_mismatch', 'card_not_enabled', 'open_banking_not_enabled'],
    ],
  ] as const)('%o, %s, currency %s: %o', (settings, method, currency, codes) => {
    expect(configCodes(settings, method, currency)).toEqual(codes);
  });
});

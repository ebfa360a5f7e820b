/**
 * POST and GET /api/checkout-sessions (service document: Endpoints, Resources, States,
 * Errors), over HTTP against the in-process reference server. Every answer is also
 * checked against the description by the test client.
 *
 * @tags postgres
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionRequest, startTestServer, type Org, type TestServer } from '../support/server.ts';

let t: TestServer;
let org: Org;

beforeAll(async () => {
  t = await startTestServer();
  org = await t.organisation();
});
afterAll(() => t.close());

const create = (body: unknown, token = org.testToken, headers: Record<string, string> = {}) =>
  t.request('POST', '/api/checkout-sessions', { token, body, headers });

function withPatch(patch: (body: any) => void) {
  const body = structuredClone(sessionRequest()) as any;
  patch(body);
  return body;
}

describe('validation (boundaries on both sides)', () => {
  it.each([
    [0, false],
    [0.01, true],
    [19.99, true],
    [0.07, true],
    [4.35, true],
    [10000, true],
    [10000.01, false],
    [1.005, false],
    [-5, false],
    ['25.00', false],
    [null, false],
    // A cent away by less than a tolerance would see: still more than two decimals.
    [1e-10, false],
    [0.30000000000000004, false],
    [1.0000000001, false],
    [9999.99, true],
    [1e2, true],
  ])('amount.total %j: accepted=%s', async (total, accepted) => {
    const answer = await create(withPatch((b) => (b.amount.total = total)));
    if (accepted) {
      expect(answer.status).toBe(200);
      expect(answer.body.amount.total).toBe(total);
    } else {
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 'validation_failed', param: 'amount.total' });
      expect(answer.body.error.details).toEqual([expect.objectContaining({ field: 'amount.total' })]);
    }
  });

  // Written with more digits than a double holds, these read as 10000, 10000, 1 and 25.5:
  // what was written is over the maximum or has more than two decimals.
  it.each(['10000.0000000000001', '9999.999999999999999', '1.0000000000000001', '25.500000000000000001'])(
    'amount.total written as %s is refused, not rounded to a double that would pass',
    async (written) => {
      const text = JSON.stringify(sessionRequest()).replace('"total":25.5', `"total":${written}`);
      const answer = await t.request('POST', '/api/checkout-sessions', {
        token: org.testToken,
        rawBody: text,
        headers: { 'content-type': 'application/json' },
      });
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 'validation_failed', param: 'amount.total' });
      expect(Object.keys(answer.body.error.details[0].constraints)).toEqual(['exact']);
    },
  );

  it.each([
    ['19.990000000000000000', 19.99],
    ['1999e-2', 19.99],
    ['0.070', 0.07],
  ])('amount.total written as %s is exactly %s, and accepted', async (written, total) => {
    const text = JSON.stringify(sessionRequest()).replace('"total":25.5', `"total":${written}`);
    const answer = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      rawBody: text,
      headers: { 'content-type': 'application/json' },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.amount.total).toBe(total);
  });

  it('lists an inexact amount with the other failures at once; a key repeated with such a number is still refused', async () => {
    const text = JSON.stringify({ ...sessionRequest(), type: 'bad' }).replace(
      '"total":25.5',
      '"total":1.0000000000000001',
    );
    const both = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      rawBody: text,
      headers: { 'content-type': 'application/json' },
    });
    expect(both.body.error.details.map((d: any) => d.field).sort()).toEqual(['amount.total', 'type']);
    const repeated = JSON.stringify(sessionRequest()).replace('{', '{"amount":{"total":1.0000000000000001},');
    const answer = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      rawBody: repeated,
      headers: { 'content-type': 'application/json' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('validation_failed');
  });

  const sendText = (text: string) =>
    t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      rawBody: text,
      headers: { 'content-type': 'application/json' },
    });
  const valid = JSON.stringify(sessionRequest());

  it.each([
    [
      'with another value (the last would win: a 1.00 payment)',
      valid.replace('{', '{"amount":{"total":25},').replace('"total":25.5', '"total":1'),
      'amount',
    ],
    ['with the same value', valid.replace('{', '{"checkoutMethod":"both",'), 'checkoutMethod'],
    [
      'inside a nested object',
      valid.replace('"reference":', '"reference":"A","reference":'),
      'creditorReference.reference',
    ],
    ['written with an escape', valid.replace('{', '{"\\u0074ype":"single",'), 'type'],
  ])('refuses a key repeated in one object %s, naming it, and creates nothing', async (_name, text, field) => {
    const before = await t.server.store.countPayments(org.id);
    const answer = await sendText(text);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('validation_failed');
    expect(answer.body.error.details).toContainEqual({
      field,
      constraints: { unique: expect.stringContaining(field) },
    });
    expect(await t.server.store.countPayments(org.id)).toBe(before);
  });

  it('reads a key that only looks repeated inside a string as the one key it is', async () => {
    const text = valid.replace('"reference":"', '"reference":"a:b\\":{\\"x\\":1,');
    const answer = await sendText(text);
    expect(answer.status).toBe(400);
    expect(answer.body.error.details.flatMap((d: any) => Object.keys(d.constraints))).not.toContain('unique');
  });

  it.each([
    ['a lone high surrogate', '\\ud800'],
    ['a lone low surrogate', '\\udc00'],
    ['two high surrogates', '\\ud83d\\ud83d'],
    ['a pair the wrong way round', '\\ude00\\ud83d'],
    // Valid Unicode, but no text column stores it (PostgreSQL's refuses it).
    ['U+0000', '\\u0000'],
  ])('refuses a string holding %s, naming the field, and stores nothing', async (_name, escaped) => {
    const before = await t.server.store.countPayments(org.id);
    const text = JSON.stringify({ ...sessionRequest(), description: 'x' }).replace('"x"', `"a${escaped}b"`);
    const answer = await sendText(text);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'validation_failed', param: 'description' });
    expect(Object.keys(answer.body.error.details[0].constraints)).toEqual(['unicode']);
    expect(await t.server.store.countPayments(org.id)).toBe(before);
  });

  it('accepts a surrogate pair written as escapes, and reads it back as the character it is', async () => {
    const answer = await sendText(
      JSON.stringify({ ...sessionRequest(), description: 'x' }).replace(
        '"description":"x"',
        '"description":"\\ud83d\\ude00"',
      ),
    );
    expect(answer.status).toBe(200);
    const read = await t.request('GET', `/api/checkout-sessions/${answer.body.id}`, { token: org.testToken });
    expect(read.status).toBe(200);
    const stored = await t.server.store.findPayment({ sessionId: answer.body.id });
    expect(stored!.description).toBe('\u{1F600}');
  });

  const allowed = [...'09AZaz', ' ', "'", '.', ',', '@', '_', '-'];
  it.each([
    ['A'.repeat(12), true],
    ['A'.repeat(13), false],
    ['', false],
    ...allowed.map((c) => [`REF${c}1`, true] as [string, boolean]),
    ...['#', '/', '!', 'é', '+', '&'].map((c) => [`REF${c}1`, false] as [string, boolean]),
  ])('creditorReference.reference %j: accepted=%s', async (reference, accepted) => {
    const answer = await create(withPatch((b) => (b.creditorReference.reference = reference)));
    expect(answer.status).toBe(accepted ? 200 : 400);
    if (!accepted) expect(answer.body.error.param).toBe('creditorReference.reference');
  });

  for (const field of ['particulars', 'code'] as const) {
    it.each([
      ['A'.repeat(12), true],
      ['A'.repeat(13), false],
      ['Ab-1 x', true],
      ['A_1', false],
      ['A.1', false],
      ["A'1", false],
    ])(`creditorReference.${field} %j: accepted=%s`, async (value, accepted) => {
      const answer = await create(withPatch((b) => (b.creditorReference[field] = value)));
      expect(answer.status).toBe(accepted ? 200 : 400);
      if (!accepted) expect(answer.body.error.param).toBe(`creditorReference.${field}`);
    });
  }

  it.each([
    ['x'.repeat(255), true],
    ['x'.repeat(256), false],
  ])('description of %# characters: accepted=%s', async (text, accepted) => {
    expect((await create(withPatch((b) => (b.description = text)))).status).toBe(accepted ? 200 : 400);
  });

  it.each([
    ['https://shop.example.com/done', true],
    ['http://shop.example.com/done', true],
    ['/relative', false],
    ['shop.example.com', false],
    ['https://shop.example.com:65535/done', true],
    // http(s) only: the payer's browser is sent there (x-assumption in RedirectUrl).
    ['HTTPS://shop.example.com/done', true],
    ['shopapp://checkout/done', false],
    ['javascript:alert(document.domain)', false],
    ['vbscript:msgbox(1)', false],
    ['file:///etc/passwd', false],
    ['ftp://shop.example.com/done', false],
    // RFC 3986 syntax, but no URL a browser can open (the URL Standard refuses them).
    ['https://shop.example.com:99999/done', false],
    ['https://', false],
    ['https://256.256.256.256/', false],
  ])('redirectUrl %j: accepted=%s', async (url, accepted) => {
    expect((await create(withPatch((b) => (b.redirectUrl = url)))).status).toBe(accepted ? 200 : 400);
  });

  it.each(['recurring', 'SINGLE', 1])('type %j is refused (always single)', async (type) => {
    const answer = await create(withPatch((b) => (b.type = type)));
    expect(answer.body.error).toMatchObject({ code: 'validation_failed', param: 'type' });
  });

  it.each(['type', 'amount', 'creditorReference', 'redirectUrl', 'checkoutMethod'])(
    'a missing %s is validation_failed naming it',
    async (field) => {
      const answer = await create(withPatch((b) => delete b[field]));
      expect(answer.body.error).toMatchObject({ code: 'validation_failed', param: field });
    },
  );

  it('lists every failing field at once in details, with param null', async () => {
    const answer = await create({
      type: 'single',
      amount: { total: 10000.01, currency: 'USD' },
      creditorReference: { reference: 'WAY-TOO-LONG-REF', particulars: 'bad_chars!' },
      redirectUrl: 'not a url',
      checkoutMethod: 'cash',
      description: 'x'.repeat(300),
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error.param).toBeNull();
    const fields = answer.body.error.details.map((d: any) => d.field).sort();
    expect(fields).toEqual(
      [
        'amount.currency',
        'amount.total',
        'checkoutMethod',
        'creditorReference.particulars',
        'creditorReference.reference',
        'description',
        'redirectUrl',
      ].sort(),
    );
    for (const detail of answer.body.error.details) {
      expect(Object.keys(detail.constraints).length).toBeGreaterThan(0);
      for (const text of Object.values(detail.constraints)) expect(text).toEqual(expect.any(String));
    }
    expect(answer.body.error.details.find((d: any) => d.field === 'amount.total').constraints).toHaveProperty('max');
    expect(
      answer.body.error.details.find((d: any) => d.field === 'creditorReference.reference').constraints,
    ).toHaveProperty('matches');
  });

  it('refuses a JSON body that is not UTF-8, rather than storing U+FFFD for its bytes', async () => {
    const text = JSON.stringify(sessionRequest({ foreignTransactionId: 'caf\u00e9' }));
    const latin1 = Buffer.from(text, 'latin1');
    const res = await fetch(`${t.url}/api/checkout-sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.testToken}`, 'content-type': 'application/json; charset=iso-8859-1' },
      body: latin1,
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({ code: 'validation_failed', param: null });
    expect(body.error.details).toEqual([{ field: '', constraints: { utf8: expect.any(String) } }]);
    const utf8 = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      rawBody: text,
      headers: { 'content-type': 'application/json' },
    });
    const read = await t.request('GET', `/api/checkout-sessions/${utf8.body.id}`, { token: org.testToken });
    expect(read.body.foreignTransactionId).toBe('caf\u00e9');
  });

  it('answers a body that is not JSON with validation_failed', async () => {
    const answer = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      rawBody: '{"type": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('validation_failed');
    expect(answer.body.error.details).toHaveLength(1);
  });

  // Unknown fields are ignored, but not recursed into without end: a value may lie at most
  // 32 steps below the body. `extra` is one step; the rest is nested arrays or objects.
  it.each([
    ['arrays', 32, true],
    ['arrays', 33, false],
    ['objects', 32, true],
    ['objects', 33, false],
  ])('an extra field of nested %s, %i steps deep: accepted=%s', async (kind, steps, accepted) => {
    const open = kind === 'arrays' ? '[' : '{"a":';
    const close = kind === 'arrays' ? ']' : '}';
    const extra = `${open.repeat(steps - 1)}0${close.repeat(steps - 1)}`;
    const rawBody = JSON.stringify(sessionRequest()).replace(/}$/, `,"extra":${extra}}`);
    const answer = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      rawBody,
      headers: { 'content-type': 'application/json' },
    });
    if (accepted) {
      expect(answer.status, answer.text).toBe(200);
    } else {
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 'validation_failed' });
      expect(answer.body.error.details).toEqual([
        expect.objectContaining({ constraints: { maxDepth: expect.any(String) } }),
      ]);
    }
  });

  it('refuses a body over 1 MiB with validation_failed, not a crash', async () => {
    const answer = await create(withPatch((b) => (b.description = 'x'.repeat(1_100_000))));
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('validation_failed');
  });
});

describe('webhookUrl targets', () => {
  it.each([
    ['https://shop.example.com/hooks', 'test', true],
    ['https://shop.example.com/hooks', 'live', true],
    ['http://127.0.0.1:8080/hooks', 'test', true],
    ['http://localhost:8080/hooks', 'test', true],
    ['http://127.0.0.1:8080/hooks', 'live', false],
    ['http://shop.example.com/hooks', 'test', false],
    ['https://127.0.0.1/hooks', 'live', false],
    ['https://10.0.0.8/hooks', 'live', false],
    ['https://192.168.1.20/hooks', 'live', false],
    ['https://169.254.169.254/latest/meta-data', 'live', false],
    ['https://[::1]/hooks', 'live', false],
    ['https://[fe80::1]/hooks', 'live', false],
    // Test mode admits loopback, never another non-public address.
    ['https://127.0.0.1/hooks', 'test', true],
    ['https://10.0.0.8/hooks', 'test', false],
    ['https://169.254.169.254/latest/meta-data', 'test', false],
    ['https://[fd00::1]/hooks', 'test', false],
    // Names under localhost are loopback (RFC 6761); an IPv4-mapped loopback address too.
    ['https://shop.localhost/hooks', 'live', false],
    ['https://[::ffff:127.0.0.1]/hooks', 'test', true],
    // Every special-purpose range is refused, whatever address it embeds: mapped,
    // translated (RFC 6145), NAT64, 6to4, Teredo, documentation, benchmarking, ...
    ['https://[::ffff:10.0.0.8]/hooks', 'live', false],
    ['https://[::ffff:0:a9fe:a9fe]/hooks', 'live', false],
    ['https://[64:ff9b::169.254.169.254]/hooks', 'test', false],
    ['https://[64:ff9b::93.184.216.34]/hooks', 'live', false],
    ['https://[64:ff9b:1::1]/hooks', 'live', false],
    // IPv4-compatible (::/96, deprecated): not the IPv4 address, nor loopback, in any mode.
    ['https://[::127.0.0.1]/hooks', 'live', false],
    ['https://[::127.0.0.1]/hooks', 'test', false],
    ['https://[::93.184.216.34]/hooks', 'live', false],
    ['https://[2002:a9fe:a9fe::1]/hooks', 'live', false],
    ['https://[2001::1]/hooks', 'live', false],
    ['https://[2001:db8::1]/hooks', 'live', false],
    ['https://[3fff::1]/hooks', 'live', false],
    ['https://[100::1]/hooks', 'live', false],
    ['https://[ff02::1]/hooks', 'live', false],
    ['https://192.0.2.10/hooks', 'live', false],
    ['https://198.51.100.7/hooks', 'live', false],
    ['https://203.0.113.9/hooks', 'live', false],
    ['https://198.18.0.1/hooks', 'live', false],
    ['https://100.64.0.1/hooks', 'live', false],
    ['https://192.0.0.8/hooks', 'live', false],
    ['https://240.0.0.1/hooks', 'live', false],
    ['https://255.255.255.255/hooks', 'live', false],
    ['https://224.0.0.1/hooks', 'live', false],
    ['https://0.0.0.0/hooks', 'live', false],
    ['https://93.184.216.34/hooks', 'live', true],
    ['https://[2606:4700::1111]/hooks', 'live', true],
    // http(s) only.
    ['ftp://shop.example.com/hooks', 'test', false],
    ['file:///etc/passwd', 'test', false],
    ['javascript:alert(1)', 'test', false],
  ])('%s with a %s key: accepted=%s', async (url, mode, accepted) => {
    const answer = await create(sessionRequest({ webhookUrl: url }), mode === 'test' ? org.testToken : org.liveToken);
    expect(answer.status).toBe(accepted ? 200 : 400);
    if (!accepted) expect(answer.body.error).toMatchObject({ code: 'validation_failed', param: 'webhookUrl' });
  });

  it("lists a refused target with the schema's failures, all at once", async () => {
    const body = withPatch((b) => {
      b.amount.total = 0;
      b.webhookUrl = 'https://10.0.0.8/hooks';
    });
    const answer = await create(body, org.liveToken);
    expect(answer.body.error).toMatchObject({ code: 'validation_failed', param: null });
    expect(answer.body.error.details.map((d: any) => d.field).sort()).toEqual(['amount.total', 'webhookUrl']);
    expect(answer.body.error.details.find((d: any) => d.field === 'webhookUrl').constraints).toHaveProperty(
      'publiclyReachable',
    );
  });
});

describe("configuration errors, in the document's order", () => {
  it.each([
    [{ cardEnabled: false }, 'card', 'card_not_enabled'],
    [{ cardEnabled: false }, 'both', 'card_not_enabled'],
    [{ openBankingApproved: false }, 'open_banking', 'open_banking_not_enabled'],
    [{ openBankingApproved: false }, 'both', 'open_banking_not_enabled'],
    [{ settlementAccount: false }, 'open_banking', 'settlement_account_missing'],
    [{ settlementAccount: false }, 'both', 'settlement_account_missing'],
    [{ settlementCurrency: 'AUD' }, 'open_banking', 'open_banking_currency_unsupported'],
    [
      { settlementCurrency: 'AUD', openBankingApproved: false, settlementAccount: false },
      'open_banking',
      'open_banking_currency_unsupported',
    ],
    [{ settlementCurrency: 'AUD', openBankingApproved: false }, 'both', 'open_banking_currency_unsupported'],
  ] as const)('%j asking for %s gives %s', async (settings, checkoutMethod, code) => {
    const own = await t.organisation(settings);
    const answer = await create(sessionRequest({ checkoutMethod }), own.testToken);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe(code);
    expect(answer.body.error.details).toBeUndefined();
  });

  it.each([
    [{ cardEnabled: false }, 'open_banking'],
    [{ openBankingApproved: false, settlementAccount: false }, 'card'],
    [{ settlementCurrency: 'AUD' }, 'card'],
  ] as const)('%j still allows %s', async (settings, checkoutMethod) => {
    const own = await t.organisation(settings);
    expect((await create(sessionRequest({ checkoutMethod }), own.testToken)).status).toBe(200);
  });

  it('gives currency_mismatch when amount.currency differs from the settlement currency, and fills it when omitted', async () => {
    const mismatch = await create(sessionRequest({ amount: { total: 10, currency: 'AUD' } }));
    expect(mismatch.body.error).toMatchObject({ code: 'currency_mismatch', param: 'amount.currency' });
    const aud = await t.organisation({ settlementCurrency: 'AUD' });
    const filled = await create(sessionRequest({ checkoutMethod: 'card', amount: { total: 10 } }), aud.testToken);
    expect(filled.body.amount).toEqual({ total: 10, currency: 'AUD' });
    const explicit = await create(
      sessionRequest({ checkoutMethod: 'card', amount: { total: 10, currency: 'AUD' } }),
      aud.testToken,
    );
    expect(explicit.status).toBe(200);
  });

  it('checks validation before configuration', async () => {
    const own = await t.organisation({ cardEnabled: false });
    const answer = await create(sessionRequest({ checkoutMethod: 'card', amount: { total: 0 } }), own.testToken);
    expect(answer.body.error.code).toBe('validation_failed');
  });
});

describe('the created and read session', () => {
  it('creates a session with the documented fields', async () => {
    const answer = await create(
      sessionRequest({
        creditorReference: { reference: 'INV-9', particulars: 'Order 9' },
        foreignTransactionId: 'order-9',
      }),
    );
    const s = answer.body;
    expect(answer.status).toBe(200);
    expect(s.id).toMatch(/^cs_/);
    expect(s.status).toBe('created');
    expect(s.url).toBe(`${t.url}/pay/${s.id}`);
    expect(s.code).toMatch(/^[a-zA-Z0-9- ]{1,12}$/);
    expect(s).toMatchObject({
      amount: { total: 25.5, currency: 'NZD' },
      checkoutMethod: 'both',
      reference: 'INV-9',
      testMode: true,
    });
    const read = await t.request('GET', `/api/checkout-sessions/${s.id}`, { token: org.testToken });
    expect(read.body).toMatchObject({
      id: s.id,
      status: 'created',
      code: s.code,
      particulars: 'Order 9',
      transactionType: 'open_banking',
      foreignTransactionId: 'order-9',
      expiresAt: s.expiresAt,
      testMode: true,
    });
    expect(Date.parse(read.body.expiresAt) - Date.parse(read.body.createdAt)).toBe(24 * 3600 * 1000);
    expect(read.body.createdAt).toBe(read.body.updatedAt);
  });

  it('gives each session distinct ids that begin with its creation time (a UUIDv7 transactionId)', async () => {
    const before = Date.now();
    // More ids than one refill of the random pool holds (256), so the refill is crossed.
    const sessions = [];
    for (let round = 0; round < 6; round++) {
      sessions.push(
        ...(await Promise.all(Array.from({ length: 50 }, async () => (await create(sessionRequest())).body))),
      );
    }
    const after = Date.now();
    const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    for (const s of sessions) {
      expect(s.transactionId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const uuidMs = parseInt(s.transactionId.replace('-', '').slice(0, 12), 16);
      const idMs = [...s.id.slice(3, 11)].reduce((n, c) => n * 62 + base62.indexOf(c), 0);
      for (const ms of [uuidMs, idMs]) {
        expect(ms).toBeGreaterThanOrEqual(before);
        expect(ms).toBeLessThanOrEqual(after);
      }
    }
    expect(new Set(sessions.map((s) => s.transactionId)).size).toBe(sessions.length);
    expect(new Set(sessions.map((s) => s.id)).size).toBe(sessions.length);
    expect(new Set(sessions.map((s) => s.transactionId.slice(15))).size, 'the random part differs too').toBe(
      sessions.length,
    );
  });

  it('keeps a given creditor code and generates one otherwise, distinct per session', async () => {
    expect((await create(sessionRequest({ creditorReference: { reference: 'R', code: 'MYCODE-1' } }))).body.code).toBe(
      'MYCODE-1',
    );
    const codes = await Promise.all([1, 2, 3].map(async () => (await create(sessionRequest())).body.code));
    expect(new Set(codes).size).toBe(3);
  });

  it('reads transactionType open_banking for a card-only session until it completes', async () => {
    const s = (await create(sessionRequest({ checkoutMethod: 'card' }))).body;
    expect(
      (await t.request('GET', `/api/checkout-sessions/${s.id}`, { token: org.testToken })).body.transactionType,
    ).toBe('open_banking');
  });

  it('reads an empty particulars and a null foreignTransactionId when none were given', async () => {
    const s = (await create(sessionRequest())).body;
    const read = await t.request('GET', `/api/checkout-sessions/${s.id}`, { token: org.testToken });
    expect(read.body).toMatchObject({ particulars: '', foreignTransactionId: null });
  });

  it('reads expired once 24 hours pass on the organisation clock, not before', async () => {
    const own = await t.organisation();
    const s = (await create(sessionRequest(), own.testToken)).body;
    await t.advanceClock(own.id, 24 * 3600 - 10);
    const fresh = await t.token(own.apiKeys.test.clientId, own.apiKeys.test.clientSecret);
    expect((await t.request('GET', `/api/checkout-sessions/${s.id}`, { token: fresh })).body.status).toBe('created');
    await t.advanceClock(own.id, 10);
    expect((await t.request('GET', `/api/checkout-sessions/${s.id}`, { token: fresh })).body.status).toBe('expired');
  });

  it("answers 404 not_found for an unknown id and for another organisation's session, never 403", async () => {
    const other = await t.organisation();
    const theirs = (await create(sessionRequest(), other.testToken)).body;
    for (const id of [theirs.id, 'cs_unknown', 'unknown']) {
      const answer = await t.request('GET', `/api/checkout-sessions/${id}`, { token: org.testToken });
      expect(answer.status).toBe(404);
      expect(answer.body.error).toMatchObject({ code: 'not_found', param: null });
    }
    expect((await t.request('GET', `/api/checkout-sessions/${theirs.id}`, { token: other.testToken })).status).toBe(
      200,
    );
  });

  it('lets either key of the organisation read a session, so a receiver can check testMode', async () => {
    const s = (await create(sessionRequest(), org.testToken)).body;
    const read = await t.request('GET', `/api/checkout-sessions/${s.id}`, { token: org.liveToken });
    expect(read.body.testMode).toBe(true);
  });

  it('answers 404 on the retired GET /api/transaction/{id} for a session, by cs_ id and by transaction id', async () => {
    const s = (await create(sessionRequest())).body;
    for (const id of [s.id, s.transactionId]) {
      const answer = await t.request('GET', `/api/transaction/${id}`, { token: org.testToken });
      expect(answer.status).toBe(404);
      expect(answer.body.error.code).toBe('not_found');
    }
  });
});

/**
 * Length limits on the merchant strings the service document leaves open (modelled in the
 * description, x-assumption): foreignTransactionId and Idempotency-Key at most 255
 * characters, redirectUrl and webhookUrl at most 2048, on every create endpoint; the token
 * pair at most 255 each. Over HTTP against the in-process server: each accepted at its
 * limit and refused one over it, naming the field, with nothing stored.
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

const ID_MAX = 255;
const URL_MAX = 2048;

/** An https URL of exactly `length` characters. */
function urlOfLength(base: string, length: number): string {
  const url = `${base}/${'a'.repeat(length - base.length - 1)}`;
  if (url.length !== length) throw new Error(`cannot make a ${length}-character URL from ${base}`);
  return url;
}

const CREATES = [
  ['/api/checkout-sessions', sessionRequest()],
  ['/api/payment-links', (({ type: _, ...rest }) => rest)(sessionRequest())],
  ['/api/transaction', (({ type: _, ...rest }) => rest)(sessionRequest())],
] as const;

const FIELDS = [
  ['foreignTransactionId', (n: number) => 'f'.repeat(n), ID_MAX],
  ['redirectUrl', (n: number) => urlOfLength('https://shop.example.com', n), URL_MAX],
  ['webhookUrl', (n: number) => urlOfLength('https://shop.example.com', n), URL_MAX],
] as const;

describe.each(CREATES)('POST %s', (path, base) => {
  const send = (body: unknown, headers: Record<string, string> = {}) =>
    t.request('POST', path, { token: org.testToken, body, headers });

  it.each(FIELDS)('accepts %s at its limit and refuses it one over, naming it', async (field, make, max) => {
    const before = await t.server.store.countPayments(org.id);
    const atLimit = await send({ ...base, [field]: make(max) });
    expect(atLimit.status, atLimit.text).toBe(200);

    const over = await send({ ...base, [field]: make(max + 1) });
    expect(over.status).toBe(400);
    expect(over.body.error).toMatchObject({ code: 'validation_failed', param: field });
    expect(over.body.error.details).toEqual([
      { field, constraints: { maxLength: `${field} must be at most ${max} characters` } },
    ]);
    expect(await t.server.store.countPayments(org.id)).toBe(before + 1);
  });

  it('accepts an Idempotency-Key at 255 characters and refuses 256, naming the header', async () => {
    const key = `${path}-`.padEnd(ID_MAX, 'k');
    const atLimit = await send(base, { 'idempotency-key': key });
    expect(atLimit.status, atLimit.text).toBe(200);
    // The key was remembered as sent: a retry replays.
    const replay = await send(base, { 'idempotency-key': key });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(atLimit.body);

    const before = await t.server.store.countPayments(org.id);
    const over = await send(base, { 'idempotency-key': `${key}k` });
    expect(over.status).toBe(400);
    expect(over.body.error).toMatchObject({ code: 'validation_failed', param: 'Idempotency-Key' });
    expect(over.body.error.details[0].constraints).toHaveProperty('maxLength');
    expect(await t.server.store.countPayments(org.id)).toBe(before);
  });
});

// The sizes, as far as the 1 MiB body limit lets them share one body.
it('lists every field over its limit at once, with param null', async () => {
  const answer = await t.request('POST', '/api/checkout-sessions', {
    token: org.testToken,
    body: sessionRequest({
      foreignTransactionId: 'f'.repeat(800 * 1024),
      redirectUrl: urlOfLength('https://shop.example.com', 100 * 1024),
      webhookUrl: urlOfLength('https://shop.example.com', 100 * 1024),
    }),
    headers: { 'idempotency-key': 'k'.repeat(10 * 1024) },
  });
  expect(answer.status).toBe(400);
  expect(answer.body.error).toMatchObject({ code: 'validation_failed', param: null });
  expect(answer.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
    'Idempotency-Key',
    'foreignTransactionId',
    'redirectUrl',
    'webhookUrl',
  ]);
  // The answer names the limits, not the values.
  expect(answer.text.length).toBeLessThan(4096);
});

it('sends the payer to a redirectUrl at its limit with the ids appended, a bounded Location', async () => {
  const redirectUrl = urlOfLength('https://shop.example.com', URL_MAX);
  const session = await t.request('POST', '/api/checkout-sessions', {
    token: org.testToken,
    body: sessionRequest({ redirectUrl }),
  });
  expect(session.status).toBe(200);
  const res = await fetch(`${t.url}/pay/${session.body.id}/attempts`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'rail=card&outcome=succeeded',
    redirect: 'manual',
  });
  expect(res.status).toBe(303);
  const location = res.headers.get('location')!;
  expect(location.startsWith(`${redirectUrl}?transactionId=`)).toBe(true);
  expect(location.endsWith(`&checkoutSessionId=${session.body.id}`)).toBe(true);
  expect(location.length).toBeLessThan(URL_MAX + 128);
});

describe('POST /api/token', () => {
  const token = (clientId: string, clientSecret: string) =>
    t.request('POST', '/api/token', { form: { clientId, clientSecret } });

  it.each(['clientId', 'clientSecret'] as const)(
    'checks a %s of 255 characters and refuses 256 as malformed (400, plain string)',
    async (field) => {
      const pair = { clientId: org.apiKeys.test.clientId, clientSecret: 'wrong' };
      const atLimit = await token(
        field === 'clientId' ? 'c'.repeat(ID_MAX) : pair.clientId,
        field === 'clientSecret' ? 's'.repeat(ID_MAX) : pair.clientSecret,
      );
      expect(atLimit.status).toBe(401);
      expect(atLimit.body).toEqual({ error: 'Invalid credentials' });

      const over = await token(
        field === 'clientId' ? 'c'.repeat(ID_MAX + 1) : pair.clientId,
        field === 'clientSecret' ? 's'.repeat(ID_MAX + 1) : pair.clientSecret,
      );
      expect(over.status).toBe(400);
      expect(over.body).toEqual({ error: 'Invalid credentials - missing or malformed clientId/clientSecret' });
    },
  );

  it('still issues a token for a valid pair', async () => {
    const answer = await token(org.apiKeys.test.clientId, org.apiKeys.test.clientSecret);
    expect(answer.status).toBe(200);
  });
});

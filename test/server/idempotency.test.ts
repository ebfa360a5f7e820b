/**
 * Idempotent creates (service document: POST /api/checkout-sessions, Idempotency rules),
 * over HTTP against the in-process reference server.
 *
 * @tags postgres
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  requestWithHeaderLines,
  sessionRequest,
  startTestServer,
  type Org,
  type TestServer,
} from '../support/server.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

const create = (org: Org, body: unknown, key?: string, token = org.testToken) =>
  t.request('POST', '/api/checkout-sessions', { token, body, headers: key ? { 'idempotency-key': key } : {} });

async function sessionCount(org: Org): Promise<number> {
  return t.server.store.countPayments(org.id);
}

describe('Idempotency-Key', () => {
  it('replays the original status and body for the same key and the same body', async () => {
    const org = await t.organisation();
    const first = await create(org, sessionRequest(), 'key-1');
    const second = await create(org, sessionRequest(), 'key-1');
    expect(second.status).toBe(first.status);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await sessionCount(org)).toBe(1);
  });

  it('treats the same JSON value as the same body, whatever the key order and whitespace', async () => {
    const org = await t.organisation();
    const first = await create(org, sessionRequest(), 'key-order');
    const reordered = JSON.stringify(
      {
        checkoutMethod: 'both',
        redirectUrl: 'https://shop.example.com/done?order=1001',
        creditorReference: { reference: 'INV-1001' },
        amount: { total: 25.5 },
        type: 'single',
      },
      null,
      3,
    );
    const second = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      rawBody: reordered,
      headers: { 'content-type': 'application/json', 'idempotency-key': 'key-order' },
    });
    expect(second.body).toEqual(first.body);
    expect(await sessionCount(org)).toBe(1);
  });

  it('answers idempotency_error for the same key with a different body', async () => {
    const org = await t.organisation();
    await create(org, sessionRequest(), 'key-2');
    const answer = await create(org, sessionRequest({ amount: { total: 99 } }), 'key-2');
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('idempotency_error');
    expect(await sessionCount(org)).toBe(1);
  });

  it('remembers a key for 24 hours on the organisation clock, then forgets it', async () => {
    const org = await t.organisation();
    const first = await create(org, sessionRequest(), 'key-3');
    await t.advanceClock(org.id, 24 * 3600 - 60);
    const token = await t.token(org.apiKeys.test.clientId, org.apiKeys.test.clientSecret);
    expect((await create(org, sessionRequest(), 'key-3', token)).body.id).toBe(first.body.id);
    expect((await create(org, sessionRequest({ amount: { total: 1 } }), 'key-3', token)).body.error.code).toBe(
      'idempotency_error',
    );
    await t.advanceClock(org.id, 60);
    const after = await create(org, sessionRequest({ amount: { total: 1 } }), 'key-3', token);
    expect(after.status).toBe(200);
    expect(after.body.id).not.toBe(first.body.id);
  });

  it('scopes keys to the organisation and to the mode', async () => {
    const a = await t.organisation();
    const b = await t.organisation();
    const inA = await create(a, sessionRequest(), 'shared-key');
    const inB = await create(b, sessionRequest({ amount: { total: 3 } }), 'shared-key');
    const live = await create(a, sessionRequest({ amount: { total: 4 } }), 'shared-key', a.liveToken);
    expect(inB.status).toBe(200);
    expect(live.status).toBe(200);
    expect(new Set([inA.body.id, inB.body.id, live.body.id]).size).toBe(3);
  });

  it('creates exactly one session for 50 concurrent creates with one key, and all get the same answer', async () => {
    const org = await t.organisation();
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => create(org, sessionRequest(), 'concurrent-key')),
    );
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([200]));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(await sessionCount(org)).toBe(1);
  });

  it('gives idempotency_error to concurrent creates with one key and a different body', async () => {
    const org = await t.organisation();
    const bodies = [sessionRequest(), ...Array.from({ length: 5 }, () => sessionRequest({ amount: { total: 7 } }))];
    const answers = await Promise.all(bodies.map((body) => create(org, body, 'race-key')));
    // Sent at once, either body may reach the service first and become the key's: the creates
    // with that body get its one session (replayed), the others idempotency_error.
    const first = answers.findIndex((a) => a.status === 200);
    expect(first).toBeGreaterThanOrEqual(0);
    const kept = JSON.stringify(bodies[first]);
    answers.forEach((answer, i) => {
      if (JSON.stringify(bodies[i]) === kept) expect([answer.status, answer.text]).toEqual([200, answers[first]!.text]);
      else expect([answer.status, answer.body.error.code]).toEqual([400, 'idempotency_error']);
    });
    expect(await sessionCount(org)).toBe(1);
  });

  it('does not remember a 4xx: after the fix, the same key creates the payment', async () => {
    const org = await t.organisation({ cardEnabled: false });
    const refused = await create(org, sessionRequest({ checkoutMethod: 'card' }), 'fix-key');
    expect(refused.body.error.code).toBe('card_not_enabled');
    const fixed = await create(org, sessionRequest({ checkoutMethod: 'open_banking' }), 'fix-key');
    expect(fixed.status).toBe(200);
  });

  it('completes the original request on a retry after a 500 that followed the commit', async () => {
    const org = await t.organisation();
    await t.sandbox('POST', '/sandbox/faults', { kind: 'internal_error_after_commit', orgId: org.id });
    const failed = await create(org, sessionRequest(), 'retry-key');
    expect(failed.status).toBe(500);
    expect(failed.body.error.code).toBe('internal_error');
    expect(await sessionCount(org)).toBe(1);
    const retried = await create(org, sessionRequest(), 'retry-key');
    expect(retried.status).toBe(200);
    const read = await t.request('GET', `/api/checkout-sessions/${retried.body.id}`, { token: org.testToken });
    expect(read.status).toBe(200);
    expect(await sessionCount(org)).toBe(1);
  });

  it('without a key, a retry after such a 500 creates a second payment (the ambiguity the document warns of)', async () => {
    const org = await t.organisation();
    await t.sandbox('POST', '/sandbox/faults', { kind: 'internal_error_after_commit', orgId: org.id });
    expect((await create(org, sessionRequest())).status).toBe(500);
    expect((await create(org, sessionRequest())).status).toBe(200);
    expect(await sessionCount(org)).toBe(2);
  });

  it('arms the fault for the given number of creates only', async () => {
    const org = await t.organisation();
    await t.sandbox('POST', '/sandbox/faults', { kind: 'internal_error_after_commit', orgId: org.id, times: 2 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await create(org, sessionRequest())).status);
    expect(statuses).toEqual([500, 500, 200]);
  });

  it('answers idempotency_error for a key reused on another create endpoint, both ways', async () => {
    const org = await t.organisation();
    const link = await t.request('POST', '/api/payment-links', {
      token: org.testToken,
      body: sessionRequest(),
      headers: { 'idempotency-key': 'key-across' },
    });
    expect(link.status).toBe(200);
    const session = await create(org, sessionRequest(), 'key-across');
    expect(session.status).toBe(400);
    expect(session.body.error.code).toBe('idempotency_error');
    await create(org, sessionRequest(), 'key-across-2');
    const legacy = await t.request('POST', '/api/transaction', {
      token: org.testToken,
      body: sessionRequest(),
      headers: { 'idempotency-key': 'key-across-2' },
    });
    expect(legacy.body.error.code).toBe('idempotency_error');
    expect(await sessionCount(org)).toBe(2);
    // The same endpoint still replays.
    const again = await t.request('POST', '/api/payment-links', {
      token: org.testToken,
      body: sessionRequest(),
      headers: { 'idempotency-key': 'key-across' },
    });
    expect(again.body).toEqual(link.body);
  });

  it('refuses a repeated Idempotency-Key header (Node would join the two into one key)', async () => {
    const org = await t.organisation();
    const lines = [
      'authorization',
      `Bearer ${org.testToken}`,
      'content-type',
      'application/json',
      'idempotency-key',
      'key-a',
      'idempotency-key',
      'key-b',
    ];
    const answer = await requestWithHeaderLines(
      t.url,
      'POST',
      '/api/checkout-sessions',
      lines,
      JSON.stringify(sessionRequest()),
    );
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text).error).toMatchObject({ code: 'validation_failed', param: 'Idempotency-Key' });
    expect(await sessionCount(org)).toBe(0);
    // One header whose value holds ", " is one key.
    expect((await create(org, sessionRequest(), 'key-a, key-b')).status).toBe(200);
  });

  it('refuses an empty Idempotency-Key', async () => {
    const org = await t.organisation();
    const answer = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      body: sessionRequest(),
      headers: { 'idempotency-key': '' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'validation_failed', param: 'Idempotency-Key' });
  });
});

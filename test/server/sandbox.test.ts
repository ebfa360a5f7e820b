/**
 * The sandbox API (openapi/sandbox.yaml): provisioning, clock, secrets, faults, auth.
 *
 * @tags postgres
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TOKEN, sessionRequest, startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

describe('sandbox API', () => {
  it('refuses a missing or wrong sandbox token with 401 unauthorized in the envelope', async () => {
    for (const token of [undefined, 'wrong', `${SANDBOX_TOKEN}x`]) {
      const answer = await t.request('POST', '/sandbox/organisations', {
        token,
        body: { settlementCurrency: 'NZD', cardEnabled: true, openBankingApproved: true, settlementAccount: true },
      });
      expect(answer.status).toBe(401);
      expect(answer.body.error.code).toBe('unauthorized');
    }
  });

  it('creates an organisation with a whsec_ secret and test and live key pairs', async () => {
    const org = await t.sandbox('POST', '/sandbox/organisations', {
      name: 'Shop',
      settlementCurrency: 'AUD',
      cardEnabled: true,
      openBankingApproved: false,
      settlementAccount: false,
    });
    expect(org.webhookSigningSecret).toMatch(/^whsec_/);
    expect(org.apiKeys.test.clientId).not.toBe(org.apiKeys.live.clientId);
    expect(await t.token(org.apiKeys.live.clientId, org.apiKeys.live.clientSecret)).toEqual(expect.any(String));
  });

  it('validates the organisation body', async () => {
    const answer = await t.request('POST', '/sandbox/organisations', {
      token: SANDBOX_TOKEN,
      body: { settlementCurrency: 'USD' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('validation_failed');
    expect(answer.body.error.details.length).toBeGreaterThanOrEqual(4);
  });

  it('adds API keys for a mode, and 404s for an unknown organisation', async () => {
    const org = await t.organisation();
    const key = await t.sandbox('POST', `/sandbox/organisations/${org.id}/api-keys`, { mode: 'live' });
    const token = await t.token(key.clientId, key.clientSecret);
    const created = await t.request('POST', '/api/checkout-sessions', { token, body: sessionRequest() });
    expect(created.body.testMode).toBe(false);
    const unknown = await t.request('POST', '/sandbox/organisations/org_nope/api-keys', {
      token: SANDBOX_TOKEN,
      body: { mode: 'test' },
    });
    expect(unknown.status).toBe(404);
  });

  it('deletes an API key once; a second delete is 404', async () => {
    const org = await t.organisation();
    expect(await t.sandbox('DELETE', `/sandbox/api-keys/${org.apiKeys.live.clientId}`)).toEqual({ deleted: true });
    expect(
      (await t.request('DELETE', `/sandbox/api-keys/${org.apiKeys.live.clientId}`, { token: SANDBOX_TOKEN })).status,
    ).toBe(404);
  });

  it('rotates the webhook secret', async () => {
    const org = await t.organisation();
    const { webhookSigningSecret } = await t.sandbox('POST', `/sandbox/organisations/${org.id}/webhook-secret`);
    expect(webhookSigningSecret).toMatch(/^whsec_/);
    expect(webhookSigningSecret).not.toBe(org.webhookSigningSecret);
  });

  it('moves an organisation clock forward only, and reads it with 0', async () => {
    const org = await t.organisation();
    const before = Date.parse(
      (await t.sandbox('POST', `/sandbox/organisations/${org.id}/clock`, { advanceSeconds: 0 })).now,
    );
    const after = Date.parse(
      (await t.sandbox('POST', `/sandbox/organisations/${org.id}/clock`, { advanceSeconds: 3600 })).now,
    );
    expect(after - before).toBeGreaterThanOrEqual(3600 * 1000);
    expect(after - before).toBeLessThan(3600 * 1000 + 5000);
    const back = await t.request('POST', `/sandbox/organisations/${org.id}/clock`, {
      token: SANDBOX_TOKEN,
      body: { advanceSeconds: -1 },
    });
    expect(back.status).toBe(400);
  });

  it('refuses a fault for an unknown organisation with 404', async () => {
    const answer = await t.request('POST', '/sandbox/faults', {
      token: SANDBOX_TOKEN,
      body: { kind: 'internal_error_after_commit', orgId: 'org_nope' },
    });
    expect(answer.status).toBe(404);
  });

  it('is off, and answers 404 not_found, when the server runs without it', async () => {
    const off = await startTestServer({ sandboxToken: false });
    try {
      const answer = await off.request('POST', '/sandbox/organisations', {
        token: SANDBOX_TOKEN,
        body: {},
        undocumented: true,
      });
      expect(answer.status).toBe(404);
      expect(answer.body.error.code).toBe('not_found');
    } finally {
      await off.close();
    }
  });
});

/**
 * Two servers on one PostgreSQL database answer from the database, never from a copy of
 * their own: what is changed through one (an organisation's clock, a deleted API key, a
 * rotated signing secret, a payment's state, an armed fault) is what the other answers
 * with at once. Each case through the public API and the sandbox API of two in-process
 * servers. Skipped, with the other PostgreSQL tests, where none answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../client/webhooks.ts';
import { type FreshDatabase, freshDatabase, postgresAvailable } from '../support/postgres.ts';
import { startReceiver } from '../support/receiver.ts';
import { type Org, sessionRequest, startTestServer, type TestServer } from '../support/server.ts';

describe.skipIf(!postgresAvailable())('two servers on one PostgreSQL database', () => {
  let db: FreshDatabase;
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    db = await freshDatabase();
    [a, b] = await Promise.all([startTestServer({ db: db.url }), startTestServer({ db: db.url })]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await db?.drop();
  });

  const read = (server: TestServer, token: string, id = 'cs_unknown') =>
    server.request('GET', `/api/checkout-sessions/${id}`, { token });

  it("expires a token at the other server once one moves the organisation's clock", async () => {
    const org = await a.organisation();
    expect((await read(b, org.testToken)).status).toBe(404);
    await a.advanceClock(org.id, 301);
    const answer = await read(b, org.testToken);
    expect(answer.status).toBe(401);
    expect(answer.body.error.code).toBe('token_expired');
  });

  it('refuses a deleted API key at the other server, its tokens and new token requests alike', async () => {
    const org = await a.organisation();
    const { clientId, clientSecret } = org.apiKeys.test;
    // The other server has accepted the pair, and read the key, before the deletion.
    expect(await b.token(clientId, clientSecret)).toBeTruthy();
    await a.sandbox('DELETE', `/sandbox/api-keys/${clientId}`);
    const answer = await read(b, org.testToken);
    expect(answer.body.error.code).toBe('unknown_api_key');
    const again = await b.request('POST', '/api/token', { form: { clientId, clientSecret } });
    expect(again.status).toBe(401);
  });

  it('signs at the other server with a secret rotated through one', async () => {
    const receiver = await startReceiver();
    try {
      const org: Org = await a.organisation();
      const { webhookSigningSecret } = await a.sandbox('POST', `/sandbox/organisations/${org.id}/webhook-secret`);
      const body = sessionRequest({ webhookUrl: `${receiver.url}/rotated` });
      const session = (await b.request('POST', '/api/checkout-sessions', { token: org.testToken, body })).body;
      await b.sandbox('POST', `/sandbox/checkout-sessions/${session.id}/attempts`, {
        rail: 'open_banking',
        outcome: 'succeeded',
      });
      const [delivery] = await receiver.waitFor('/rotated', 1);
      const header = delivery!.headers['service-signature'] as string;
      expect(verifyWebhook(delivery!.raw, header, webhookSigningSecret)).toMatchObject({
        kind: 'event',
        event: { checkoutSessionId: session.id },
      });
      expect(() => verifyWebhook(delivery!.raw, header, org.webhookSigningSecret)).toThrow(/No v1 signature matches/);
    } finally {
      await receiver.close();
    }
  });

  it('reads at the other server what a payment became through one', async () => {
    const org = await a.organisation();
    const session = (
      await a.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() })
    ).body;
    expect((await read(b, org.testToken, session.id)).body.status).toBe('created');
    await a.sandbox('POST', `/sandbox/checkout-sessions/${session.id}/attempts`, {
      rail: 'card',
      outcome: 'succeeded',
    });
    expect((await read(b, org.testToken, session.id)).body.status).toBe('completed');
  });

  it('fires a fault armed through one server at the other, once', async () => {
    const org = await a.organisation();
    await a.sandbox('POST', '/sandbox/faults', { kind: 'internal_error_after_commit', orgId: org.id, times: 1 });
    const failed = await b.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() });
    expect(failed.status).toBe(500);
    expect(failed.body.error.code).toBe('internal_error');
    const next = await a.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() });
    expect(next.status).toBe(200);
    // Committed before the 500, as a crash after commit would leave it.
    expect(await b.server.store.countPayments(org.id)).toBe(2);
  });
});

/**
 * A server on PostgreSQL while its database cannot be reached: every request that needs
 * the database is answered at once with the documented 500 (never a hang or a crash),
 * /healthz says 503, and once the database is back the server carries on by itself. The
 * database is cut off by a TCP relay between them (test/support/postgres.ts). Skipped, with the other PostgreSQL
 * tests, where none answers.
 *
 * @tags slow
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FreshDatabase, freshDatabase, postgresAvailable, relay } from '../support/postgres.ts';
import { type Org, sessionRequest, startTestServer, type TestServer } from '../support/server.ts';
import { until } from '../support/pace.ts';

describe.skipIf(!postgresAvailable())('a server whose PostgreSQL database goes away and comes back', () => {
  let db: FreshDatabase;
  let link: Awaited<ReturnType<typeof relay>>;
  let t: TestServer;
  let org: Org;
  beforeAll(async () => {
    db = await freshDatabase();
    const url = new URL(db.url);
    link = await relay(new URL(db.url));
    url.host = `127.0.0.1:${link.port}`;
    t = await startTestServer({ db: url.toString(), webhookPollIntervalMs: 20 });
    org = await t.organisation();
  });
  afterAll(async () => {
    await t?.close();
    await link?.close();
    await db?.drop();
  });

  const health = async () => {
    const res = await fetch(`${t.url}/healthz`);
    const body = await res.text();
    // Anyone may ask: the database's address and the driver's error stay in the log.
    if (res.status === 503) expect(JSON.parse(body)).toEqual({ ok: false, problem: 'the database cannot be written' });
    return res.status;
  };

  it('answers 500 internal_error while it is away, 503 on /healthz, and carries on once it is back', async () => {
    const before = await t.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() });
    expect(before.status).toBe(200);

    await link.down();
    const read = await t.request('GET', `/api/checkout-sessions/${before.body.id}`, { token: org.testToken });
    expect(read.status).toBe(500);
    expect(read.body.error.code).toBe('internal_error');
    const create = await t.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() });
    expect(create.status).toBe(500);
    const token = await t.request('POST', '/api/token', {
      form: { clientId: org.apiKeys.live.clientId, clientSecret: org.apiKeys.live.clientSecret },
    });
    expect(token.status).toBe(500);
    expect(token.body).toEqual({ error: 'internal_error' });
    expect(await until(health, (status) => status === 503)).toBe(503);
    // Still there: the process did not end when its pooled connections broke.
    expect((await fetch(`${t.url}/`)).status).toBe(200);

    await link.up();
    const again = await until(
      () =>
        t.request('GET', `/api/checkout-sessions/${before.body.id}`, {
          token: org.testToken,
          undocumented: true,
        }),
      (read) => read.status === 200,
    );
    expect(again.status).toBe(200);
    expect(
      (await t.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() })).status,
    ).toBe(200);
    expect(await until(health, (status) => status === 200)).toBe(200);
  });
});

/**
 * POST /api/token under abuse (the 429 of the description, auth/credentials.ts): a flood
 * of bad pairs is refused at once past a short queue instead of making every check wait,
 * failed attempts are limited per client id, and a pair the server has accepted keeps
 * getting its token throughout, whatever the flood targets. Unknown ids and wrong secrets
 * keep getting identical answers.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAILURE_LIMIT, FAILURE_WINDOW_MS } from '../../server/auth/credentials.ts';
import { type Answer, type Org, startTestServer, type TestServer } from '../support/server.ts';

const TOO_MANY = 'Too many requests - retry after the time in Retry-After';

const tokenRequest = (t: TestServer, clientId: string, clientSecret: string) =>
  t.request('POST', '/api/token', {
    rawBody: new URLSearchParams({ clientId, clientSecret }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });

const unknownId = () => `ck_test_${randomBytes(10).toString('hex')}`;
const wrongSecret = () => `sk_${randomBytes(24).toString('base64url')}`;

/** What a client can tell from an answer: status, Retry-After, body. */
const seen = (a: Answer) => ({ status: a.status, retryAfter: a.headers.get('retry-after'), body: a.body });

function expectTooMany(answer: Answer, atMostSeconds: number) {
  expect(answer.status).toBe(429);
  expect(answer.body).toEqual({ error: TOO_MANY });
  const seconds = Number(answer.headers.get('retry-after'));
  expect(Number.isInteger(seconds) && seconds >= 1 && seconds <= atMostSeconds).toBe(true);
}

describe('a flood of bad pairs', () => {
  let t: TestServer;
  let org: Org;
  beforeAll(async () => {
    t = await startTestServer();
    org = await t.organisation();
  });
  afterAll(() => t.close());

  it.each([
    ['unknown client ids', (_org: Org) => [unknownId(), wrongSecret()] as const],
    ["the valid key's own client id", (o: Org) => [o.apiKeys.test.clientId, wrongSecret()] as const],
  ])(
    'with %s: the excess is refused at once, and a valid pair gets its token while the flood goes on',
    async (_n, bad) => {
      // 50 connections keep sending bad pairs: more than the queue holds, so once one is
      // refused the queue stays full (or, on one client id, the id stays refused). A pair
      // that had to queue would then be refused too; the good one must get its token.
      let stop = false;
      let saturated!: () => void;
      const full = new Promise<void>((resolve) => {
        saturated = resolve;
      });
      const results: Answer[] = [];
      const worker = async () => {
        while (!stop) {
          const answer = await tokenRequest(t, ...bad(org));
          results.push(answer);
          if (answer.status === 429) saturated();
        }
      };
      const flood = Array.from({ length: 50 }, worker);
      await full;
      const { clientId, clientSecret } = org.apiKeys.test;
      const good = await tokenRequest(t, clientId, clientSecret);
      stop = true;
      await Promise.all(flood);

      expect(good.status).toBe(200);
      const refused = results.filter((r) => r.status === 429);
      const checked = results.filter((r) => r.status === 401);
      expect(refused.length + checked.length).toBe(results.length);
      expect(refused.length).toBeGreaterThan(0);
      for (const answer of refused) expectTooMany(answer, FAILURE_WINDOW_MS / 1000);
      for (const answer of checked) expect(answer.body).toEqual({ error: 'Invalid credentials' });
    },
  );
});

describe('failed attempts per client id', () => {
  let dir: string;
  let t: TestServer;
  let org: Org;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'token-abuse-'));
    t = await startTestServer({ db: path.join(dir, 'db.sqlite') });
    org = await t.organisation();
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`after ${FAILURE_LIMIT} failures an id is refused with 429 until its window ends, the same for an unknown id and a known one`, async () => {
    const known = org.apiKeys.live.clientId;
    const unknown = unknownId();
    const sequence = async (clientId: string) => {
      const answers: Answer[] = [];
      for (let i = 0; i <= FAILURE_LIMIT; i++) answers.push(await tokenRequest(t, clientId, wrongSecret()));
      return answers;
    };
    const [forKnown, forUnknown] = [await sequence(known), await sequence(unknown)];
    for (const answer of forKnown.slice(0, FAILURE_LIMIT)) expect(answer.status).toBe(401);
    expectTooMany(forKnown[FAILURE_LIMIT]!, FAILURE_WINDOW_MS / 1000);
    expect(forUnknown.map(seen)).toEqual(forKnown.map(seen));
    // Other ids are not affected.
    expect((await tokenRequest(t, org.apiKeys.test.clientId, wrongSecret())).status).toBe(401);
  });

  it('still gives a pair the server has accepted its token while its id is refused', async () => {
    const { clientId, clientSecret } = org.apiKeys.live;
    expectTooMany(await tokenRequest(t, clientId, wrongSecret()), FAILURE_WINDOW_MS / 1000);
    expect((await tokenRequest(t, clientId, clientSecret)).status).toBe(200);
  });

  it('refuses even the right secret of a pair it has not accepted yet (after a restart) once the id is refused', async () => {
    const file = path.join(dir, 'db.sqlite');
    await t.close();
    t = await startTestServer({ db: file });
    const { clientId, clientSecret } = org.apiKeys.test;
    for (let i = 0; i < FAILURE_LIMIT; i++) expect((await tokenRequest(t, clientId, wrongSecret())).status).toBe(401);
    expectTooMany(await tokenRequest(t, clientId, clientSecret), FAILURE_WINDOW_MS / 1000);
    // Another key of the organisation, checked afresh, is not affected.
    expect((await tokenRequest(t, org.apiKeys.live.clientId, org.apiKeys.live.clientSecret)).status).toBe(200);
  });
});

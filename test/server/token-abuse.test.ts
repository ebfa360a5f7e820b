/**
 * POST /api/token under abuse (the 429 of the description, auth/credentials.ts): a flood
 * of bad pairs is refused at once past a short queue instead of making every check wait,
 * wrong secrets are answered 429 once their client id or their source address failed too
 * often, and a source that did is slowed down; but the right secret always gets its token:
 * a pair the server has accepted at once, any other after its hash, on a server that has
 * just restarted and on each of several servers on one PostgreSQL database alike. Unknown
 * ids and wrong secrets keep getting identical answers.
 *
 * Sources are told apart by the client's address: requests sent from other loopback
 * addresses (127.0.0.x) stand for other machines.
 *
 * @tags postgres
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FAILURE_LIMIT,
  FAILURE_WINDOW_MS,
  SOURCE_FAILURE_LIMIT,
  THROTTLED_PACE_MS,
} from '../../server/auth/credentials.ts';
import { type FreshDatabase, freshDatabase, postgresAvailable } from '../support/postgres.ts';
import { type Answer, contractProblems, type Org, startTestServer, type TestServer } from '../support/server.ts';

const TOO_MANY = 'Too many requests - retry after the time in Retry-After';

const tokenRequest = (t: TestServer, clientId: string, clientSecret: string) =>
  t.request('POST', '/api/token', {
    rawBody: new URLSearchParams({ clientId, clientSecret }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });

/** POST /api/token sent from `localAddress`, its answer checked against the description. */
function tokenFrom(t: TestServer, localAddress: string, clientId: string, clientSecret: string): Promise<Answer> {
  const body = new URLSearchParams({ clientId, clientSecret }).toString();
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${t.url}/api/token`,
      { method: 'POST', localAddress, headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers))
            if (typeof value === 'string') headers.set(name, value);
          const answer: Answer = { status: res.statusCode!, headers, body: JSON.parse(text), text };
          const problems = contractProblems('POST', '/api/token', answer);
          if (problems.length > 0) reject(new Error(problems.join('\n')));
          else resolve(answer);
        });
      },
    );
    req.on('error', reject).end(body);
  });
}

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
    // Retry-After counts down the id's own window, which each sequence started a few hashes
    // apart: it may differ by the second it crossed, not by what the id is.
    const roughly = (a: Answer) => ({ ...seen(a), retryAfter: a.headers.has('retry-after') });
    expect(forUnknown.map(roughly)).toEqual(forKnown.map(roughly));
    const [known429, unknown429] = [forKnown, forUnknown].map((s) =>
      Number(s[FAILURE_LIMIT]!.headers.get('retry-after')),
    );
    expect(Math.abs(known429! - unknown429!)).toBeLessThanOrEqual(1);
    // Other ids are not affected.
    expect((await tokenRequest(t, org.apiKeys.test.clientId, wrongSecret())).status).toBe(401);
  });

  it('still gives a pair the server has accepted its token while its id is refused', async () => {
    const { clientId, clientSecret } = org.apiKeys.live;
    expectTooMany(await tokenRequest(t, clientId, wrongSecret()), FAILURE_WINDOW_MS / 1000);
    expect((await tokenRequest(t, clientId, clientSecret)).status).toBe(200);
  });

  it('gives the right secret its token after a restart, however many wrong ones its client id has just had, from anywhere', async () => {
    const file = path.join(dir, 'db.sqlite');
    await t.close();
    t = await startTestServer({ db: file });
    const { clientId, clientSecret } = org.apiKeys.test;
    // The guesses come from one address each: only the client id's count can refuse them.
    for (let i = 0; i < FAILURE_LIMIT; i++)
      expect((await tokenFrom(t, `127.0.0.${10 + i}`, clientId, wrongSecret())).status).toBe(401);
    expectTooMany(await tokenFrom(t, '127.0.0.30', clientId, wrongSecret()), FAILURE_WINDOW_MS / 1000);
    // This process has never accepted the pair: the hash decides it, not the count.
    expect((await tokenFrom(t, '127.0.0.31', clientId, clientSecret)).status).toBe(200);
    // The guessing goes on, refused; the owner, now remembered, is not, from its own address or another.
    expectTooMany(await tokenFrom(t, '127.0.0.32', clientId, wrongSecret()), FAILURE_WINDOW_MS / 1000);
    expect((await tokenRequest(t, clientId, clientSecret)).status).toBe(200);

    // Restarted again, with the guesses from the owner's own address (the case).
    await t.close();
    t = await startTestServer({ db: file });
    for (let i = 0; i < FAILURE_LIMIT; i++) expect((await tokenRequest(t, clientId, wrongSecret())).status).toBe(401);
    expectTooMany(await tokenRequest(t, clientId, wrongSecret()), FAILURE_WINDOW_MS / 1000);
    expect((await tokenRequest(t, clientId, clientSecret)).status).toBe(200);
  });
});

describe('failed attempts per source address, on a server that has accepted no pair yet', () => {
  let dir: string;
  let t: TestServer;
  let org: Org;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'token-abuse-'));
    const file = path.join(dir, 'db.sqlite');
    const first = await startTestServer({ db: file });
    org = await first.organisation();
    await first.close();
    t = await startTestServer({ db: file });
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`after ${SOURCE_FAILURE_LIMIT} failures an address is slowed to one check a second and its wrong pairs get 429; a right pair from it still gets its token`, async () => {
    const guesser = '127.0.0.2';
    // Every guess on another unknown id: no client id's count is reached, only the address's.
    for (let i = 0; i < SOURCE_FAILURE_LIMIT; i++)
      expect((await tokenFrom(t, guesser, unknownId(), wrongSecret())).status).toBe(401);
    expectTooMany(await tokenFrom(t, guesser, unknownId(), wrongSecret()), FAILURE_WINDOW_MS / 1000);
    // The address started a check less than a second ago: refused before the hash.
    const early = await tokenFrom(t, guesser, unknownId(), wrongSecret());
    expectTooMany(early, 1);
    // Other addresses are not affected.
    expect((await tokenFrom(t, '127.0.0.3', unknownId(), wrongSecret())).status).toBe(401);

    // One check at a time: of a burst, one is hashed (wrong, so the window's 429), the others are refused at once.
    await sleep(THROTTLED_PACE_MS + 100);
    const burst = await Promise.all(Array.from({ length: 5 }, () => tokenFrom(t, guesser, unknownId(), wrongSecret())));
    for (const answer of burst) expectTooMany(answer, FAILURE_WINDOW_MS / 1000);
    expect(burst.filter((a) => a.headers.get('retry-after') === '1')).toHaveLength(4);

    // An owner behind the guesser's address (one network) waits its turn, then is served:
    // the pair was never accepted by this process, so its hash is what lets it through.
    await sleep(THROTTLED_PACE_MS + 100);
    const { clientId, clientSecret } = org.apiKeys.test;
    expect((await tokenFrom(t, guesser, clientId, clientSecret)).status).toBe(200);
  });

  it("a flood from one address on a key's own client id leaves room for the owner elsewhere, whose pair this process has not accepted", async () => {
    const { clientId, clientSecret } = org.apiKeys.live;
    let stop = false;
    let flooded!: () => void;
    const full = new Promise<void>((resolve) => {
      flooded = resolve;
    });
    const results: Answer[] = [];
    let checked = 0;
    const worker = async () => {
      while (!stop) {
        const answer = await tokenFrom(t, '127.0.0.4', clientId, wrongSecret());
        results.push(answer);
        // The client id has failed FAILURE_LIMIT times: the flood is at full strength.
        if (answer.status === 401 && ++checked >= FAILURE_LIMIT) flooded();
      }
    };
    const flood = Array.from({ length: 50 }, worker);
    await full;
    const good = await tokenFrom(t, '127.0.0.5', clientId, clientSecret);
    stop = true;
    await Promise.all(flood);

    expect(good.status).toBe(200);
    expect(results.every((r) => r.status === 401 || r.status === 429)).toBe(true);
    for (const answer of results.filter((r) => r.status === 429)) expectTooMany(answer, FAILURE_WINDOW_MS / 1000);
  });
});

describe.skipIf(!postgresAvailable())('on several servers sharing a PostgreSQL database', () => {
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

  it('each server gives the right secret its token whatever its client id had there, including one that never accepted it', async () => {
    // Made through a: b has never seen the pair.
    const org = await a.organisation();
    const { clientId, clientSecret } = org.apiKeys.test;
    for (const server of [b, a]) {
      for (let i = 0; i < FAILURE_LIMIT; i++)
        expect((await tokenFrom(server, `127.0.0.${40 + i}`, clientId, wrongSecret())).status).toBe(401);
      expectTooMany(await tokenRequest(server, clientId, wrongSecret()), FAILURE_WINDOW_MS / 1000);
      expect((await tokenRequest(server, clientId, clientSecret)).status).toBe(200);
    }
    // A restarted server has forgotten all of it, and answers the same.
    await b.close();
    b = await startTestServer({ db: db.url });
    for (let i = 0; i < FAILURE_LIMIT + 2; i++) await tokenRequest(b, clientId, wrongSecret());
    expect((await tokenRequest(b, clientId, clientSecret)).status).toBe(200);
  });
});

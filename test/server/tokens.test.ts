/**
 * POST /api/token and the bearer checks (service document: Authentication, Errors),
 * over HTTP against the in-process reference server.
 *
 * @tags postgres
 */
import { scrypt } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Secrets } from '../../server/auth/secrets.ts';
import { SANDBOX_TOKEN, sessionRequest, startTestServer, type Org, type TestServer } from '../support/server.ts';

let t: TestServer;
let org: Org;

beforeAll(async () => {
  t = await startTestServer();
  org = await t.organisation();
});
afterAll(() => t.close());

const form = (fields: Record<string, string>) => ({
  rawBody: new URLSearchParams(fields).toString(),
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
});

describe('POST /api/token', () => {
  it('exchanges a form-encoded key pair for a bearer token', async () => {
    const { clientId, clientSecret } = org.apiKeys.test;
    const answer = await t.request('POST', '/api/token', form({ clientId, clientSecret }));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ tokenType: 'Bearer', expiresIn: '5m' });
    expect(answer.body.accessToken).toEqual(expect.any(String));
    expect(answer.headers.get('cache-control')).toBe('no-store');
  });

  it('refuses a JSON body with the right fields: 400 with the documented string', async () => {
    const answer = await t.request('POST', '/api/token', { body: org.apiKeys.test });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: 'Invalid credentials - missing or malformed clientId/clientSecret' });
  });

  it.each([
    ['no body', { headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
    ['clientSecret missing', form({ clientId: 'ck_test_x' })],
    ['clientId missing', form({ clientSecret: 'secret' })],
    ['empty clientId', form({ clientId: '', clientSecret: 'secret' })],
    [
      'a repeated field',
      {
        rawBody: 'clientId=a&clientId=b&clientSecret=c',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      },
    ],
    ['a text body', { rawBody: 'clientId=a&clientSecret=b', headers: { 'content-type': 'text/plain' } }],
  ])('answers 400 with the string error for %s', async (_name, options) => {
    const answer = await t.request('POST', '/api/token', options);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: 'Invalid credentials - missing or malformed clientId/clientSecret' });
  });

  it('answers an unknown client id and a wrong secret identically with 401', async () => {
    const unknown = await t.request(
      'POST',
      '/api/token',
      form({ clientId: 'ck_test_unknown', clientSecret: 'whatever' }),
    );
    const wrong = await t.request(
      'POST',
      '/api/token',
      form({ clientId: org.apiKeys.test.clientId, clientSecret: 'wrong-secret' }),
    );
    expect(unknown.status).toBe(401);
    expect(wrong.status).toBe(401);
    expect(unknown.text).toBe(wrong.text);
    expect(unknown.body).toEqual({ error: 'Invalid credentials' });
  });

  it('refuses a secret of another key', async () => {
    const other = await t.organisation();
    const answer = await t.request(
      'POST',
      '/api/token',
      form({ clientId: org.apiKeys.test.clientId, clientSecret: other.apiKeys.test.clientSecret }),
    );
    expect(answer.status).toBe(401);
  });
});

describe('stored secrets', () => {
  it('are scrypt hashes at cost 2^14 by default, each keeping its cost: a server of another cost on the database takes the keys', async () => {
    const db = path.join(mkdtempSync(path.join(tmpdir(), 'secrets-')), 'one.sqlite');
    // The test servers hash at a lower cost; one given none uses the default. One server
    // per SQLite file: they take turns.
    const tokenFor = async (server: TestServer, org: Org, secret = org.apiKeys.test.clientSecret) =>
      (await server.request('POST', '/api/token', form({ clientId: org.apiKeys.test.clientId, clientSecret: secret })))
        .status;
    const hashOf = async (server: TestServer, org: Org) =>
      (await server.server.store.getApiKey(org.apiKeys.test.clientId))?.secretHash;

    let standard = await startTestServer({ db, secretHashCost: undefined });
    const first = await standard.organisation();
    expect(await hashOf(standard, first)).toMatch(/^scrypt\$ln=14\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=$/);
    await standard.close();

    const cheap = await startTestServer({ db, secretHashCost: 8 });
    const second = await cheap.organisation();
    expect(await hashOf(cheap, second)).toMatch(/^scrypt\$ln=8\$/);
    expect([await tokenFor(cheap, first), await tokenFor(cheap, first, 'sk_wrong')]).toEqual([200, 401]);
    await cheap.close();

    standard = await startTestServer({ db, secretHashCost: undefined });
    expect([await tokenFor(standard, second), await tokenFor(standard, second, 'sk_wrong')]).toEqual([200, 401]);
    await standard.close();
  });

  it('verifies a hash written without its cost (scrypt$salt$hash) at the default cost', async () => {
    const hashWith = promisify(scrypt) as (p: string, s: Buffer, k: number, o: object) => Promise<Buffer>;
    const salt = Buffer.alloc(16, 7);
    const key = await hashWith('sk_secret', salt, 32, { N: 2 ** 14, r: 8, p: 1, maxmem: 64 * 1024 * 1024 });
    const stored = `scrypt$${salt.toString('base64')}$${key.toString('base64')}`;
    const secrets = new Secrets(hashWith, 8);
    expect(await secrets.verify('sk_secret', stored)).toBe(true);
    expect(await secrets.verify('sk_secreT', stored)).toBe(false);
    for (const broken of ['scrypt$ln=99$a$b', 'bcrypt$a$b', 'scrypt$ln=14$x$y$z', 'scrypt$$'])
      expect(await secrets.verify('sk_secret', broken), broken).toBe(false);
    expect(() => new Secrets(hashWith, 16)).toThrow(RangeError);
  });

  it('keeps a secret nobody holds (the demo organisation’s live key) in the stored form, matched by no secret, after the same work', async () => {
    let hashed = 0;
    const hashWith = (p: string, s: Buffer, k: number, o: object) => {
      hashed++;
      return (promisify(scrypt) as (p: string, s: Buffer, k: number, o: object) => Promise<Buffer>)(p, s, k, o);
    };
    const secrets = new Secrets(hashWith, 8);
    const [one, two] = [secrets.unmatchable(), secrets.unmatchable()];
    expect(hashed).toBe(0);
    expect(one).toMatch(/^scrypt\$ln=8\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=$/);
    expect(one).not.toBe(two);
    for (const secret of ['', 'sk_secret', one]) expect(await secrets.verify(secret, one)).toBe(false);
    expect(hashed).toBe(3);
  });
});

describe('bearer checks', () => {
  const read = (authorization?: string) =>
    t.request(
      'GET',
      '/api/checkout-sessions/cs_doesnotexist',
      authorization === undefined ? {} : { headers: { authorization } },
    );

  it('gives unauthorized without an Authorization header', async () => {
    const answer = await read();
    expect(answer.status).toBe(401);
    expect(answer.body.error).toMatchObject({ code: 'unauthorized', param: null });
    expect(answer.body.error.doc_url).toBe(`${t.url}/docs/errors/#unauthorized`);
  });

  it.each(['Basic abc', 'Bearer', 'Bearer ', 'Token abc', ''])(
    'gives unauthorized for a header not of the form Bearer <token>: %j',
    async (header) => {
      const answer = await read(header);
      expect(answer.status).toBe(401);
      expect(answer.body.error.code).toBe('unauthorized');
    },
  );

  /**
   * The last character of a base64url part that does not end on a byte boundary (an
   * HS256 signature: 32 bytes in 43 characters) carries unused low bits: another
   * character with the same used bits decodes to the same bytes.
   */
  const sameBytes = (part: string) => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const unused = [0, 0, 4, 2][part.length % 4]!;
    const last = alphabet.indexOf(part.at(-1)!);
    const twin = alphabet[last ^ ((1 << unused) - 1)]!;
    expect(Buffer.from(part.slice(0, -1) + twin, 'base64url')).toEqual(Buffer.from(part, 'base64url'));
    return part.slice(0, -1) + twin;
  };

  it.each([
    ['with = padding on the signature', (tok: string) => `${tok}=`],
    ['with = padding on the payload', (tok: string) => tok.replace(/\.([^.]+)\./, (_m, p: string) => `.${p}=.`)],
    [
      'with the unused bits of the signature changed',
      (tok: string) => tok.replace(/[^.]+$/, (signature) => sameBytes(signature)),
    ],
  ])('gives invalid_token for a token that decodes to the issued bytes but is written %s', async (_name, rewrite) => {
    const token = org.testToken;
    const rewritten = rewrite(token);
    expect(rewritten).not.toBe(token);
    const answer = await read(`Bearer ${rewritten}`);
    expect(answer.status).toBe(401);
    expect(answer.body.error.code).toBe('invalid_token');
    // The token as issued still works.
    expect((await read(`Bearer ${token}`)).status).toBe(404);
  });

  it('accepts a valid token (the session then is simply not found)', async () => {
    const answer = await read(`Bearer ${org.testToken}`);
    expect(answer.status).toBe(404);
  });

  it.each([
    ['truncated', (tok: string) => tok.slice(0, -5)],
    ['mangled signature', (tok: string) => `${tok.slice(0, -2)}${tok.endsWith('AA') ? 'BB' : 'AA'}`],
    ['mangled payload', (tok: string) => tok.replace(/\.(.)/, (_m, c: string) => `.${c === 'e' ? 'f' : 'e'}`)],
    ['double-prefixed', (tok: string) => `Bearer ${tok}`],
    ['not a JWT', () => 'not-a-token'],
    ['signed with another key', () => 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl'],
  ])('gives invalid_token for a %s token', async (_name, mangle) => {
    const answer = await read(`Bearer ${mangle(org.testToken)}`);
    expect(answer.status).toBe(401);
    expect(answer.body.error.code).toBe('invalid_token');
  });

  it('gives token_expired once the organisation clock passes five minutes, and a new token works', async () => {
    const own = await t.organisation();
    await t.advanceClock(own.id, 299);
    expect((await t.request('GET', '/api/checkout-sessions/cs_x', { token: own.testToken })).status).toBe(404);
    await t.advanceClock(own.id, 2);
    const expired = await t.request('GET', '/api/checkout-sessions/cs_x', { token: own.testToken });
    expect(expired.status).toBe(401);
    expect(expired.body.error.code).toBe('token_expired');
    const fresh = await t.token(own.apiKeys.test.clientId, own.apiKeys.test.clientSecret);
    expect((await t.request('GET', '/api/checkout-sessions/cs_x', { token: fresh })).status).toBe(404);
  });

  it("issues a token for exactly five minutes from the organisation's time, to the millisecond", async () => {
    const own = await t.organisation();
    const clock = async () =>
      Date.parse((await t.sandbox('POST', `/sandbox/organisations/${own.id}/clock`, { advanceSeconds: 0 })).now);
    const before = await clock();
    const token = await t.token(own.apiKeys.test.clientId, own.apiKeys.test.clientSecret);
    const after = await clock();
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
    expect(claims.iat * 1000).toBeGreaterThanOrEqual(before);
    expect(claims.iat * 1000).toBeLessThanOrEqual(after);
    expect(claims.exp - claims.iat).toBeCloseTo(300, 6);
  });

  it("does not expire a token on another organisation's clock", async () => {
    const other = await t.organisation();
    await t.advanceClock(other.id, 3600);
    expect((await t.request('GET', '/api/checkout-sessions/cs_x', { token: org.testToken })).status).toBe(404);
  });

  it('gives unknown_api_key once the key is deleted, and a new token is refused', async () => {
    const own = await t.organisation();
    await t.sandbox('DELETE', `/sandbox/api-keys/${own.apiKeys.test.clientId}`);
    const answer = await t.request('GET', '/api/checkout-sessions/cs_x', { token: own.testToken });
    expect(answer.status).toBe(401);
    expect(answer.body.error.code).toBe('unknown_api_key');
    const retry = await t.request('POST', '/api/token', form(own.apiKeys.test));
    expect(retry.status).toBe(401);
    // The organisation's other key is unaffected.
    expect((await t.request('GET', '/api/checkout-sessions/cs_x', { token: own.liveToken })).status).toBe(404);
  });

  it('prefers unknown_api_key over token_expired: a new token would not help', async () => {
    const own = await t.organisation();
    await t.advanceClock(own.id, 600);
    await t.sandbox('DELETE', `/sandbox/api-keys/${own.apiKeys.test.clientId}`);
    const answer = await t.request('GET', '/api/checkout-sessions/cs_x', { token: own.testToken });
    expect(answer.body.error.code).toBe('unknown_api_key');
  });

  it('decides test or live mode by the key', async () => {
    const body = sessionRequest();
    const test = await t.request('POST', '/api/checkout-sessions', { token: org.testToken, body });
    const live = await t.request('POST', '/api/checkout-sessions', { token: org.liveToken, body });
    expect(test.body.testMode).toBe(true);
    expect(live.body.testMode).toBe(false);
  });

  it('does not take the sandbox token as an API token', async () => {
    const answer = await read(`Bearer ${SANDBOX_TOKEN}`);
    expect(answer.body.error.code).toBe('invalid_token');
  });
});

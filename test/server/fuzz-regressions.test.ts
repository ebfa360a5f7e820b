/**
 * Server bugs the fuzzing of fuzz.test.ts found, fixed since: each asserts the correct
 * behaviour through real HTTP, and the generators of fuzz-inputs.ts draw these inputs too.
 *
 * @tags postgres
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contractProblems, sessionRequest, startTestServer, type Org, type TestServer } from '../support/server.ts';
import { errorCode } from './fuzz-judge.ts';

// -------------------------------------------------------------------------------------
// Server bugs the fuzzing found, fixed since: each asserts the correct behaviour.
// -------------------------------------------------------------------------------------

let t: TestServer;

describe('regressions of server bugs the fuzzing found', () => {
  let bugOrg: Org;
  beforeAll(async () => {
    t = await startTestServer();
    bugOrg = await t.organisation();
  });
  afterAll(async () => {
    await t?.close();
  });

  // openapi-backend's router (bath-es5) calls decodeURIComponent on path parameters and
  // the URIError escapes as a 500 internal_error, before authentication even runs. Same
  // for every path with a parameter, sandbox included (e.g. POST /sandbox/organisations/%E0/clock).
  it('a malformed percent-escape in a path parameter is answered 4xx, not 500 internal_error', async () => {
    for (const path of ['/api/checkout-sessions/%E0%A4%A', '/api/checkout-sessions/%', '/api/checkout-sessions/%zz']) {
      const answer = await t.request('GET', path, { token: bugOrg.testToken, undocumented: true });
      expect(answer.status, `GET ${path} → ${answer.status} ${answer.text}`).toBeLessThan(500);
    }
  });

  // The server parses the JSON text, and openapi-backend then JSON-parses a string body a
  // second time: a body that is a JSON *string* containing a request is accepted as if it
  // were the object, and a session is created. The description's body is an object.
  it('a body that is a JSON string (not an object) is refused with validation_failed', async () => {
    const before = await t.server.store.countPayments(bugOrg.id);
    const answer = await t.request('POST', '/api/checkout-sessions', {
      token: bugOrg.testToken,
      body: JSON.stringify(sessionRequest()),
      undocumented: true,
    });
    expect(await t.server.store.countPayments(bugOrg.id)).toBe(before);
    expect(answer.status).toBe(400);
    expect(errorCode(answer)).toBe('validation_failed');
  });

  // openapi-backend refuses query parameters the operation does not declare, so a harmless
  // `?_=1` (cache busting) on the read gets 400 validation_failed, a status the description
  // does not document for GET /api/checkout-sessions/{id} (200, 401, 404, 500).
  it('an unknown query parameter on GET /api/checkout-sessions/{id} gets a documented answer', async () => {
    const path = '/api/checkout-sessions/cs_doesnotexist?_=1';
    const answer = await t.request('GET', path, { token: bugOrg.testToken, undocumented: true });
    expect(contractProblems('GET', path, answer)).toEqual([]);
  });

  // canonicalJson (server/domain/idempotency.ts) recurses once per nesting level to
  // fingerprint the body; an ignored extra field nested ~10 000 deep (20 kB, far under the
  // 1 MiB limit) overflows the stack and the create answers 500. Without a key it is 200.
  it('a deeply nested extra field with an Idempotency-Key does not crash the create', async () => {
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const body = JSON.stringify(sessionRequest()).replace(/}$/, `,"extra":${deep}}`);
    const answer = await t.request('POST', '/api/checkout-sessions', {
      token: bugOrg.testToken,
      rawBody: body,
      headers: { 'content-type': 'application/json', 'idempotency-key': 'deeply-nested' },
      undocumented: true,
    });
    expect(answer.status, answer.text).toBeLessThan(500);
  });
});

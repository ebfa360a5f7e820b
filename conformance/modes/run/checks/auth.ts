/**
 * Bearer failures (service document: Authentication 3-6; Errors: Codes). Every endpoint
 * but the token endpoint needs `Authorization: Bearer <token>`; each failure has its own
 * 401 code: unauthorized, invalid_token, token_expired, unknown_api_key.
 */
import { expectError, expectPlainError, expectStatus } from '../assert.ts';
import { legacyTransactionBody, paymentLinkBody, sessionBody, spoilt } from '../context/api.ts';
import type { CheckContext, RunCheck } from '../context/check-context.ts';
import type { Org } from '../context/organisations.ts';
import { text } from '../../../core/json.ts';
import { CheckSkipped, SuiteTooLate } from '../../../core/outcome.ts';

const section = 'Authentication';
/** Token lifetime is five minutes (Authentication 4). */
const TOKEN_LIFETIME_S = 5 * 60;
/**
 * How old AUTH-007's token is when the clock has moved: half a minute inside its lifetime,
 * for the target's own time to answer what follows (the clock's confirmation, the read).
 */
const ALMOST_EXPIRED_S = TOKEN_LIFETIME_S - 30;

/**
 * A read of a session the organisation has: with the wrong credentials only the 401
 * applies (an unknown id would also be a 404, and the document orders neither first).
 */
async function ownSessionPath(ctx: CheckContext, org: Org): Promise<string> {
  return `/api/checkout-sessions/${encodeURIComponent((await ctx.api.session(org)).id)}`;
}

/** Both a valid create and a read of an existing session answer 401 with the code for this Authorization header. */
async function expectBearerCode(ctx: CheckContext, authorization: string | undefined, code: string, what: string) {
  const path = await ownSessionPath(ctx, await ctx.target.sharedOrganisation());
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  const read = await ctx.api.send('GET', path, { headers });
  expectError(read, 401, code, `GET /api/checkout-sessions/{id} with ${what}`);
  const create = await ctx.api.send('POST', '/api/checkout-sessions', { headers, json: sessionBody() });
  expectError(create, 401, code, `POST /api/checkout-sessions with ${what}`);
}

/** Each request, sent without Authorization, answers 401 unauthorized; the requests judged. */
async function expectUnauthorized(
  ctx: CheckContext,
  requests: Array<[method: string, path: string, body?: unknown]>,
): Promise<string[]> {
  for (const [method, path, body] of requests) {
    const exchange = await ctx.api.send(method, path, body === undefined ? {} : { json: body });
    expectError(exchange, 401, 'unauthorized', `${method} ${path} without Authorization`);
  }
  return requests.map(([method, path]) => `${method} ${path}`);
}

export const bearerChecks: RunCheck[] = [
  {
    id: 'AUTH-001',
    clauses: ['auth.bearer', 'code.unauthorized', 'order.401', 'read.errors'],
    section,
    title: 'No Authorization header gives 401 unauthorized',
    async run(ctx) {
      await expectBearerCode(ctx, undefined, 'unauthorized', 'no Authorization header');
    },
  },
  {
    id: 'AUTH-002',
    clauses: ['auth.bearer', 'code.unauthorized', 'order.401'],
    section,
    title: 'An Authorization header not of the form Bearer <token> gives 401 unauthorized',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const basic = `Basic ${Buffer.from(`${org.keys.test.clientId}:${org.keys.test.clientSecret}`).toString('base64')}`;
      await expectBearerCode(ctx, basic, 'unauthorized', 'a Basic Authorization header');
    },
  },
  {
    id: 'AUTH-003',
    clauses: ['code.invalid-token', 'order.401'],
    section,
    title: 'A truncated token gives 401 invalid_token',
    async run(ctx) {
      const token = await ctx.api.token(await ctx.target.sharedOrganisation());
      await expectBearerCode(ctx, `Bearer ${spoilt(token, 'truncated')}`, 'invalid_token', 'a truncated token');
    },
  },
  {
    id: 'AUTH-004',
    clauses: ['code.invalid-token', 'order.401'],
    section,
    title: 'A mangled token (one character changed) gives 401 invalid_token',
    async run(ctx) {
      const token = await ctx.api.token(await ctx.target.sharedOrganisation());
      await expectBearerCode(ctx, `Bearer ${spoilt(token, 'mangled')}`, 'invalid_token', 'a mangled token');
    },
  },
  {
    id: 'AUTH-005',
    clauses: ['code.invalid-token', 'order.401'],
    section,
    title: 'A double-prefixed token (Bearer Bearer <token>) gives 401 invalid_token',
    async run(ctx) {
      const token = await ctx.api.token(await ctx.target.sharedOrganisation());
      await expectBearerCode(ctx, `Bearer ${spoilt(token, 'double')}`, 'invalid_token', 'a double-prefixed token');
    },
  },
  {
    id: 'AUTH-010',
    clauses: ['auth.bearer', 'code.unauthorized', 'code.invalid-token'],
    section,
    title:
      'a valid token sent as "bearer <token>" (the scheme in lower case) is taken, or refused as unauthorized; never invalid_token, since the token is valid',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const path = await ownSessionPath(ctx, org);
      const token = await ctx.api.token(org);
      const read = await ctx.api.send('GET', path, { headers: { authorization: `bearer ${token}` } });
      // HTTP's scheme names are case-insensitive (RFC 9110 11.1); the document writes "Bearer".
      if (read.status === 200) return;
      expectError(read, 401, 'unauthorized', 'a valid token under the scheme written "bearer"');
    },
  },
  {
    id: 'AUTH-009',
    clauses: ['ep.bearer', 'code.unauthorized'],
    section,
    title:
      'every endpoint but POST /api/token, payment links and legacy transactions included, answers a request without Authorization 401 unauthorized',
    uses: ['paymentLinks'],
    async run(ctx) {
      // Requests that would succeed with a token (bodies it accepted, a link that exists),
      // so that only the missing Authorization is wrong with them.
      const org = await ctx.target.sharedOrganisation();
      const token = await ctx.api.token(org);
      const judged: string[] = [];
      const link = await ctx.api.send('POST', '/api/payment-links', { token, json: paymentLinkBody() });
      let linkId = link.status === 200 ? text(link.json, 'id') : undefined;
      if (linkId !== undefined)
        judged.push(...(await expectUnauthorized(ctx, [['POST', '/api/payment-links', paymentLinkBody()]])));
      // The reads need only a link that exists: one in the target's own shape does.
      else if (ctx.target.has('paymentLinks')) linkId = await ctx.target.paymentLink(org);
      if (linkId !== undefined) {
        const id = encodeURIComponent(linkId);
        judged.push(
          ...(await expectUnauthorized(ctx, [
            ['GET', `/api/payment-links/${id}`],
            // A payable link answers here (Legacy transaction endpoints).
            ['GET', `/api/transaction/${id}`],
          ])),
        );
      }
      const legacy = await ctx.api.send('POST', '/api/transaction', { token, json: legacyTransactionBody() });
      if (legacy.status === 200)
        judged.push(...(await expectUnauthorized(ctx, [['POST', '/api/transaction', legacyTransactionBody()]])));
      if (judged.length === 0)
        throw new CheckSkipped(
          'the target refused the modelled requests of payment links and legacy transactions (the document does not show them), so none could be sent that only a missing token spoils: an adapter offering paymentLinks makes a link to read',
          ['paymentLinks'],
        );
    },
  },
  {
    id: 'AUTH-006',
    clauses: ['auth.lifetime', 'auth.expired', 'code.token-expired', 'limit.token', 'status.401'],
    section,
    title: 'A token past its five minutes gives 401 token_expired; a new token then works',
    requires: ['createOrganisation', 'advanceClock'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const token = await ctx.api.token(org);
      const path = await ownSessionPath(ctx, org);
      await ctx.target.advanceClock(org, TOKEN_LIFETIME_S + 10);
      const read = await ctx.api.send('GET', path, { token });
      expectError(read, 401, 'token_expired', 'a token 5 min 10 s old');
      const created = await ctx.api.createSession(org, sessionBody(), { token });
      expectError(created, 401, 'token_expired', 'creating with a token 5 min 10 s old');
      const fresh = await ctx.api.token(org);
      const again = await ctx.api.send('GET', path, { token: fresh });
      expectStatus(again, 200, 'the same read with a new token');
    },
  },
  {
    id: 'AUTH-007',
    clauses: ['auth.lifetime', 'limit.token'],
    section,
    title: 'A token is still accepted 4 min 30 s after it was issued (five-minute lifetime)',
    requires: ['createOrganisation', 'advanceClock'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const path = await ownSessionPath(ctx, org);
      // A token of its own, asked for now (not the one the organisation's setup was given).
      org.tokens.clear();
      const asked = Date.now();
      const token = await ctx.api.token(org);
      // The token's age is the clock moved plus the real time since it was asked for.
      const moved = await ctx.target.advanceClock(org, ALMOST_EXPIRED_S, asked);
      const read = await ctx.api.send('GET', path, { token });
      const oldest = moved + (Date.now() - asked) / 1000;
      // A target this slow leaves the suite unable to tell a token refused early from one
      // that was five minutes old when the target judged it.
      if (read.status === 401 && oldest >= TOKEN_LIFETIME_S)
        throw new SuiteTooLate(
          `${Math.round(oldest - moved)} s passed between asking for the token and its read being answered, so the token may have been five minutes old when the target judged it.`,
        );
      expectStatus(read, 200, 'a read with a token 4 min 30 s old');
    },
  },
  {
    id: 'AUTH-008',
    clauses: ['auth.removed', 'code.unknown-api-key'],
    section,
    title: 'A token of a deleted API key gives 401 unknown_api_key, and a new token is refused',
    requires: ['createOrganisation', 'createApiKey', 'deleteApiKey'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const path = await ownSessionPath(ctx, org);
      const key = await ctx.target.createApiKey(org, 'test');
      const issued = await ctx.api.tokenRequest(key);
      expectStatus(issued, 200, 'a token for a new API key');
      const token = text(issued.json, 'accessToken');
      await ctx.target.deleteApiKey(key.clientId);
      const read = await ctx.api.send('GET', path, { token });
      expectError(read, 401, 'unknown_api_key', 'a token whose API key was deleted');
      const create = await ctx.api.createSession(org, sessionBody(), { token });
      expectError(create, 401, 'unknown_api_key', 'creating with a token whose API key was deleted');
      const again = await ctx.api.tokenRequest(key);
      expectPlainError(again, 401, 'a new token for the deleted key pair');
    },
  },
];

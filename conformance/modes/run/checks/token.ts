/**
 * The token endpoint (service document: Endpoints, POST /api/token; Authentication 1-2).
 * The body is form-encoded; failures answer `{ error: <string> }`, not the envelope;
 * an unknown client id and a wrong secret get the identical answer.
 */
import type { RunCheck } from '../context/check-context.ts';
import { expect, expectPlainError, expectStatus, fail } from '../assert.ts';
import type { Exchange } from '../../../core/exchange.ts';
import { at } from '../../../core/json.ts';
import { tellingApart, tokenResponseProblem } from '../../../rules/token.ts';

const section = 'Endpoints: POST /api/token';

/** An answer for a report: its status, the headers named (or their absence), and its body. */
function describe(exchange: Exchange, names: readonly string[]): string {
  const headers = names.map((name) => `${name}: ${exchange.headers[name] ?? '(none)'}`).join('; ');
  return `${exchange.status}${headers ? ` (${headers})` : ''} ${exchange.text}`;
}

export const tokenChecks: RunCheck[] = [
  {
    id: 'TOKEN-001',
    clauses: [
      'token.ok',
      'token.form',
      'auth.exchange',
      'auth.pair',
      'res.token.access',
      'res.token.type',
      'res.token.expires',
      'conv.request-body',
      'ver.unversioned',
    ],
    section,
    title: 'A form-encoded key pair gets 200 with accessToken, tokenType Bearer and expiresIn, and the token works',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const exchange = await ctx.api.tokenRequest(org.keys.test);
      expectStatus(exchange, 200, 'a valid form-encoded key pair');
      const problem = tokenResponseProblem(exchange.json);
      if (problem) fail(problem, exchange);
      const accessToken = String(at(exchange.json, 'accessToken'));
      const read = await ctx.api.send('GET', '/api/checkout-sessions/cs_conformance_unknown', { token: accessToken });
      expect(read.status !== 401, 'The issued token was refused with 401 on GET /api/checkout-sessions/{id}.', read);
    },
  },
  {
    id: 'TOKEN-002',
    clauses: ['token.400', 'conv.request-body', 'token.plain-error', 'err.token'],
    section,
    title: 'A JSON body is refused with 400 even when the key pair is valid',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const exchange = await ctx.api.send('POST', '/api/token', {
        json: { clientId: org.keys.test.clientId, clientSecret: org.keys.test.clientSecret },
      });
      expectPlainError(exchange, 400, 'a JSON body on POST /api/token');
    },
  },
  {
    id: 'TOKEN-003',
    clauses: ['token.400', 'token.client-id', 'token.plain-error', 'err.token'],
    section,
    title: 'A missing clientId is refused with 400 { error: string }',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const exchange = await ctx.api.send('POST', '/api/token', { form: { clientSecret: org.keys.test.clientSecret } });
      expectPlainError(exchange, 400, 'a form without clientId');
    },
  },
  {
    id: 'TOKEN-004',
    clauses: ['token.400', 'token.client-secret', 'token.plain-error', 'err.token'],
    section,
    title: 'A missing clientSecret (and an empty body) is refused with 400 { error: string }',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const exchange = await ctx.api.send('POST', '/api/token', { form: { clientId: org.keys.test.clientId } });
      expectPlainError(exchange, 400, 'a form without clientSecret');
      const empty = await ctx.api.send('POST', '/api/token', {
        raw: '',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expectPlainError(empty, 400, 'an empty form');
    },
  },
  {
    id: 'TOKEN-005',
    clauses: ['token.401', 'token.identical', 'token.plain-error', 'err.token'],
    section,
    title:
      'An unknown client id and a wrong secret both get 401 with the identical answer, status, headers and body (parts that vary between two identical requests aside)',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const unknownPair = { clientId: `${org.keys.test.clientId}x9`, clientSecret: org.keys.test.clientSecret };
      const wrongPair = { clientId: org.keys.test.clientId, clientSecret: `${org.keys.test.clientSecret}x9` };
      // Interleaved, so that whatever changes with time (a timestamp in the body, the Date
      // header) changes within a pair too, and is seen to vary rather than to tell the two apart.
      const answers: Exchange[] = [];
      for (const form of [unknownPair, wrongPair, unknownPair, wrongPair])
        answers.push(await ctx.api.send('POST', '/api/token', { form }));
      const [unknown, wrong, unknownAgain, wrongAgain] = answers as [Exchange, Exchange, Exchange, Exchange];
      expectPlainError(unknown!, 401, 'an unknown clientId');
      expectPlainError(wrong, 401, 'a wrong clientSecret');
      const differ = tellingApart([unknown, unknownAgain], [wrong, wrongAgain]);
      const headers = differ.filter((p) => p.startsWith('header ')).map((p) => p.slice('header '.length));
      expect(
        differ.length === 0,
        `The answers differ at ${differ.join(', ')}: unknown client id gave ${describe(unknown, headers)}, wrong secret gave ${describe(wrong, headers)}; the document requires the identical answer.`,
        wrong,
      );
    },
  },
];

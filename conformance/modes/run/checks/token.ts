/**
 * The token endpoint (service document: Endpoints, POST /api/token; Authentication 1-2).
 * The body is form-encoded; failures answer `{ error: <string> }`, not the envelope;
 * an unknown client id and a wrong secret get the identical answer.
 */
import { isDeepStrictEqual } from 'node:util';
import { expect, expectStatus } from '../assert.ts';
import type { Check } from '../../../runner/check-definition.ts';
import type { Exchange } from '../../../exchange.ts';
import { at, isObject, show, text } from '../../../json.ts';

const section = 'Endpoints: POST /api/token';

/** The token endpoint's failure body: a plain string `error` (Errors: Envelope, exception). */
export function expectPlainError(exchange: Exchange, status: number, what: string): void {
  expectStatus(exchange, status, what);
  expect(
    typeof at(exchange.json, 'error') === 'string',
    `${what}: the body must be { "error": "<message string>" } (the token endpoint does not use the envelope).`,
    exchange,
  );
}

/** A JSON value as its leaves: JSON path ("/error", "/meta/requestId") to value. */
function leaves(value: unknown, path = '', out = new Map<string, unknown>()): Map<string, unknown> {
  if (isObject(value)) for (const [k, v] of Object.entries(value)) leaves(v, `${path}/${k}`, out);
  else if (Array.isArray(value)) for (const [i, v] of value.entries()) leaves(v, `${path}/${i}`, out);
  else out.set(path, value);
  return out;
}

/** The words of a text and what lies between them. */
const pieces = (text: string) => text.match(/[A-Za-z0-9_-]+|[^A-Za-z0-9_-]+/g) ?? [];

/**
 * Which pieces of a text varied between two answers to the same request (a request id,
 * a time): true at each such position; undefined when the two are not of one shape, so
 * the whole text varies.
 */
function varyingPieces(once: unknown, again: unknown): boolean[] | undefined {
  if (typeof once !== 'string' || typeof again !== 'string') return undefined;
  const [a, b] = [pieces(once), pieces(again)];
  return a.length === b.length ? a.map((piece, i) => piece !== b[i]) : undefined;
}

/**
 * The JSON paths at which two answers differ in a way that tells them apart: leaves that
 * differ, less what varied between two answers to one request (compared piece by piece
 * inside a text, so a request id in a message does not hide a different message).
 */
export function telling(one: [unknown, unknown], other: [unknown, unknown]): string[] {
  const [a, aAgain, b, bAgain] = [leaves(one[0]), leaves(one[1]), leaves(other[0]), leaves(other[1])];
  return [...new Set([...a.keys(), ...b.keys()])].filter((path) => {
    // A field one answer has and the other lacks, each time, tells them apart whatever its value.
    if (a.has(path) !== b.has(path)) return a.has(path) === aAgain.has(path) && b.has(path) === bAgain.has(path);
    const [x, y] = [a.get(path), b.get(path)];
    if (isDeepStrictEqual(x, y)) return false;
    const [varyX, varyY] = [varyingPieces(x, aAgain.get(path)), varyingPieces(y, bAgain.get(path))];
    if (typeof x === 'string' && typeof y === 'string' && varyX && varyY) {
      const [px, py] = [pieces(x), pieces(y)];
      return px.length !== py.length || px.some((piece, i) => piece !== py[i] && !varyX[i] && !varyY[i]);
    }
    // A leaf that was not the same twice over for one request cannot tell the two apart.
    const varied = !isDeepStrictEqual(x, aAgain.get(path)) || !isDeepStrictEqual(y, bAgain.get(path));
    return !varied;
  });
}

/**
 * The headers of an answer that say something of it: not the framing of its body
 * (content-length, transfer-encoding), which follows from the body compared on its own,
 * nor those of the connection it came on (RFC 9110 7.6.1), which a server manages for
 * reasons of its own.
 */
const NOT_OF_THE_ANSWER = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

function answerHeaders(exchange: Exchange): Record<string, string> {
  return Object.fromEntries(Object.entries(exchange.headers).filter(([name]) => !NOT_OF_THE_ANSWER.has(name)));
}

/** An answer for a report: its status, the headers named (or their absence), and its body. */
function describe(exchange: Exchange, names: readonly string[]): string {
  const headers = names.map((name) => `${name}: ${exchange.headers[name] ?? '(none)'}`).join('; ');
  return `${exchange.status}${headers ? ` (${headers})` : ''} ${exchange.text}`;
}

export const tokenChecks: Check[] = [
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
      const accessToken = text(exchange.json, 'accessToken');
      expect(accessToken, 'accessToken must be a non-empty string.', exchange);
      const tokenType = at(exchange.json, 'tokenType');
      expect(tokenType === 'Bearer', `tokenType must be "Bearer", received ${show(tokenType)}.`, exchange);
      const expiresIn = at(exchange.json, 'expiresIn');
      expect(
        typeof expiresIn === 'string' && expiresIn.length > 0,
        `expiresIn must be duration text (a string), received ${show(expiresIn)}.`,
        exchange,
      );
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
      // What differs between two answers to the same request (a request id, a time) cannot
      // tell the two cases apart; everything else must be identical, the headers included:
      // a header that differs tells an attacker which client ids exist as surely as a body.
      const headers = telling(
        [answerHeaders(unknown), answerHeaders(unknownAgain)],
        [answerHeaders(wrong), answerHeaders(wrongAgain)],
      ).map((p) => p.slice(1));
      const differ = [
        ...telling([unknown.json, unknownAgain.json], [wrong.json, wrongAgain.json]).map((p) => p || '(the body)'),
        ...headers.map((name) => `header ${name}`),
      ];
      expect(
        differ.length === 0,
        `The answers differ at ${differ.join(', ')}: unknown client id gave ${describe(unknown, headers)}, wrong secret gave ${describe(wrong, headers)}; the document requires the identical answer.`,
        wrong,
      );
    },
  },
];

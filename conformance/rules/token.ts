/**
 * The token endpoint's answers (Endpoints: POST /api/token; Resources: Access token
 * response): what a token response holds, and the one answer an unknown client id and a
 * wrong secret share.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Exchange } from '../core/exchange.ts';
import { at, isObject, show } from '../core/json.ts';

/** `accessToken` (the bearer token), `tokenType` `Bearer`, `expiresIn` (duration text). */
export function tokenResponseProblem(json: unknown): string | undefined {
  const problems: string[] = [];
  const accessToken = at(json, 'accessToken');
  if (typeof accessToken !== 'string' || accessToken === '')
    problems.push(`accessToken must be a non-empty string, received ${show(accessToken)}`);
  const tokenType = at(json, 'tokenType');
  if (tokenType !== 'Bearer') problems.push(`tokenType must be "Bearer", received ${show(tokenType)}`);
  const expiresIn = at(json, 'expiresIn');
  if (typeof expiresIn !== 'string' || expiresIn === '')
    problems.push(`expiresIn must be duration text (a string), received ${show(expiresIn)}`);
  return problems.length > 0 ? `${problems.join('; ')}.` : undefined;
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
function telling(one: [unknown, unknown], other: [unknown, unknown]): string[] {
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

/**
 * "An unknown client id and a wrong secret get the identical answer": the places where
 * answers to the two tell them apart, body paths and `header <name>`; empty when none do.
 * Each is asked twice, interleaved, so that what changes with time changes within a pair
 * too: what differs between two answers to one request (a request id, a time) cannot tell
 * them apart. Headers count: one that differs tells which client ids exist as surely as a body.
 */
export function tellingApart(unknown: [Exchange, Exchange], wrong: [Exchange, Exchange]): string[] {
  const headers = telling(
    [answerHeaders(unknown[0]), answerHeaders(unknown[1])],
    [answerHeaders(wrong[0]), answerHeaders(wrong[1])],
  );
  return [
    ...telling([unknown[0].json, unknown[1].json], [wrong[0].json, wrong[1].json]).map((p) => p || '(the body)'),
    ...headers.map((p) => `header ${p.slice(1)}`),
  ];
}

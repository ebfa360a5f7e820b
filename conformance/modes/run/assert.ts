/**
 * Assertions of the checks. Each failure carries the exchange it is about, so that the
 * report can show it and the curl line that reproduces it.
 */
import type { Exchange } from '../../core/exchange.ts';
import { at, isObject, type JsonObject, show } from '../../core/json.ts';
import { CheckFailure } from '../../core/outcome.ts';
import { plainErrorProblem } from '../../rules/errors.ts';

export function fail(message: string, exchange?: Exchange): never {
  throw new CheckFailure(message, exchange ? { exchange } : undefined);
}

export function expect(condition: unknown, message: string, exchange?: Exchange): asserts condition {
  if (!condition) fail(message, exchange);
}

export function expectStatus(exchange: Exchange, status: number, what: string): void {
  expect(exchange.status === status, `${what}: expected status ${status}, received ${exchange.status}.`, exchange);
}

/** A 4xx/5xx in the envelope with one of the codes (Errors: Envelope); returns the envelope's error object. */
export function expectError(exchange: Exchange, status: number, codes: string | string[], what: string): JsonObject {
  const allowed = [codes].flat();
  const code = at(exchange.json, 'error', 'code');
  expect(
    exchange.status === status && typeof code === 'string' && allowed.includes(code),
    `${what}: expected ${status} ${allowed.join(' or ')}, received ${exchange.status}${code !== undefined ? ` ${show(code)}` : ''}.`,
    exchange,
  );
  const error = at(exchange.json, 'error');
  return isObject(error) ? error : {};
}

/** The token endpoint's failure body: a plain string `error` (Errors: Envelope, exception). */
export function expectPlainError(exchange: Exchange, status: number, what: string): void {
  expectStatus(exchange, status, what);
  const problem = plainErrorProblem(exchange.json);
  if (problem) fail(`${what}: ${problem}`, exchange);
}

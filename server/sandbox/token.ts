/**
 * The sandbox API's bearer token. Whoever holds it can make organisations, move clocks and
 * complete payments, so the server refuses to offer the sandbox to the network under a
 * token nobody chose: on a loopback address only this machine can reach it and a random
 * token will do; on any other address the operator must give one, long enough not to be
 * guessed.
 *
 * A random token is kept with the data (the settings table), as the token signing key is:
 * tests and scripts that read it once keep working across restarts on the same database.
 */
import ipaddr from 'ipaddr.js';
import { newSandboxToken } from '../domain/ids.ts';
import type { Store } from '../store/types.ts';

/** Shortest token accepted when the sandbox is reachable from other machines. */
export const EXPOSED_TOKEN_MIN_LENGTH = 32;
const SETTING = 'sandbox_token';

/**
 * Whether only this machine can reach `host`. Only `localhost` and loopback addresses count:
 * any other name may resolve to an interface that others can reach.
 */
export function isLoopback(host: string): boolean {
  const name = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (name === 'localhost') return true;
  return ipaddr.isValid(name) && ipaddr.process(name).range() === 'loopback';
}

/**
 * Throws, saying why, when the sandbox would listen on a host others can reach without a
 * token of the operator's of at least EXPOSED_TOKEN_MIN_LENGTH characters. `token` is the
 * option as given: `false` is the sandbox off, undefined none given.
 */
export function checkSandboxExposure(host: string, token: string | false | undefined): void {
  if (token === false || isLoopback(host)) return;
  const need = `a --sandbox-token (or SANDBOX_TOKEN) of at least ${EXPOSED_TOKEN_MIN_LENGTH} characters, or --no-sandbox`;
  if (token === undefined)
    throw new Error(
      `--host ${host} is not a loopback address, so the sandbox API would be open to the network: give ${need}`,
    );
  if (token.length < EXPOSED_TOKEN_MIN_LENGTH)
    throw new Error(
      `--host ${host} is not a loopback address, so the sandbox API would be open to the network, and the sandbox token given is ${token.length} characters long: give ${need}`,
    );
}

/** The token the sandbox API takes: the one given, else the database's own (made on its first start); undefined when off. */
export async function sandboxToken(given: string | false | undefined, store: Store): Promise<string | undefined> {
  if (given === false) return undefined;
  if (given !== undefined) return given;
  // Of servers starting together on one database, the first one's is kept.
  return (await store.getSetting(SETTING)) ?? (await store.ensureSetting(SETTING, newSandboxToken()));
}

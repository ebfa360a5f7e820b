/**
 * Client secrets are stored as scrypt hashes and compared in constant time. An unknown
 * client id is checked against a fixed dummy hash, so it costs the same work as a wrong
 * secret and nothing in the timing tells the two apart.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
// On the background thread: see there why not the libuv pool.
import { scrypt } from '../background.ts';

const KEY_LENGTH = 32;
const COST = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(secret, salt, KEY_LENGTH, COST);
  return `scrypt$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/** A hash of a secret nobody has, to spend the same work on unknown client ids. */
const DUMMY_HASH = `scrypt$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(KEY_LENGTH).toString('base64')}`;

export async function verifySecret(secret: string, stored: string | undefined): Promise<boolean> {
  const [scheme, salt, hash] = (stored ?? DUMMY_HASH).split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scrypt(secret, Buffer.from(salt, 'base64'), expected.length, COST);
  return timingSafeEqual(actual, expected) && stored !== undefined;
}

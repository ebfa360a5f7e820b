/**
 * Client secrets are stored as scrypt hashes and compared in constant time. An unknown
 * client id is checked against a fixed dummy hash, so it costs the same work as a wrong
 * secret and nothing in the timing tells the two apart.
 */
import { randomBytes, type ScryptOptions, timingSafeEqual } from 'node:crypto';

export type Scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) => Promise<Buffer>;

const KEY_LENGTH = 32;
const COST: ScryptOptions = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

/** A hash of a secret nobody has, to spend the same work on unknown client ids. */
const DUMMY_HASH = `scrypt$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(KEY_LENGTH).toString('base64')}`;

export class Secrets {
  /** `scrypt`: where the hashing runs (the background thread, see background/thread.ts). */
  constructor(private readonly scrypt: Scrypt) {}

  async hash(secret: string): Promise<string> {
    const salt = randomBytes(16);
    const hash = await this.scrypt(secret, salt, KEY_LENGTH, COST);
    return `scrypt$${salt.toString('base64')}$${hash.toString('base64')}`;
  }

  /** Whether `secret` is the one `stored` was made from; undefined (no such key) is false after the same work. */
  async verify(secret: string, stored: string | undefined): Promise<boolean> {
    const [scheme, salt, hash] = (stored ?? DUMMY_HASH).split('$');
    if (scheme !== 'scrypt' || !salt || !hash) return false;
    const expected = Buffer.from(hash, 'base64');
    const actual = await this.scrypt(secret, Buffer.from(salt, 'base64'), expected.length, COST);
    return timingSafeEqual(actual, expected) && stored !== undefined;
  }
}

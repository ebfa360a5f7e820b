/**
 * Client secrets are stored as scrypt hashes and compared in constant time. An unknown
 * client id is checked against a dummy hash of the same cost, so it costs the same work as
 * a wrong secret and nothing in the timing tells the two apart.
 *
 * A stored hash names its own cost (`scrypt$ln=14$<salt>$<hash>`, N = 2^ln), so a cost
 * chosen later, or by another server on the same database, never stops an older secret from
 * verifying; one without it (`scrypt$<salt>$<hash>`) was made at the default cost.
 */
import { randomBytes, type ScryptOptions, timingSafeEqual } from 'node:crypto';

export type Scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) => Promise<Buffer>;

const KEY_LENGTH = 32;
/** log2 of scrypt's N for new hashes: 2^14 with r = 8, scrypt's own choice for interactive logins. */
export const DEFAULT_SECRET_COST = 14;
/** The work area: 128 * r * N bytes, 16 MiB at the default; the limit leaves room for 2^15. */
const MAX_MEMORY = 64 * 1024 * 1024;
const options = (logN: number): ScryptOptions => ({ N: 2 ** logN, r: 8, p: 1, maxmem: MAX_MEMORY });

export class Secrets {
  private readonly dummyHash: string;

  /**
   * `scrypt`: where the hashing runs (the background thread, see background/thread.ts).
   * `logN`: the cost of new hashes, from 1 to 15 (tests use less than the default to spare
   * the machine's cores; a hash keeps its cost, see above).
   */
  constructor(
    private readonly scrypt: Scrypt,
    private readonly logN = DEFAULT_SECRET_COST,
  ) {
    if (!Number.isInteger(logN) || logN < 1 || logN > 15)
      throw new RangeError(`the secret hash cost (log2 N) must be a whole number from 1 to 15, not ${logN}`);
    this.dummyHash = `scrypt$ln=${logN}$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(KEY_LENGTH).toString('base64')}`;
  }

  async hash(secret: string): Promise<string> {
    const salt = randomBytes(16);
    const hash = await this.scrypt(secret, salt, KEY_LENGTH, options(this.logN));
    return `scrypt$ln=${this.logN}$${salt.toString('base64')}$${hash.toString('base64')}`;
  }

  /**
   * The stored form of a secret nobody holds (one that is made and never shown): random
   * bytes where the hash would be, so no secret verifies against it, at the cost of a hash
   * like any other, without the work of making one.
   */
  unmatchable(): string {
    return `scrypt$ln=${this.logN}$${randomBytes(16).toString('base64')}$${randomBytes(KEY_LENGTH).toString('base64')}`;
  }

  /** Whether `secret` is the one `stored` was made from; undefined (no such key) is false after the same work. */
  async verify(secret: string, stored: string | undefined): Promise<boolean> {
    const parsed = parse(stored ?? this.dummyHash);
    if (!parsed) return false;
    const actual = await this.scrypt(secret, parsed.salt, parsed.hash.length, options(parsed.logN));
    return timingSafeEqual(actual, parsed.hash) && stored !== undefined;
  }
}

function parse(stored: string): { logN: number; salt: Buffer; hash: Buffer } | undefined {
  const parts = stored.split('$');
  if (parts[0] !== 'scrypt') return undefined;
  const cost = parts.length === 4 ? /^ln=(\d{1,2})$/.exec(parts[1]!) : null;
  if (parts.length === 4 && !cost) return undefined;
  const logN = cost ? Number(cost[1]) : DEFAULT_SECRET_COST;
  const [salt, hash] = parts.slice(-2);
  if (parts.length < 3 || parts.length > 4 || !salt || !hash || logN < 1 || logN > 15) return undefined;
  return { logN, salt: Buffer.from(salt, 'base64'), hash: Buffer.from(hash, 'base64') };
}

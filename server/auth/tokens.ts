/**
 * Access tokens: HS256 JWTs (jose) that last five minutes on the organisation's clock.
 * The signing key is generated once and kept in the store, so tokens survive a restart
 * and every server on one database accepts every other's.
 * Tokens are not stored: nothing about them accumulates on disk or in memory.
 */
import { randomBytes, type webcrypto } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import { orgNow } from '../domain/clock.ts';
import type { ApiKey, Organisation, Store } from '../store/types.ts';

export const TOKEN_LIFETIME_SECONDS = 300;
/** How the token response states the lifetime (the document leaves the text's format open). */
export const TOKEN_LIFETIME_TEXT = '5m';
const ISSUER = 'payment-server';
const SIGNING_KEY_SETTING = 'token_signing_key';

export type Authentication =
  | { ok: true; apiKey: ApiKey; org: Organisation }
  | { ok: false; code: 'unauthorized' | 'invalid_token' | 'token_expired' | 'unknown_api_key'; message: string };

const fail = (code: Extract<Authentication, { ok: false }>['code'], message: string): Authentication => ({
  ok: false,
  code,
  message,
});

/** Signatures already checked, by token text: a token's signature never changes. */
const VERIFIED_CACHE_SIZE = 10_000;

interface Verified {
  sub: string;
  org: string;
  exp: number;
}

/**
 * A JWT's three parts are base64url without padding (RFC 7515 2), and each must be the
 * one text of its bytes: decoders accept `=` padding and ignore the unused low bits of the
 * last character, so without this check many texts would pass for one issued token.
 */
function canonical(token: string): boolean {
  const parts = token.split('.');
  return (
    parts.length === 3 &&
    parts.every(
      (part) => /^[A-Za-z0-9_-]+$/.test(part) && Buffer.from(part, 'base64url').toString('base64url') === part,
    )
  );
}

export class Tokens {
  private readonly verified = new Map<string, Verified>();

  private constructor(
    private readonly store: Store,
    private readonly key: webcrypto.CryptoKey,
  ) {}

  static async open(store: Store): Promise<Tokens> {
    // Servers sharing a database share the key: of several starting together, the first
    // one's is kept, so a token from one is good at every other.
    const encoded =
      (await store.getSetting(SIGNING_KEY_SETTING)) ??
      (await store.ensureSetting(SIGNING_KEY_SETTING, randomBytes(32).toString('base64')));
    // Imported once: jose would import raw key bytes again on every verification.
    const key = await crypto.subtle.importKey(
      'raw',
      Buffer.from(encoded, 'base64'),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign', 'verify'],
    );
    return new Tokens(store, key);
  }

  private remember(token: string, verified: Verified): void {
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, verified);
  }

  /** Checks the signature (once per token) and returns the claims, or undefined when invalid. */
  private async verifySignature(token: string): Promise<Verified | undefined> {
    const known = this.verified.get(token);
    if (known) return known;
    if (!canonical(token)) return undefined;
    try {
      // Expiry is judged by the caller on the organisation's clock, so jose checks only
      // the signature, algorithm and issuer here.
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        currentDate: new Date(0),
      });
      if (typeof payload.sub !== 'string' || typeof payload.org !== 'string' || typeof payload.exp !== 'number')
        return undefined;
      const verified = { sub: payload.sub, org: payload.org, exp: payload.exp };
      this.remember(token, verified);
      return verified;
    } catch {
      return undefined;
    }
  }

  async issue(apiKey: ApiKey, org: Organisation): Promise<string> {
    const now = orgNow(org) / 1000;
    // NumericDates may hold fractions (RFC 7519 2): to the millisecond, a token lasts
    // exactly five minutes, where whole seconds would cut up to one off.
    return new SignJWT({ org: org.id, mode: apiKey.mode })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(apiKey.clientId)
      .setIssuer(ISSUER)
      .setIssuedAt(now)
      .setExpirationTime(now + TOKEN_LIFETIME_SECONDS)
      .setJti(randomBytes(9).toString('base64url'))
      .sign(this.key);
  }

  /**
   * Checks an Authorization header, in the order that gives the most useful answer:
   * the header's form (unauthorized), the signature (invalid_token), the key's existence
   * (unknown_api_key: a new token would not help, so it wins over expiry), then expiry
   * on the organisation's clock (token_expired).
   */
  async authenticate(header: string | undefined): Promise<Authentication> {
    const match = header === undefined ? null : /^Bearer +(\S.*)$/i.exec(header.trim());
    if (!match) return fail('unauthorized', 'Send the access token as Authorization: Bearer <token>.');
    const claims = await this.verifySignature(match[1]!);
    if (!claims) return fail('invalid_token', 'The access token could not be verified.');
    const account = await this.store.getAccount(claims.sub);
    if (!account || claims.org !== account.apiKey.orgId) {
      return fail(
        'unknown_api_key',
        'The API key this token was issued for no longer exists. Create a new key; a new token for the old one will not work.',
      );
    }
    if (orgNow(account.org) >= claims.exp * 1000)
      return fail('token_expired', 'The access token has expired. Fetch a new one and repeat the request once.');
    return { ok: true, ...account };
  }
}

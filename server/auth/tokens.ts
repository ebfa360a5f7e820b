/**
 * Access tokens: HS256 JWTs (jose) that last five minutes on the organisation's clock.
 * The signing key is generated once and kept in the store, so tokens survive a restart.
 * Tokens are not stored: nothing about them accumulates on disk or in memory.
 */
import { randomBytes } from 'node:crypto';
import { SignJWT, decodeJwt, errors, jwtVerify } from 'jose';
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

const fail = (code: Extract<Authentication, { ok: false }>['code'], message: string): Authentication => ({ ok: false, code, message });

export class Tokens {
  private constructor(
    private readonly store: Store,
    private readonly key: Uint8Array,
  ) {}

  static async open(store: Store): Promise<Tokens> {
    let encoded = await store.getSetting(SIGNING_KEY_SETTING);
    if (!encoded) {
      encoded = randomBytes(32).toString('base64');
      await store.putSetting(SIGNING_KEY_SETTING, encoded);
    }
    return new Tokens(store, Buffer.from(encoded, 'base64'));
  }

  async issue(apiKey: ApiKey, org: Organisation): Promise<string> {
    const now = Math.floor(orgNow(org) / 1000);
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
    const token = match[1]!;

    let claims: ReturnType<typeof decodeJwt>;
    try {
      claims = decodeJwt(token);
    } catch {
      return fail('invalid_token', 'The access token could not be verified.');
    }
    const apiKey = typeof claims.sub === 'string' ? await this.store.getApiKey(claims.sub) : undefined;
    const orgId = apiKey?.orgId ?? (typeof claims.org === 'string' ? claims.org : undefined);
    const org = orgId ? await this.store.getOrganisation(orgId) : undefined;

    let expired = false;
    try {
      await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        currentDate: new Date(org ? orgNow(org) : Date.now()),
      });
    } catch (error) {
      // jose checks the signature before the claims, so an expired token is a genuine one.
      if (!(error instanceof errors.JWTExpired)) return fail('invalid_token', 'The access token could not be verified.');
      expired = true;
    }
    if (!apiKey || !org || claims.org !== apiKey.orgId) {
      return fail('unknown_api_key', 'The API key this token was issued for no longer exists. Create a new key; a new token for the old one will not work.');
    }
    if (expired) return fail('token_expired', 'The access token has expired. Fetch a new one and repeat the request once.');
    return { ok: true, apiKey, org };
  }
}

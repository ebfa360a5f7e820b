/**
 * Organisations' API keys and bearer tokens (Authentication; Endpoints: POST /api/token):
 * keys and signing secrets made, tokens issued for a form-encoded key pair, and the four
 * 401 codes of a bearer token.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { TOKEN_LIFETIME, type Mode, type Organisation, ApiError } from './types.ts';
import { digest } from './helpers.ts';
import type { State } from './state.ts';

/** Keys and tokens over the state. */
export function makeAccounts(st: State) {
  const { orgs, keys, tokens, now } = st;
  function newSigningSecret(): string {
    return `whsec_${randomBytes(24).toString('hex')}`; // secret.scope: prefix whsec_
  }

  function newKey(orgId: string, mode: Mode): { clientId: string; clientSecret: string } {
    const clientId = `ck-${mode}-${randomBytes(9).toString('base64url')}`;
    const clientSecret = `sk-${randomBytes(24).toString('base64url')}`;
    keys.set(clientId, { clientId, secretDigest: digest(clientSecret), orgId, mode });
    return { clientId, clientSecret };
  }

  const TOKEN_400 = 'Invalid credentials - missing or malformed clientId/clientSecret'; // token.400
  const TOKEN_401 = 'Invalid credentials'; // token.401
  const DUMMY_DIGEST = digest('no such key');

  function issueToken(body: Buffer, contentType: string | undefined, requestId: string): [number, unknown] {
    // token.form, conv.request-body: form-encoded only; JSON (or anything else) is a 400.
    const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') return [400, { error: TOKEN_400 }];
    const form = new URLSearchParams(body.toString('utf8'));
    const ids = form.getAll('clientId');
    const secrets = form.getAll('clientSecret');
    if (ids.length !== 1 || secrets.length !== 1 || !ids[0] || !secrets[0]) return [400, { error: TOKEN_400 }];
    const key = keys.get(ids[0]);
    // token.identical: one comparison whether or not the id exists, and one answer for both;
    // only the per-request id differs (in the message too, ours), as it does between two
    // identical requests.
    const match = timingSafeEqual(digest(secrets[0]), key?.secretDigest ?? DUMMY_DIGEST);
    if (!key || !match) return [401, { error: `${TOKEN_401} (request ${requestId})`, requestId }];
    const org = orgs.get(key.orgId)!;
    const accessToken = `tk.${randomBytes(30).toString('base64url')}`; // ours: opaque, stored
    tokens.set(accessToken, {
      clientId: key.clientId,
      orgId: org.id,
      mode: key.mode,
      expiresAt: now(org) + TOKEN_LIFETIME,
    });
    return [200, { accessToken, tokenType: 'Bearer', expiresIn: 'PT5M' }]; // res.token.*; ours: ISO 8601 duration
  }

  /** auth.bearer and the four 401 codes. */
  function authenticate(req: IncomingMessage): { org: Organisation; mode: Mode } {
    const header = req.headers.authorization;
    if (!header) throw new ApiError(401, 'unauthorized', 'An Authorization header is required.');
    const m = /^Bearer +(.+)$/i.exec(header);
    const presented = m?.[1]?.trim();
    if (!presented) throw new ApiError(401, 'unauthorized', 'Authorization must be of the form Bearer <token>.');
    // code.invalid-token: truncated, mangled or double-prefixed tokens match nothing stored.
    const token = tokens.get(presented);
    if (!token) throw new ApiError(401, 'invalid_token', 'The token could not be verified.');
    // auth.removed: the key is gone; a new token will not help.
    if (!keys.has(token.clientId))
      throw new ApiError(401, 'unknown_api_key', 'The API key of this token no longer exists.');
    const org = orgs.get(token.orgId)!;
    if (now(org) >= token.expiresAt) throw new ApiError(401, 'token_expired', 'The token has expired.'); // auth.expired
    return { org, mode: token.mode }; // auth.mode
  }

  return { newSigningSecret, newKey, TOKEN_400, issueToken, authenticate };
}

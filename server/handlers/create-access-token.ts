/**
 * POST /api/token: exchanges an API key pair, sent form-encoded, for a five-minute bearer
 * token. Failures are `{ error: <string> }` (not the envelope): 400 for a missing or
 * malformed field or a body that is not form-encoded, 401 for a pair that matches no key,
 * identical for an unknown client id and a wrong secret, 429 when too many checks wait or
 * a wrong secret comes from a client id or an address that failed too often; never for
 * the right secret because of others' failures (auth/credentials.ts).
 */
import type { operations } from '@payment-service/contract';
import { TOKEN_LIFETIME_TEXT } from '../auth/tokens.ts';
import { MALFORMED_TOKEN_REQUEST, TOKEN_FAILURES } from '../http/errors.ts';
import type { Handler, Reply } from '../http/operation.ts';
import type { Scope } from '../scope.ts';

type CreateAccessToken = operations['createAccessToken'];

// The HTTP layer's answer, held here to the operation's documented 400.
const MALFORMED: Reply<CreateAccessToken> = MALFORMED_TOKEN_REQUEST;
const INVALID: Reply<CreateAccessToken> = { status: 401, body: { error: TOKEN_FAILURES[401]! } };

const tooMany = (seconds: number): Reply<CreateAccessToken> => ({
  status: 429,
  body: { error: TOKEN_FAILURES[429]! },
  headers: { 'retry-after': String(seconds) },
});

const FORM = 'application/x-www-form-urlencoded';

export const createAccessToken: Handler<CreateAccessToken, Scope> = async (request, scope) => {
  // A JSON body with the right fields is still refused: the document requires a form.
  const type = String(request.headers['content-type'] ?? '');
  if (type.split(';')[0]!.trim().toLowerCase() !== FORM) return MALFORMED;
  const { store, tokens, credentials } = scope.services;
  const { clientId, clientSecret } = request.body;
  const check = await credentials.check(clientId, clientSecret, scope.koa.req.socket.remoteAddress);
  if (!check.ok) return check.retryAfterSeconds === undefined ? INVALID : tooMany(check.retryAfterSeconds);
  const { apiKey } = check;
  const org = await store.getOrganisation(apiKey.orgId);
  if (!org) return INVALID;
  const accessToken = await tokens.issue(apiKey, org);
  return { status: 200, body: { accessToken, tokenType: 'Bearer', expiresIn: TOKEN_LIFETIME_TEXT } };
};

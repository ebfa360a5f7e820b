/**
 * POST /api/token: exchanges an API key pair, sent form-encoded, for a five-minute bearer
 * token. Failures are `{ error: <string> }` (not the envelope): 400 for a missing or
 * malformed field or a body that is not form-encoded, 401 for a pair that matches no key,
 * identical for an unknown client id and a wrong secret.
 */
import type { Context } from 'openapi-backend';
import { verifySecret } from '../auth/secrets.ts';
import { TOKEN_LIFETIME_TEXT } from '../auth/tokens.ts';
import type { Reply } from '../domain/idempotency.ts';
import { TOKEN_FAILURES } from '../http/errors.ts';
import type { Scope } from '../scope.ts';

export const MALFORMED: Reply = { status: 400, body: { error: TOKEN_FAILURES[400] } };
const INVALID: Reply = { status: 401, body: { error: TOKEN_FAILURES[401] } };

const FORM = 'application/x-www-form-urlencoded';

export async function createAccessToken(c: Context, scope: Scope): Promise<Reply> {
  // A JSON body with the right fields is still refused: the document requires a form.
  if (
    String(c.request.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase() !== FORM
  )
    return MALFORMED;
  const { clientId, clientSecret } = c.request.requestBody as { clientId: string; clientSecret: string };
  const { store, tokens } = scope.services;
  const apiKey = await store.getApiKey(clientId);
  // verifySecret spends the same scrypt work when the key is unknown.
  if (!(await verifySecret(clientSecret, apiKey?.secretHash)) || !apiKey) return INVALID;
  const org = await store.getOrganisation(apiKey.orgId);
  if (!org) return INVALID;
  const accessToken = await tokens.issue(apiKey, org);
  return { status: 200, body: { accessToken, tokenType: 'Bearer', expiresIn: TOKEN_LIFETIME_TEXT } };
}

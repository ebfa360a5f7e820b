/**
 * The clause mutants of the service document's Authentication and Webhook signing secret
 * sections (see ../clause-mutants.ts).
 */
import { hmac, isCreate, parse, pathOf, recode, secretOf, signatureParts } from '../conformance-variants.ts';
import { editJson, type Mutation } from '../mutating-proxy.ts';
import {
  type ClauseMutant,
  json,
  isToken,
  isApi,
  codeOf,
  reply,
  envelope,
  answers,
  recodes,
  acceptedSession,
  tokenOf,
  watching,
} from './kit.ts';

export const authenticationClauseMutants: ClauseMutant[] = [
  // ---- Authentication ----
  {
    clauses: ['auth.pair'],
    name: 'the token endpoint wants client_id and client_secret',
    api: {
      request: (m) =>
        isToken(m) && new URLSearchParams(m.body).has('clientId')
          ? reply(400, { error: 'Invalid credentials - missing or malformed clientId/clientSecret' })
          : m,
    },
  },
  {
    clauses: ['auth.bearer', 'code.unauthorized'],
    name: 'an Authorization header of another scheme is answered invalid_token',
    api: {
      response: (m, r) =>
        codeOf(r) === 'unauthorized' && m.headers.authorization && !/^Bearer /.test(m.headers.authorization)
          ? editJson(r, (b) => recode(b, 'invalid_token'))
          : r,
    },
  },
  {
    clauses: ['auth.lifetime', 'limit.token'],
    name: 'tokens live four minutes',
    api: watching((w) => ({
      request: (m, k) =>
        isApi(m) && !isToken(m) && w.age(m, k) >= 240 && w.age(m, k) < 300 ? envelope(401, 'token_expired') : m,
    })),
  },
  {
    clauses: ['auth.lifetime', 'limit.token'],
    name: 'tokens outlive five minutes: an expired one is renewed behind the caller',
    api: (() => {
      const forms = new Map<string, string>();
      const mutation: Mutation = {
        response: async (m, r, _k, forward) => {
          const issued = isToken(m) && r.status === 200 ? json(r)?.accessToken : undefined;
          if (typeof issued === 'string') forms.set(issued, m.body);
          const form = codeOf(r) === 'token_expired' ? forms.get(tokenOf(m) ?? '') : undefined;
          if (form === undefined) return r;
          const headers = { 'content-type': 'application/x-www-form-urlencoded' };
          const renewed = json(await forward({ method: 'POST', url: '/api/token', headers, body: form }))?.accessToken;
          if (typeof renewed !== 'string') return r;
          return forward({ ...m, headers: { ...m.headers, authorization: `Bearer ${renewed}` } });
        },
      };
      return mutation;
    })(),
  },
  {
    clauses: ['auth.expired', 'code.token-expired', 'status.401'],
    name: 'an expired token is answered 403',
    api: { response: (_m, r) => (codeOf(r) === 'token_expired' ? { ...r, status: 403 } : r) },
  },
  {
    clauses: ['code.invalid-token'],
    name: 'a mangled token is answered token_expired',
    api: recodes('invalid_token', 'token_expired'),
  },
  {
    clauses: ['auth.bearer', 'code.invalid-token'],
    name: 'a valid token under the scheme written "bearer" is answered invalid_token',
    api: {
      request: (m) => (/^bearer /.test(m.headers.authorization ?? '') ? envelope(401, 'invalid_token') : m),
    },
  },
  {
    clauses: ['auth.removed', 'code.unknown-api-key'],
    name: "a deleted key's token still works",
    api: {
      response: (m, r) =>
        codeOf(r) === 'unknown_api_key'
          ? isCreate(m)
            ? reply(200, acceptedSession(parse(m.body)))
            : envelope(404, 'not_found')
          : r,
    },
  },
  // ---- Webhook signing secret ----
  {
    clauses: ['secret.scope'],
    name: 'deliveries are signed with a secret of their own, not the organisation’s',
    hook: {
      request: (m) => {
        const parts = signatureParts(m.headers['service-signature']);
        return parts
          ? {
              ...m,
              headers: {
                ...m.headers,
                'service-signature': `t=${parts.t},v1=${hmac('whsec_per_payment', parts.t, m.body)}`,
              },
            }
          : m;
      },
    },
  },
  {
    clauses: ['secret.distinct'],
    name: 'the signing secret given for an organisation is its client secret',
    api: answers(
      (m, r) => pathOf(m) === '/sandbox/organisations' && r.status === 200,
      (b) => ({ ...b, webhookSigningSecret: b.apiKeys.test.clientSecret }),
    ),
  },
  {
    clauses: ['secret.rotation'],
    name: 'after rotation the first delivery is still signed with the old secret',
    hook: ((): Mutation => {
      const rotatedAway = new Set<string>();
      return {
        request: (m, k) => {
          const secret = secretOf(m, k);
          const org = [...k.orgs.values()].find((o) => o.secrets.includes(secret ?? ''));
          if (!org || org.secrets.length < 2 || secret !== org.secrets.at(-1) || rotatedAway.has(org.id)) return m;
          rotatedAway.add(org.id);
          const parts = signatureParts(m.headers['service-signature'])!;
          const old = org.secrets.at(-2)!;
          return {
            ...m,
            headers: { ...m.headers, 'service-signature': `t=${parts.t},v1=${hmac(old, parts.t, m.body)}` },
          };
        },
      };
    })(),
  },
];

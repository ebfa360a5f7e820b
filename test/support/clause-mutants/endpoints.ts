/**
 * The clause mutants of the service document's Endpoints sections: POST /api/token, POST
 * and GET /api/checkout-sessions, payment links and legacy transactions (see
 * ../clause-mutants.ts).
 */
import { randomUUID } from 'node:crypto';
import { hmac, isCreate, parse, pathOf, recode } from '../conformance-variants.ts';
import { editJson, type Mutation, type Reply } from '../mutating-proxy.ts';
import {
  type ClauseMutant,
  isRead,
  isToken,
  isApi,
  codeOf,
  reply,
  envelope,
  answers,
  createsAs,
  recodes,
  accepts,
  deliveries,
  watching,
  within,
} from './kit.ts';

export const endpointClauseMutants: ClauseMutant[] = [
  // ---- Endpoints ----
  {
    clauses: ['ep.bearer'],
    name: 'payment-link reads need no token: without Authorization an unknown link is 404',
    api: {
      request: (m) =>
        m.method === 'GET' && /^\/api\/payment-links\//.test(pathOf(m)) && !m.headers.authorization
          ? envelope(404, 'not_found')
          : m,
    },
  },
  // ---- POST /api/token ----
  {
    clauses: ['token.client-id', 'token.400'],
    name: 'a form without clientId gets a token',
    api: {
      request: (m) =>
        isToken(m) && m.body !== '' && !new URLSearchParams(m.body).has('clientId')
          ? reply(200, { accessToken: randomUUID(), tokenType: 'Bearer', expiresIn: '0.083 hours' })
          : m,
    },
  },
  {
    clauses: ['token.client-secret'],
    name: 'a form without clientSecret gets a token',
    api: {
      request: (m) =>
        isToken(m) && new URLSearchParams(m.body).has('clientId') && !new URLSearchParams(m.body).has('clientSecret')
          ? reply(200, { accessToken: randomUUID(), tokenType: 'Bearer', expiresIn: '0.083 hours' })
          : m,
    },
  },
  {
    clauses: ['token.plain-error', 'err.token', 'token.401'],
    name: 'a wrong pair is answered with the error envelope',
    api: { response: (m, r) => (isToken(m) && r.status === 401 ? envelope(401, 'unauthorized') : r) },
  },
  {
    clauses: ['token.identical'],
    name: 'an unknown client id is answered 404',
    api: {
      response: (m, r, k) =>
        isToken(m) && r.status === 401 && !k.orgByClientId.has(new URLSearchParams(m.body).get('clientId') ?? '')
          ? { ...r, status: 404 }
          : r,
    },
  },
  {
    clauses: ['token.identical'],
    name: 'the 401 message says which half of the pair is wrong, beside a request id of its own',
    api: {
      response: (m, r, k) => {
        if (!isToken(m) || r.status !== 401) return r;
        const known = k.orgByClientId.has(new URLSearchParams(m.body).get('clientId') ?? '');
        const id = randomUUID();
        return reply(401, { error: `${known ? 'Wrong secret' : 'Unknown client'} (request ${id})`, requestId: id });
      },
    },
  },
  {
    clauses: ['token.identical'],
    name: 'the 401 for an unknown client id leaves out a field the wrong secret’s 401 has',
    api: {
      response: (m, r, k) =>
        isToken(m) && r.status === 401 && k.orgByClientId.has(new URLSearchParams(m.body).get('clientId') ?? '')
          ? editJson(r, (b) => ({ ...b, requestId: randomUUID() }))
          : r,
    },
  },
  // ---- POST /api/checkout-sessions ----
  {
    clauses: ['create.one'],
    name: 'a create without a key that repeats an earlier body answers the earlier session',
    api: ((): Mutation => {
      const seen = new Map<string, Reply>();
      return {
        request: (m) => {
          if (!isCreate(m) || m.headers['idempotency-key']) return m;
          return seen.get(`${m.headers.authorization} ${m.body}`) ?? m;
        },
        response: (m, r) => {
          if (isCreate(m) && !m.headers['idempotency-key'] && r.status === 200)
            seen.set(`${m.headers.authorization} ${m.body}`, r);
          return r;
        },
      };
    })(),
  },
  {
    clauses: ['create.idempotency-key', 'limit.idempotency', 'code.idempotency'],
    name: 'an Idempotency-Key is forgotten after an hour',
    api: watching((w) => {
      const first = new Map<string, number>();
      return {
        request: (m, k) => {
          const key = m.headers['idempotency-key'];
          const org = k.orgOf(m)?.id;
          if (!isCreate(m) || !key || !org) return m;
          const now = w.clock.get(org) ?? 0;
          const at = first.get(`${org} ${key}`);
          if (at === undefined) first.set(`${org} ${key}`, now);
          return at !== undefined && now - at >= 3600
            ? { ...m, headers: { ...m.headers, 'idempotency-key': `${key}-later` } }
            : m;
        },
      };
    }),
  },
  {
    clauses: ['create.type'],
    name: 'any type is taken as single',
    api: createsAs(
      (b) => b.type !== 'single',
      (b) => ({ ...b, type: 'single' }),
    ),
  },
  {
    clauses: ['create.amount'],
    name: 'a missing amount is filled with 1.00',
    api: createsAs(
      (b) => b.amount === undefined,
      (b) => ({ ...b, amount: { total: 1 } }),
    ),
  },
  {
    clauses: ['create.total', 'limit.total', 'order.validation'],
    name: 'a total of 0 or less is taken as 0.01',
    api: createsAs(
      (b) => typeof b.amount?.total === 'number' && b.amount.total <= 0,
      (b) => ({ ...b, amount: { ...b.amount, total: 0.01 } }),
    ),
  },
  {
    clauses: ['create.currency'],
    name: 'an omitted currency is not filled in (null)',
    api: answers(
      (m, r) => isCreate(m) && r.status === 200 && parse(m.body)?.amount?.currency === undefined,
      (b) => ({ ...b, amount: { ...b.amount, currency: null } }),
    ),
  },
  {
    clauses: ['create.creditor-reference'],
    name: 'a missing creditorReference is made up',
    api: createsAs(
      (b) => b.creditorReference === undefined,
      (b) => ({ ...b, creditorReference: { reference: 'AUTO' } }),
    ),
  },
  {
    clauses: ['create.reference', 'limit.reference'],
    name: 'an empty reference is accepted',
    api: createsAs(
      (b) => b.creditorReference?.reference === '',
      (b) => ({ ...b, creditorReference: { ...b.creditorReference, reference: 'X' } }),
    ),
  },
  {
    clauses: ['create.particulars', 'limit.particulars'],
    name: 'particulars over 12 characters are cut to 12',
    api: createsAs(
      (b) => within(0, 12)(b.creditorReference?.particulars),
      (b) => ({
        ...b,
        creditorReference: { ...b.creditorReference, particulars: b.creditorReference.particulars.slice(0, 12) },
      }),
    ),
  },
  {
    clauses: ['create.code', 'limit.code'],
    name: 'characters outside [a-zA-Z0-9- ] are dropped from the code',
    api: createsAs(
      (b) => typeof b.creditorReference?.code === 'string' && /[^a-zA-Z0-9- ]/.test(b.creditorReference.code),
      (b) => ({
        ...b,
        creditorReference: {
          ...b.creditorReference,
          code: b.creditorReference.code.replace(/[^a-zA-Z0-9- ]/g, '') || 'X',
        },
      }),
    ),
  },
  {
    clauses: ['create.redirect-url'],
    name: 'a relative redirectUrl is made absolute against the merchant’s site',
    api: createsAs(
      (b) => typeof b.redirectUrl === 'string' && !/^https?:\/\/[^/]/.test(b.redirectUrl),
      (b) => ({ ...b, redirectUrl: `https://shop.example.com/${b.redirectUrl.replace(/^\/+/, '')}` }),
    ),
  },
  {
    clauses: ['create.checkout-method'],
    name: 'an unknown checkoutMethod is taken as both',
    api: createsAs(
      (b) => typeof b.checkoutMethod === 'string' && !['open_banking', 'card', 'both'].includes(b.checkoutMethod),
      (b) => ({ ...b, checkoutMethod: 'both' }),
    ),
  },
  {
    clauses: ['create.webhook-url', 'target.https'],
    name: 'an http:// webhookUrl is taken as https://',
    api: createsAs(
      (b) =>
        typeof b.webhookUrl === 'string' && b.webhookUrl.startsWith('http://') && !b.webhookUrl.includes('127.0.0.1'),
      (b) => ({ ...b, webhookUrl: b.webhookUrl.replace(/^http:/, 'https:') }),
    ),
  },
  {
    clauses: ['create.foreign-id', 'payload.foreign-id'],
    name: 'the webhook does not echo foreignTransactionId',
    hook: deliveries((b) => (b.event ? { ...b, foreignTransactionId: null } : b)),
  },
  {
    clauses: ['create.description', 'limit.description'],
    name: 'a description over 255 characters is cut',
    api: createsAs(
      (b) => within(0, 255)(b.description),
      (b) => ({ ...b, description: b.description.slice(0, 255) }),
    ),
  },
  {
    clauses: ['redirect.params'],
    name: 'the redirect drops checkoutSessionId',
    api: answers(
      (m, r) => /^\/sandbox\/checkout-sessions\/[^/]+\/attempts$/.test(pathOf(m)) && r.status === 200,
      (b) => {
        if (typeof b.redirectTo !== 'string') return b;
        const url = new URL(b.redirectTo);
        url.searchParams.delete('checkoutSessionId');
        return { ...b, redirectTo: url.toString() };
      },
    ),
  },
  {
    clauses: ['redirect.params'],
    name: 'the redirect keeps one value of a repeated query parameter of the merchant’s',
    api: answers(
      (m, r) => /^\/sandbox\/checkout-sessions\/[^/]+\/attempts$/.test(pathOf(m)) && r.status === 200,
      (b) => {
        if (typeof b.redirectTo !== 'string') return b;
        const url = new URL(b.redirectTo);
        url.search = new URLSearchParams(Object.fromEntries(url.searchParams)).toString();
        return { ...b, redirectTo: url.toString() };
      },
    ),
  },
  {
    clauses: ['idem.replay'],
    name: 'a replay with the same key and body is refused with idempotency_error',
    api: ((): Mutation => {
      const seen = new Set<string>();
      return {
        request: (m) => {
          const key = m.headers['idempotency-key'];
          if (!isCreate(m) || !key) return m;
          const id = `${m.headers.authorization} ${key}`;
          if (seen.has(id)) return envelope(400, 'idempotency_error');
          seen.add(id);
          return m;
        },
      };
    })(),
  },
  {
    clauses: ['idem.replay'],
    name: 'a key is claimed before the configuration is checked: the refused create, sent again, is idempotency_error',
    api: ((): Mutation => {
      const refused = new Set<string>();
      return {
        response: (m, r) => {
          const key = isCreate(m) ? m.headers['idempotency-key'] : undefined;
          if (key === undefined || r.status !== 400 || codeOf(r) === 'validation_failed') return r;
          const id = `${m.headers.authorization} ${key}`;
          if (refused.has(id)) return envelope(400, 'idempotency_error');
          refused.add(id);
          return r;
        },
      };
    })(),
  },
  {
    clauses: ['idem.conflict'],
    name: 'bodies under one key are compared on their money fields only (amount, reference)',
    api: ((): Mutation => {
      const first = new Map<string, any>();
      const money = (b: any) => JSON.stringify([b?.amount, b?.creditorReference?.reference]);
      return {
        request: (m) => {
          const key = m.headers['idempotency-key'];
          if (!isCreate(m) || !key) return m;
          const id = `${m.headers.authorization} ${key}`;
          const body = parse(m.body);
          if (!first.has(id)) first.set(id, body);
          return money(first.get(id)) === money(body) ? { ...m, body: JSON.stringify(first.get(id)) } : m;
        },
      };
    })(),
  },
  {
    clauses: ['idem.conflict', 'order.idempotency'],
    name: 'a different body under a used key replays the first result',
    api: ((): Mutation => {
      const first = new Map<string, string>();
      return {
        request: (m) => {
          const key = m.headers['idempotency-key'];
          if (!isCreate(m) || !key) return m;
          const id = `${m.headers.authorization} ${key}`;
          if (!first.has(id)) first.set(id, m.body);
          return { ...m, body: first.get(id)! };
        },
      };
    })(),
  },
  {
    clauses: ['order.validation', 'status.400'],
    name: 'validation failures are answered 422 invalid_request',
    api: {
      response: (_m, r) =>
        codeOf(r) === 'validation_failed' ? { ...editJson(r, (b) => recode(b, 'invalid_request')), status: 422 } : r,
    },
  },
  {
    clauses: ['code.validation-failed', 'err.details'],
    name: 'validation_failed comes without details',
    api: answers(
      (_m, r) => codeOf(r) === 'validation_failed',
      ({ error: { details: _, ...e } }) => ({ error: e }),
    ),
  },
  {
    clauses: ['order.currency-mismatch', 'code.currency-mismatch'],
    name: 'currency_mismatch is answered as validation_failed naming amount.currency',
    api: {
      response: (_m, r) =>
        codeOf(r) === 'currency_mismatch'
          ? editJson(r, (b) => ({
              error: {
                ...recode(b, 'validation_failed').error,
                param: 'amount.currency',
                details: [{ field: 'amount.currency', constraints: { equals: 'must be the settlement currency' } }],
              },
            }))
          : r,
    },
  },
  {
    clauses: ['order.card', 'code.card'],
    name: 'card is accepted on an organisation without card payments',
    api: accepts('card_not_enabled'),
  },
  {
    clauses: ['order.open-banking', 'code.open-banking'],
    name: 'open_banking_not_enabled is answered as card_not_enabled',
    api: recodes('open_banking_not_enabled', 'card_not_enabled'),
  },
  {
    clauses: ['order.settlement', 'code.settlement'],
    name: 'a bank rail without a settlement account is accepted',
    api: accepts('settlement_account_missing'),
  },
  {
    clauses: ['order.settlement', 'code.settlement'],
    name: 'a card session is refused settlement_account_missing when there is no settlement account',
    api: {
      response: (m, r, k) =>
        isCreate(m) &&
        r.status === 200 &&
        parse(m.body)?.checkoutMethod === 'card' &&
        k.orgOf(m)?.settings.settlementAccount === false
          ? envelope(400, 'settlement_account_missing')
          : r,
    },
  },
  {
    clauses: ['order.aud-first'],
    name: 'settlement_account_missing comes before open_banking_currency_unsupported',
    api: {
      response: (m, r, k) =>
        codeOf(r) === 'open_banking_currency_unsupported' && k.orgOf(m)?.settings.settlementAccount === false
          ? editJson(r, (b) => recode(b, 'settlement_account_missing'))
          : r,
    },
  },
  {
    clauses: ['order.401', 'read.errors'],
    name: 'a request without Authorization is answered 400',
    api: {
      response: (m, r) =>
        isApi(m) && !isToken(m) && !m.headers.authorization && r.status === 401 ? { ...r, status: 400 } : r,
    },
  },
  {
    clauses: ['order.500', 'status.500', 'code.internal'],
    name: 'internal_error is answered 503',
    api: { response: (_m, r) => (codeOf(r) === 'internal_error' ? { ...r, status: 503 } : r) },
  },
  // ---- GET /api/checkout-sessions/{id} ----
  {
    clauses: ['read.ok'],
    name: 'reads answer 202',
    api: { response: (m, r) => (isRead(m) && r.status === 200 ? { ...r, status: 202 } : r) },
  },
  {
    clauses: ['read.isolation', 'auth.isolation'],
    name: "another organisation's session is readable",
    api: watching((w) => ({
      response: (m, r, _k, forward) => {
        const id = pathOf(m).split('/').at(-1)!;
        const owner = w.owners.get(id);
        return isRead(m) && r.status === 404 && owner
          ? forward({ ...m, headers: { ...m.headers, authorization: `Bearer ${owner}` } })
          : r;
      },
    })),
  },
  {
    clauses: ['read.isolation', 'auth.isolation'],
    name: 'a session its owner read in the last five seconds is readable by anyone',
    api: ((): Mutation => {
      const recent = new Map<string, { reply: Reply; at: number }>();
      return {
        response: (m, r) => {
          if (!isRead(m)) return r;
          if (r.status === 200) recent.set(pathOf(m), { reply: r, at: Date.now() });
          const cached = recent.get(pathOf(m));
          return r.status === 404 && cached && Date.now() - cached.at < 5000 ? cached.reply : r;
        },
      };
    })(),
  },
  {
    clauses: ['code.not-found', 'status.404'],
    name: 'an unknown session id is answered 400 validation_failed naming id',
    api: {
      response: (m, r) => (isRead(m) && r.status === 404 ? envelope(400, 'validation_failed', 'id') : r),
    },
  },
  // ---- Payment links and legacy transactions ----
  {
    clauses: ['legacy.payload', 'legacy.webhook', 'ver.legacy'],
    name: 'the legacy body is signed',
    hook: {
      request: (m, k) => {
        const body = parse(m.body);
        if (!body || body.event !== undefined || m.headers['service-signature']) return m;
        const secret = k.secrets().at(-1) ?? 'whsec_x';
        const t = String(Math.floor(Date.now() / 1000));
        return { ...m, headers: { ...m.headers, 'service-signature': `t=${t},v1=${hmac(secret, t, m.body)}` } };
      },
    },
  },
  {
    clauses: ['legacy.retired', 'ver.retired'],
    name: 'the retired GET /api/transaction/{cs_id} answers 410',
    api: {
      response: (m, r) => (/^\/api\/transaction\/cs_/.test(pathOf(m)) && r.status === 404 ? { ...r, status: 410 } : r),
    },
  },
  {
    clauses: ['legacy.link'],
    name: 'GET /api/transaction/{link id} is 404 while the link is payable',
    api: {
      response: (m, r) =>
        m.method === 'GET' && /^\/api\/transaction\/[0-9a-f-]{36}$/.test(pathOf(m)) && r.status === 200
          ? envelope(404, 'not_found')
          : r,
    },
  },
  {
    clauses: ['receiver.post'],
    name: 'deliveries are sent as PUT',
    hook: { request: (m) => ({ ...m, method: 'PUT' }) },
  },
];

/**
 * The clause mutants of the service document's first sections: What the service does,
 * General conventions, Resources, and States and transitions (see ../clause-mutants.ts).
 */
import { randomUUID } from 'node:crypto';
import { isCreate, parse, pathOf } from '../conformance-variants.ts';
import { editJson, type Mutation } from '../mutating-proxy.ts';
import {
  type ClauseMutant,
  json,
  isRead,
  isToken,
  isApi,
  isSessionAnswer,
  codeOf,
  reply,
  envelope,
  answers,
  createsAs,
  sendEvent,
  accepts,
  deliveries,
  tokenOf,
  watching,
} from './kit.ts';

export const serviceClauseMutants: ClauseMutant[] = [
  // ---- What the service does ----
  {
    clauses: ['svc.rails', 'limit.open-banking-currency', 'order.aud', 'code.aud'],
    name: 'an organisation settling in AUD is given the bank rail',
    api: accepts('open_banking_currency_unsupported'),
  },
  {
    clauses: ['svc.read', 'read.confirm', 'state.completed'],
    name: 'a read of a paid session still says created',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => (b.status === 'completed' ? { ...b, status: 'created' } : b),
    ),
  },
  {
    clauses: ['state.pending'],
    name: 'a payment in flight reads created',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => (b.status === 'pending' ? { ...b, status: 'created' } : b),
    ),
  },
  {
    clauses: ['svc.hook', 'state.completed-webhook'],
    name: 'a payment completed by open banking sends no webhook',
    api: createsAs(
      (b) => typeof b.webhookUrl === 'string' && b.checkoutMethod === 'open_banking',
      ({ webhookUrl: _, ...b }) => b,
    ),
  },
  {
    clauses: ['svc.uuid', 'res.transaction', 'payload.transaction'],
    name: 'the webhook names the transaction by a 24-hex id, not a UUID',
    hook: deliveries((b) =>
      b.transactionId ? { ...b, transactionId: b.transactionId.replace(/-/g, '').slice(0, 24) } : b,
    ),
  },
  // ---- General conventions ----
  {
    clauses: ['conv.host'],
    name: 'live keys are served at another host: live-mode requests here answer 404',
    api: watching((w) => ({
      request: (m) => (isApi(m) && w.liveTokens.has(tokenOf(m) ?? '') ? envelope(404, 'not_found') : m),
    })),
  },
  {
    clauses: ['conv.mode', 'auth.mode', 'res.create.test-mode'],
    name: 'every session says testMode true, live keys included',
    api: answers(isSessionAnswer, (b) => ({ ...b, testMode: true })),
  },
  {
    clauses: ['conv.request-body', 'token.form', 'auth.exchange'],
    name: 'the token endpoint refuses a form-encoded body (415)',
    api: {
      request: (m) =>
        isToken(m) && String(m.headers['content-type']).includes('x-www-form-urlencoded')
          ? reply(415, { error: 'Unsupported media type' })
          : m,
    },
  },
  {
    clauses: ['conv.response-body'],
    name: 'token endpoint failures answer text/html',
    api: {
      response: (m, r) =>
        isToken(m) && r.status >= 400 ? { ...r, headers: { ...r.headers, 'content-type': 'text/html' } } : r,
    },
  },
  {
    clauses: ['conv.success', 'status.200', 'create.ok'],
    name: 'creates answer 201',
    api: { response: (m, r) => (isCreate(m) && r.status === 200 ? { ...r, status: 201 } : r) },
  },
  {
    clauses: ['conv.timestamps', 'res.read.created', 'res.read.updated'],
    name: 'reads give createdAt and updatedAt in New Zealand time (+13:00)',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => {
        const nz = (iso: string) => `${new Date(Date.parse(iso) + 13 * 3600_000).toISOString().slice(0, 19)}+13:00`;
        return { ...b, createdAt: nz(b.createdAt), updatedAt: nz(b.updatedAt) };
      },
    ),
  },
  {
    clauses: ['conv.amounts', 'res.create.amount'],
    name: 'amounts are answered in minor units (cents)',
    api: answers(isSessionAnswer, (b) => ({ ...b, amount: { ...b.amount, total: Math.round(b.amount.total * 100) } })),
  },
  {
    clauses: ['conv.webhook-address', 'target.none', 'create.webhook-url'],
    name: 'an account-wide endpoint: a payment without webhookUrl goes to the last one the organisation gave',
    api: ((): Mutation => {
      const last = new Map<string, string>();
      return {
        request: (m, k) => {
          const body = isCreate(m) ? parse(m.body) : undefined;
          const org = k.orgOf(m)?.id;
          if (!body || !org) return m;
          if (typeof body.webhookUrl === 'string') last.set(org, body.webhookUrl);
          else if (last.has(org)) return { ...m, body: JSON.stringify({ ...body, webhookUrl: last.get(org) }) };
          return m;
        },
      };
    })(),
  },
  {
    clauses: ['conv.error-body', 'err.code'],
    name: 'a 404 envelope has no code',
    api: answers(
      (_m, r) => r.status === 404 && Boolean(codeOf(r)),
      ({ error: { code: _, ...rest } }) => ({ error: rest }),
    ),
  },
  // ---- Resources ----
  {
    clauses: ['res.token.access', 'token.ok'],
    name: 'the token is answered as access_token',
    api: answers(
      (m, r) => isToken(m) && r.status === 200,
      ({ accessToken, ...b }) => ({ ...b, access_token: accessToken }),
    ),
  },
  {
    clauses: ['res.token.type'],
    name: 'tokenType is "JWT"',
    api: answers(
      (m, r) => isToken(m) && r.status === 200,
      (b) => ({ ...b, tokenType: 'JWT' }),
    ),
  },
  {
    clauses: ['res.token.expires'],
    name: 'expiresIn is a number of seconds',
    api: answers(
      (m, r) => isToken(m) && r.status === 200,
      (b) => ({ ...b, expiresIn: 300 }),
    ),
  },
  {
    clauses: ['res.create.id'],
    name: 'session ids have the prefix sess_',
    api: {
      request: (m) => ({ ...m, url: m.url.replace('/sess_', '/cs_') }),
      response: (m, r) =>
        isSessionAnswer(m, r) ? editJson(r, (b) => ({ ...b, id: b.id.replace(/^cs_/, 'sess_') })) : r,
    },
  },
  {
    clauses: ['res.create.status', 'state.created'],
    name: 'a new session is "open", not created',
    api: answers(isSessionAnswer, (b) => (b.status === 'created' ? { ...b, status: 'open' } : b)),
  },
  {
    clauses: ['res.create.url'],
    name: 'the create answer has no hosted page url',
    api: answers(
      (m, r) => isCreate(m) && r.status === 200,
      ({ url: _, ...b }) => b,
    ),
  },
  {
    clauses: ['res.create.code', 'create.code'],
    name: 'an omitted code is not generated: the create answers code ""',
    api: answers(
      (m, r) => isCreate(m) && r.status === 200 && parse(m.body)?.creditorReference?.code === undefined,
      (b) => ({ ...b, code: '' }),
    ),
  },
  {
    clauses: ['res.create.reference'],
    name: 'the create answer has no reference',
    api: answers(
      (m, r) => isCreate(m) && r.status === 200,
      ({ reference: _, ...b }) => b,
    ),
  },
  {
    clauses: ['res.create.expires', 'limit.session'],
    name: 'a session expires one hour after creation',
    api: answers(isSessionAnswer, (b) => ({
      ...b,
      expiresAt: new Date(Date.parse(b.expiresAt) - 23 * 3600_000).toISOString(),
    })),
  },
  {
    clauses: ['res.read.status'],
    name: 'a paid session reads "paid", a status of its own, instead of completed',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => (b.status === 'completed' ? { ...b, status: 'paid' } : b),
    ),
  },
  {
    clauses: ['res.read.particulars'],
    name: 'reads drop particulars',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      ({ particulars: _, ...b }) => b,
    ),
  },
  {
    clauses: ['res.read.transaction-type'],
    name: 'before completion transactionType reads the checkoutMethod',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => (b.status !== 'completed' && b.checkoutMethod === 'card' ? { ...b, transactionType: 'card' } : b),
    ),
  },
  {
    clauses: ['res.read.foreign-id', 'create.foreign-id'],
    name: 'reads do not echo foreignTransactionId',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => ({ ...b, foreignTransactionId: null }),
    ),
  },
  {
    clauses: ['res.link-id'],
    name: "a paid payment link's webhook names another transaction than the link",
    hook: deliveries((b) => (b.checkoutSessionId === null ? { ...b, transactionId: randomUUID() } : b)),
  },
  {
    clauses: ['res.link-no-session', 'payload.session'],
    name: "a paid payment link's webhook names a checkout session",
    hook: deliveries((b) =>
      b.checkoutSessionId === null && b.event ? { ...b, checkoutSessionId: 'cs_linked0001' } : b,
    ),
  },
  {
    clauses: ['res.link', 'link.endpoints'],
    name: 'a payment link cannot be read back (404)',
    api: {
      request: (m) =>
        m.method === 'GET' && /^\/api\/payment-links\/[^/]+$/.test(pathOf(m)) ? envelope(404, 'not_found') : m,
    },
  },
  // ---- States and transitions ----
  {
    clauses: ['state.failed', 'state.declined'],
    name: 'a declined attempt leaves the session reading created',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => (b.status === 'failed' ? { ...b, status: 'created' } : b),
    ),
  },
  {
    clauses: ['state.declined'],
    name: 'a decline is final: a later successful attempt leaves it failed',
    api: ((): Mutation => {
      const declined = new Set<string>();
      return {
        request: (m) => {
          const attempt = /^\/sandbox\/checkout-sessions\/([^/]+)\/attempts$/.exec(pathOf(m));
          if (attempt && parse(m.body)?.outcome === 'declined') declined.add(attempt[1]!);
          return m;
        },
        response: (m, r) =>
          isRead(m) && r.status === 200 && declined.has(json(r)?.id)
            ? editJson(r, (b) => (b.status === 'completed' ? { ...b, status: 'failed' } : b))
            : r,
      };
    })(),
  },
  {
    clauses: ['state.expired'],
    name: 'an unpaid session never expires',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => (b.status === 'expired' ? { ...b, status: 'created' } : b),
    ),
  },
  {
    clauses: ['state.expiry-silent'],
    name: 'expiry sends a checkout_session.expired webhook',
    api: ((): Mutation => {
      const hooks = new Map<string, string>();
      const sent = new Set<string>();
      return {
        response: async (m, r) => {
          const body = json(r);
          if (isCreate(m) && r.status === 200 && parse(m.body)?.webhookUrl)
            hooks.set(body.id, parse(m.body).webhookUrl);
          if (isRead(m) && body?.status === 'expired' && hooks.has(body.id) && !sent.has(body.id)) {
            sent.add(body.id);
            await sendEvent(hooks.get(body.id)!, 'checkout_session.expired', body.id);
          }
          return r;
        },
      };
    })(),
  },
  {
    clauses: ['res.create.method'],
    name: 'the create answer has no checkoutMethod',
    api: answers(
      (m, r) => isCreate(m) && r.status === 200,
      ({ checkoutMethod: _, ...b }) => b,
    ),
  },
  {
    clauses: ['res.read.id'],
    name: 'a read names the session by its transaction id',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => ({ ...b, id: randomUUID() }),
    ),
  },
  {
    clauses: ['res.read.code'],
    name: 'a read gives the reference as the code',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => ({ ...b, code: b.reference }),
    ),
  },
  {
    clauses: ['res.read.amount'],
    name: 'a read gives the amount without its currency',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => ({ ...b, amount: { total: b.amount.total } }),
    ),
  },
  {
    clauses: ['res.read.method'],
    name: 'a read gives checkoutMethod both whatever was asked',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => ({ ...b, checkoutMethod: 'both' }),
    ),
  },
  {
    clauses: ['res.read.test-mode'],
    name: 'a read leaves testMode out',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      ({ testMode: _, ...b }) => b,
    ),
  },
  {
    clauses: ['res.read.expires'],
    name: 'a read gives expiresAt an hour early',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => ({ ...b, expiresAt: new Date(Date.parse(b.expiresAt) - 3600_000).toISOString() }),
    ),
  },
  {
    clauses: ['read.id'],
    name: 'a session is read by its id without the cs_ prefix; its full cs_ id is not_found',
    api: {
      request: (m) => (isRead(m) && pathOf(m).includes('/cs_') ? envelope(404, 'not_found') : m),
    },
  },
  {
    clauses: ['res.read.reference'],
    name: 'a read gives the reference in lower case',
    api: answers(
      (m, r) => isRead(m) && r.status === 200,
      (b) => ({ ...b, reference: String(b.reference).toLowerCase() }),
    ),
  },
];

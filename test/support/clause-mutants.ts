/**
 * One broken variant (at least) per checkable clause of the service document, each
 * designed from the clause's own words rather than from a check: a mutating proxy between
 * the suite and the reference server (or between the server and the suite's receiver)
 * makes the server break that clause. test/e2e/conformance-clause-mutants.test.ts runs
 * them; the exploration's kill rates count them too.
 */
import { randomUUID } from 'node:crypto';
import { createRegistry } from '../../conformance/modes/run/checks/index.ts';
import { clausePartMutants } from './clause-part-mutants.ts';
import {
  extraAttempts,
  hmac,
  isCreate,
  parse,
  pathOf,
  recode,
  resign,
  secretOf,
  signatureParts,
} from './conformance-variants.ts';
import { editJson, type Knowledge, type Message, type Mutation, type Reply } from './mutating-proxy.ts';

export interface ClauseMutant {
  /** The clauses it breaks (a rule the document states twice is broken in both places). */
  clauses: string[];
  name: string;
  api?: Mutation;
  hook?: Mutation;
}

// ---- helpers: what a mutation looks at and how it answers ----

const json = (r: Reply) => parse(r.body);
const isRead = (m: Message) => m.method === 'GET' && /^\/api\/checkout-sessions\/[^/]+$/.test(pathOf(m));
const isToken = (m: Message) => pathOf(m) === '/api/token';
const isApi = (m: Message) => pathOf(m).startsWith('/api/');
const isSessionAnswer = (m: Message, r: Reply) => (isCreate(m) || isRead(m)) && r.status === 200;
const codeOf = (r: Reply) => json(r)?.error?.code as string | undefined;
const reply = (status: number, body: unknown, type = 'application/json'): Reply => ({
  status,
  headers: { 'content-type': type },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});
const envelope = (status: number, code: string, param: string | null = null): Reply =>
  reply(status, {
    error: { code, message: `${code} (mutant)`, param, doc_url: `http://127.0.0.1/docs/errors/#${code}` },
  });

/** Edits the JSON of replies that `when` picks. */
const answers = (
  when: (m: Message, r: Reply, k: Knowledge) => boolean,
  edit: (b: any, m: Message) => any,
): Mutation => ({
  response: (m, r, k) => (when(m, r, k) ? editJson(r, (b) => edit(b, m)) : r),
});

/** Rewrites create bodies that `when` picks before the server sees them (so it accepts what it should refuse). */
const createsAs = (when: (body: any) => boolean, fix: (body: any) => any): Mutation => ({
  request: (m) => {
    const body = isCreate(m) ? parse(m.body) : undefined;
    return body && when(body) ? { ...m, body: JSON.stringify(fix(body)) } : m;
  },
});

/** Replies with another error code (doc_url kept in step). */
const recodes = (from: string, to: string, status?: number): Mutation => ({
  response: (_m, r) => {
    if (codeOf(r) !== from) return r;
    const changed = editJson(r, (b) => recode(b, to));
    return status === undefined ? changed : { ...changed, status };
  },
});

/** An unsigned event of a kind the document says is never sent, posted to a session's webhookUrl. */
const sendEvent = (url: string, event: string, checkoutSessionId: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      event,
      createdAt: new Date().toISOString(),
      checkoutSessionId,
      transactionId: randomUUID(),
      foreignTransactionId: null,
    }),
  }).catch(() => undefined);

/** A session body as an accepting server would answer it. */
function acceptedSession(body: any) {
  const id = `cs_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
  return {
    id,
    status: 'created',
    url: `https://pay.example.com/${id}`,
    code: body?.creditorReference?.code ?? 'GEN-1',
    amount: { total: body?.amount?.total ?? 1, currency: body?.amount?.currency ?? 'NZD' },
    checkoutMethod: body?.checkoutMethod ?? 'card',
    reference: body?.creditorReference?.reference ?? 'REF',
    testMode: true,
    expiresAt: new Date(Date.now() + 24 * 3600_000).toISOString(),
  };
}
/** Answers a create refused with `code` as if it had been accepted. */
const accepts = (code: string): Mutation => ({
  response: (m, r) => (isCreate(m) && codeOf(r) === code ? reply(200, acceptedSession(parse(m.body))) : r),
});

/** Edits each signed delivery's body and signs it again with the same secret and t. */
const deliveries = (edit: (body: any, m: Message) => any): Mutation => ({
  request: (m, k) => {
    const body = parse(m.body);
    return m.method === 'POST' && body ? resign(m, k, JSON.stringify(edit(body, m))) : m;
  },
});

/** How far each organisation's clock was moved through the sandbox, and which tokens are live-mode. */
class Watch {
  readonly clock = new Map<string, number>();
  readonly liveClientIds = new Set<string>();
  readonly liveTokens = new Set<string>();
  /** Seconds the clock of the organisation behind a request had moved when each token was issued. */
  readonly issuedAt = new Map<string, number>();
  /** Session id → the token that created it. */
  readonly owners = new Map<string, string>();

  observe(m: Message, r: Reply, k: Knowledge): void {
    const body = json(r);
    const path = pathOf(m);
    const moved = /^\/sandbox\/organisations\/([^/]+)\/clock$/.exec(path);
    if (moved && r.status === 200)
      this.clock.set(moved[1]!, (this.clock.get(moved[1]!) ?? 0) + Number(parse(m.body)?.advanceSeconds ?? 0));
    if (path === '/sandbox/organisations' && body?.apiKeys?.live) this.liveClientIds.add(body.apiKeys.live.clientId);
    if (/\/api-keys$/.test(path) && parse(m.body)?.mode === 'live' && body?.clientId)
      this.liveClientIds.add(body.clientId);
    if (isToken(m) && body?.accessToken) {
      const clientId = new URLSearchParams(m.body).get('clientId') ?? '';
      if (this.liveClientIds.has(clientId)) this.liveTokens.add(body.accessToken);
      const org = k.orgByClientId.get(clientId);
      this.issuedAt.set(body.accessToken, org ? (this.clock.get(org.id) ?? 0) : 0);
    }
    if (isCreate(m) && r.status === 200 && body?.id) this.owners.set(body.id, tokenOf(m) ?? '');
  }

  /** Seconds the request's organisation clock has moved since its token was issued. */
  age(m: Message, k: Knowledge): number {
    const token = tokenOf(m);
    const org = k.orgOf(m);
    if (!token || !org || !this.issuedAt.has(token)) return 0;
    return (this.clock.get(org.id) ?? 0) - this.issuedAt.get(token)!;
  }
}
const tokenOf = (m: Message) => /^Bearer (.+)$/.exec(m.headers.authorization ?? '')?.[1];

/** A mutation that also keeps a Watch up to date. */
function watching(make: (w: Watch) => Mutation): Mutation {
  const w = new Watch();
  const inner = make(w);
  return {
    request: inner.request ? (m, k, f) => inner.request!(m, k, f) : undefined,
    response: async (m, r, k, f) => {
      w.observe(m, r, k);
      return inner.response ? inner.response(m, r, k, f) : r;
    },
    after: inner.after,
  } as Mutation;
}

const within = (lo: number, hi: number) => (s: unknown) => typeof s === 'string' && (s.length < lo || s.length > hi);

export const clauseMutants: ClauseMutant[] = [
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
  // ---- Events ----
  {
    clauses: ['target.test-mode', 'sig.header'],
    name: 'test-mode deliveries go unsigned',
    hook: {
      request: (m) => {
        const { 'service-signature': _, ...headers } = m.headers;
        return { ...m, headers };
      },
    },
  },
  {
    clauses: ['target.no-mode'],
    name: 'the payload says testMode',
    hook: deliveries((b) => (b.event ? { ...b, testMode: true } : b)),
  },
  {
    clauses: ['event.completed', 'payload.event'],
    name: 'the event is named payment.completed',
    hook: deliveries((b) => (b.event ? { ...b, event: 'payment.completed' } : b)),
  },
  {
    clauses: ['event.none'],
    name: 'a declined attempt sends checkout_session.failed to the webhookUrl',
    api: ((): Mutation => {
      const hooks = new Map<string, string>();
      return {
        response: async (m, r) => {
          if (isCreate(m) && r.status === 200 && parse(m.body)?.webhookUrl)
            hooks.set(json(r).id, parse(m.body).webhookUrl);
          const attempt = /^\/sandbox\/checkout-sessions\/([^/]+)\/attempts$/.exec(pathOf(m));
          const url = attempt ? hooks.get(attempt[1]!) : undefined;
          if (url && parse(m.body)?.outcome === 'declined')
            await sendEvent(url, 'checkout_session.failed', attempt![1]!);
          return r;
        },
      };
    })(),
  },
  {
    clauses: ['payload.small'],
    name: 'the payload is sent form-encoded',
    hook: {
      request: (m) => {
        const body = parse(m.body);
        return body
          ? {
              ...m,
              body: new URLSearchParams(body).toString(),
              headers: { ...m.headers, 'content-type': 'application/x-www-form-urlencoded' },
            }
          : m;
      },
    },
  },
  {
    clauses: ['payload.created'],
    name: 'createdAt is when the delivery is sent, in local time without a zone',
    hook: deliveries((b) => (b.createdAt ? { ...b, createdAt: new Date().toISOString().slice(0, 19) } : b)),
  },
  {
    clauses: ['payload.session'],
    name: 'the payload of a session payment has no checkoutSessionId',
    hook: deliveries((b) => {
      if (typeof b.checkoutSessionId !== 'string') return b;
      const { checkoutSessionId: _, ...rest } = b;
      return rest;
    }),
  },
  {
    clauses: ['sig.header'],
    name: 'the signature header is named X-Service-Signature',
    hook: {
      request: (m) => {
        const { 'service-signature': signature, ...headers } = m.headers;
        return signature ? { ...m, headers: { ...headers, 'x-service-signature': signature } } : m;
      },
    },
  },
  {
    clauses: ['sig.format'],
    name: 't is written in milliseconds',
    hook: {
      request: (m, k) => {
        const secret = secretOf(m, k);
        if (!secret) return m;
        const t = String(Date.now());
        return { ...m, headers: { ...m.headers, 'service-signature': `t=${t},v1=${hmac(secret, t, m.body)}` } };
      },
    },
  },
  {
    clauses: ['sig.format'],
    name: 'the header parts are written with a space after the comma',
    hook: {
      request: (m) => {
        const header = m.headers['service-signature'];
        return header ? { ...m, headers: { ...m.headers, 'service-signature': header.replace(/,/g, ', ') } } : m;
      },
    },
  },
  {
    clauses: ['sig.digest'],
    name: 'the digest is base64, not hex',
    hook: {
      request: (m) => {
        const parts = signatureParts(m.headers['service-signature']);
        return parts
          ? {
              ...m,
              headers: {
                ...m.headers,
                'service-signature': `t=${parts.t},v1=${Buffer.from(parts.v1, 'hex').toString('base64')}`,
              },
            }
          : m;
      },
    },
  },
  {
    clauses: ['sig.unsigned'],
    name: 'a delivery that cannot be signed is not sent',
    hook: {
      request: (m) => (m.headers['service-signature'] || !parse(m.body)?.event ? m : reply(200, {})),
    },
  },
  {
    clauses: ['ver.signature'],
    name: 'the signature is labelled v2 only (no v1)',
    hook: {
      request: (m) => {
        const parts = signatureParts(m.headers['service-signature']);
        return parts ? { ...m, headers: { ...m.headers, 'service-signature': `t=${parts.t},v2=${parts.v1}` } } : m;
      },
    },
  },
  // ---- Response and retry behaviour ----
  {
    clauses: ['retry.success'],
    name: 'a 2xx answer is taken as a failure: the card rail tries again',
    hook: { response: (_m, r) => (r.status >= 200 && r.status < 300 ? { ...r, status: 500 } : r) },
  },
  {
    clauses: ['retry.wait', 'limit.webhook-wait'],
    name: 'the sender never gives up waiting: an answer held past five seconds counts as delivered',
    hook: {
      request: async (m, _k, forward) => {
        const answer = forward(m);
        const early = await Promise.race([answer, new Promise<undefined>((resolve) => setTimeout(resolve, 4500))]);
        return early ?? reply(200, {});
      },
    },
  },
  {
    clauses: ['retry.failure'],
    name: 'a 500 answer counts as delivered',
    hook: { response: (_m, r) => (r.status >= 500 ? { ...r, status: 200 } : r) },
  },
  {
    clauses: ['retry.card', 'limit.card-attempts'],
    name: 'the card rail never retries',
    hook: ((): Mutation => {
      const seen = new Set<string>();
      return {
        request: (m) => {
          const first = !seen.has(m.url);
          seen.add(m.url);
          return first ? m : reply(200, {});
        },
      };
    })(),
  },
  {
    clauses: ['retry.open-banking', 'limit.open-banking-attempts'],
    name: 'the open banking rail retries a 408',
    ...extraAttempts((m, r) => r.status === 408 && /open_banking|HOOK-019/.test(m.url)),
  },
  {
    clauses: ['retry.open-banking'],
    name: 'a both session paid by open banking is delivered from the card queue: retried after a 500',
    ...(() => {
      // The API side learns which webhook addresses belong to both sessions; their failed
      // deliveries are made again, as the card queue would, and recorded so.
      const both = new Set<string>();
      const repeat = extraAttempts((m, r) => r.status === 500 && both.has(pathOf(m)));
      return {
        hook: repeat.hook,
        api: {
          response: (m: Message, r: Reply, k: Knowledge, f: (m: Message) => Promise<Reply>) => {
            const body = isCreate(m) ? parse(m.body) : undefined;
            if (body?.checkoutMethod === 'both' && typeof body.webhookUrl === 'string')
              both.add(new URL(body.webhookUrl).pathname);
            return repeat.api.response!(m, r, k, f);
          },
        },
      };
    })(),
  },
  {
    clauses: ['retry.final'],
    name: 'a 429 is taken as final',
    hook: { response: (_m, r) => (r.status === 429 ? { ...r, status: 400 } : r) },
  },
  // ---- Errors ----
  {
    clauses: ['err.message'],
    name: 'errors have no message',
    api: answers(
      (_m, r) => Boolean(codeOf(r)),
      ({ error: { message: _, ...e } }) => ({ error: e }),
    ),
  },
  {
    clauses: ['err.param'],
    name: 'param is left out when no single field is to blame',
    api: answers(
      (_m, r) => Boolean(codeOf(r)) && json(r).error.param === null,
      ({ error: { param: _, ...e } }) => ({ error: e }),
    ),
  },
  {
    clauses: ['err.doc-url'],
    name: 'doc_url points at one page for every code',
    api: answers(
      (_m, r) => Boolean(codeOf(r)),
      (b) => ({ error: { ...b.error, doc_url: String(b.error.doc_url).replace(/#.*$/, '#errors') } }),
    ),
  },
  {
    clauses: ['err.details'],
    name: 'currency_mismatch carries an empty details list',
    api: answers(
      (_m, r) => codeOf(r) === 'currency_mismatch',
      (b) => ({ error: { ...b.error, details: [] } }),
    ),
  },
  {
    clauses: ['err.details-entry'],
    name: 'details constraints are a list of messages',
    api: answers(
      (_m, r) => codeOf(r) === 'validation_failed',
      (b) => ({
        error: {
          ...b.error,
          details: b.error.details.map((d: any) => ({ ...d, constraints: Object.values(d.constraints) })),
        },
      }),
    ),
  },
  // ---- Versioning ----
  {
    clauses: ['ver.unversioned'],
    name: 'every endpoint wants an Api-Version header',
    api: {
      request: (m) => (isApi(m) && !m.headers['api-version'] ? envelope(400, 'validation_failed', 'Api-Version') : m),
    },
  },
  // The parts of clauses a looser reading leaves unjudged.
  ...clausePartMutants,
];

/**
 * One exchange of each kind of answer the document names (a token, each 401 code's cause,
 * a create and a read, not_found, validation_failed, a configuration code,
 * currency_mismatch, idempotency_error), so that the response checks, which judge every answer of the run,
 * have each kind to judge whatever section is selected.
 */
export const BASELINE = [
  'TOKEN-001',
  'TOKEN-003',
  'AUTH-001',
  'READ-001',
  'READ-002',
  'VAL-001',
  'CFG-001',
  'CFG-006',
  'IDEM-002',
];

/**
 * What a run for the mutant selects: every check citing a clause the mutant breaks, and the
 * baseline. A mutant caught only by a check that cites none of its clauses would say the
 * register misses a citation, so it counts as not caught.
 */
export function selectionFor(mutant: ClauseMutant): string {
  return createRegistry()
    .all()
    .filter((c) => BASELINE.includes(c.id) || c.clauses.some((id) => mutant.clauses.includes(id)))
    .map((c) => c.id)
    .join(',');
}

/** Each mutant's exit code: 1 a must check failed, 2 the suite could not judge, 0 it passed. */

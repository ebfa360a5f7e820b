/**
 * What the clause mutants are made of: the shape of one, and helpers for what a mutation
 * looks at (a create, a read, the token endpoint) and how it answers (an envelope, an
 * edited body, a delivery signed again).
 */
import { randomUUID } from 'node:crypto';
import { isCreate, parse, pathOf, recode, resign } from '../conformance-variants.ts';
import { editJson, type Knowledge, type Message, type Mutation, type Reply } from '../mutating-proxy.ts';

export interface ClauseMutant {
  /** The clauses it breaks (a rule the document states twice is broken in both places). */
  clauses: string[];
  name: string;
  api?: Mutation;
  hook?: Mutation;
}

export const json = (r: Reply) => parse(r.body);
export const isRead = (m: Message) => m.method === 'GET' && /^\/api\/checkout-sessions\/[^/]+$/.test(pathOf(m));
export const isToken = (m: Message) => pathOf(m) === '/api/token';
export const isApi = (m: Message) => pathOf(m).startsWith('/api/');
export const isSessionAnswer = (m: Message, r: Reply) => (isCreate(m) || isRead(m)) && r.status === 200;
export const codeOf = (r: Reply) => json(r)?.error?.code as string | undefined;
export const reply = (status: number, body: unknown, type = 'application/json'): Reply => ({
  status,
  headers: { 'content-type': type },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});
export const envelope = (status: number, code: string, param: string | null = null): Reply =>
  reply(status, {
    error: { code, message: `${code} (mutant)`, param, doc_url: `http://127.0.0.1/docs/errors/#${code}` },
  });

/** Edits the JSON of replies that `when` picks. */
export const answers = (
  when: (m: Message, r: Reply, k: Knowledge) => boolean,
  edit: (b: any, m: Message) => any,
): Mutation => ({
  response: (m, r, k) => (when(m, r, k) ? editJson(r, (b) => edit(b, m)) : r),
});

/** Rewrites create bodies that `when` picks before the server sees them (so it accepts what it should refuse). */
export const createsAs = (when: (body: any) => boolean, fix: (body: any) => any): Mutation => ({
  request: (m) => {
    const body = isCreate(m) ? parse(m.body) : undefined;
    return body && when(body) ? { ...m, body: JSON.stringify(fix(body)) } : m;
  },
});

/** Replies with another error code (doc_url kept in step). */
export const recodes = (from: string, to: string, status?: number): Mutation => ({
  response: (_m, r) => {
    if (codeOf(r) !== from) return r;
    const changed = editJson(r, (b) => recode(b, to));
    return status === undefined ? changed : { ...changed, status };
  },
});

/** An unsigned event of a kind the document says is never sent, posted to a session's webhookUrl. */
export const sendEvent = (url: string, event: string, checkoutSessionId: string) =>
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
export function acceptedSession(body: any) {
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
export const accepts = (code: string): Mutation => ({
  response: (m, r) => (isCreate(m) && codeOf(r) === code ? reply(200, acceptedSession(parse(m.body))) : r),
});

/** Edits each signed delivery's body and signs it again with the same secret and t. */
export const deliveries = (edit: (body: any, m: Message) => any): Mutation => ({
  request: (m, k) => {
    const body = parse(m.body);
    return m.method === 'POST' && body ? resign(m, k, JSON.stringify(edit(body, m))) : m;
  },
});

/** How far each organisation's clock was moved through the sandbox, and which tokens are live-mode. */
export class Watch {
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
export const tokenOf = (m: Message) => /^Bearer (.+)$/.exec(m.headers.authorization ?? '')?.[1];

/** A mutation that also keeps a Watch up to date. */
export function watching(make: (w: Watch) => Mutation): Mutation {
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

export const within = (lo: number, hi: number) => (s: unknown) =>
  typeof s === 'string' && (s.length < lo || s.length > hi);

/**
 * Defects that hide in a combination (across organisations, after the clock moved, on a
 * repeated value, after a payment), which the exploration (EXPL-001) must find and the
 * hand-written checks, which each try one situation, pass, unless the mutant names the fixed
 * checks that now ask that situation too (caughtByHand). Made by a mutating proxy between the suite and the reference server.
 */
import { isCreate, parse, pathOf } from './conformance-variants.ts';
import type { Knowledge, Message, Mutation, Reply } from './mutating-proxy.ts';

export interface ExplorationMutant {
  name: string;
  /** The clauses it breaks. */
  clauses: string[];
  api: Mutation;
  /**
   * The fixed checks that catch it too, once a class of input it hides in is asked every
   * run (the organisation a key comes from: ORG-002); the others, none does.
   */
  caughtByHand?: string[];
}

const idempotencyKey = (m: Message) => m.headers['idempotency-key'];
const bearer = (m: Message) => /^Bearer (.+)$/.exec(m.headers.authorization ?? '')?.[1];
const envelope = (status: number, code: string): Reply => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    error: { code, message: `${code} (mutant)`, param: null, doc_url: `http://127.0.0.1/docs/errors/#${code}` },
  }),
});

/** Idempotency-Keys remembered across organisations: an identical body under another organisation's key replays its session. */
function keysAcrossOrganisations(): Mutation {
  const first = new Map<string, { org: string; reply: Reply }>();
  return {
    request: (m, k) => {
      const key = idempotencyKey(m);
      const org = k.orgOf(m)?.id;
      if (!isCreate(m) || !key || !org) return m;
      const seen = first.get(`${key}\n${m.body}`);
      return seen && seen.org !== org ? seen.reply : m;
    },
    response: (m, r, k) => {
      const key = idempotencyKey(m);
      const org = k.orgOf(m)?.id;
      const id = `${key}\n${m.body}`;
      if (isCreate(m) && key && org && r.status === 200 && !first.has(id)) first.set(id, { org, reply: r });
      return r;
    },
  };
}

/** Seconds each organisation's clock has moved, learnt from the sandbox calls. */
function clocks(): { moved: Map<string, number>; watch(m: Message, r: Reply): void } {
  const moved = new Map<string, number>();
  return {
    moved,
    watch(m, r) {
      const clock = /^\/sandbox\/organisations\/([^/]+)\/clock$/.exec(pathOf(m));
      if (clock && r.status === 200)
        moved.set(clock[1]!, (moved.get(clock[1]!) ?? 0) + Number(parse(m.body)?.advanceSeconds ?? 0));
    },
  };
}

/**
 * A key forgets its body once the organisation's clock has moved a little (under an hour
 * since its first use): a different body under it then makes a new session instead of
 * idempotency_error. (A move of a day is judged by hand; a few minutes is not.)
 */
function conflictForgottenAfterSmallMove(): Mutation {
  const clock = clocks();
  const firstUse = new Map<string, number>();
  return {
    request: async (m, k, forward) => {
      const key = idempotencyKey(m);
      const org = k.orgOf(m)?.id;
      if (!isCreate(m) || !key || !org) return m;
      const now = clock.moved.get(org) ?? 0;
      const since = firstUse.get(`${org}\n${key}`);
      if (since === undefined) {
        firstUse.set(`${org}\n${key}`, now);
        return m;
      }
      const reply = await forward(m);
      const moved = now - since;
      if (reply.status === 400 && parse(reply.body)?.error?.code === 'idempotency_error' && moved > 0 && moved < 3600) {
        const { 'idempotency-key': _dropped, ...headers } = m.headers;
        return forward({ ...m, headers });
      }
      return reply;
    },
    response: (m, r) => {
      clock.watch(m, r);
      return r;
    },
  };
}

/**
 * Sessions are seen only by the key that made them: a token of another test key of the
 * same organisation (one made by createApiKey) reads them as 404.
 */
function sessionsScopedToTheKey(): Mutation {
  const clientOfToken = new Map<string, string>();
  const clientOfSession = new Map<string, string>();
  const madeLater = new Set<string>();
  return {
    response: (m, r) => {
      const body = parse(r.body);
      if (r.status !== 200 || !body) return r;
      const read = /^\/api\/checkout-sessions\/([^/]+)$/.exec(pathOf(m));
      if (m.method === 'GET' && read) {
        // Only where the server took the read: its other answers (a removed key...) stand.
        const reader = clientOfToken.get(bearer(m) ?? '');
        const maker = clientOfSession.get(decodeURIComponent(read[1]!));
        return reader && maker && reader !== maker && madeLater.has(reader) ? envelope(404, 'not_found') : r;
      }
      if (pathOf(m) === '/api/token' && typeof body.accessToken === 'string')
        clientOfToken.set(body.accessToken, new URLSearchParams(m.body).get('clientId') ?? '');
      if (/^\/sandbox\/organisations\/[^/]+\/api-keys$/.test(pathOf(m)) && parse(m.body)?.mode === 'test')
        madeLater.add(body.clientId);
      if (isCreate(m) && typeof body.id === 'string') {
        const maker = clientOfToken.get(bearer(m) ?? '');
        if (maker) clientOfSession.set(body.id, maker);
      }
      return r;
    },
  };
}

/** A key's replay once its session was paid makes a new session (the stored result is dropped on payment). */
function replayAfterPaymentMakesNewSession(): Mutation {
  const sessionOfKey = new Map<string, string>();
  const paid = new Set<string>();
  return {
    request: (m, k) => {
      const key = idempotencyKey(m);
      const org = k.orgOf(m)?.id;
      if (!isCreate(m) || !key || !org) return m;
      const session = sessionOfKey.get(`${org}\n${key}`);
      if (!session || !paid.has(session)) return m;
      const { 'idempotency-key': _dropped, ...headers } = m.headers;
      return { ...m, headers };
    },
    response: (m, r, k: Knowledge) => {
      const key = idempotencyKey(m);
      const org = k.orgOf(m)?.id;
      const body = parse(r.body);
      if (isCreate(m) && key && org && r.status === 200 && !sessionOfKey.has(`${org}\n${key}`))
        sessionOfKey.set(`${org}\n${key}`, body.id);
      const attempt = /^\/sandbox\/checkout-sessions\/([^/]+)\/attempts$/.exec(pathOf(m));
      if (attempt && r.status === 200 && parse(m.body)?.outcome === 'succeeded') paid.add(attempt[1]!);
      return r;
    },
  };
}

/** transactionType tells the rail of the first attempt, not of the one that paid (a declined card, then open banking). */
function transactionTypeOfFirstAttempt(): Mutation {
  const firstRail = new Map<string, string>();
  return {
    response: (m, r) => {
      const attempt = /^\/sandbox\/checkout-sessions\/([^/]+)\/attempts$/.exec(pathOf(m));
      if (attempt && r.status === 200 && !firstRail.has(attempt[1]!)) firstRail.set(attempt[1]!, parse(m.body)?.rail);
      const read = /^\/api\/checkout-sessions\/([^/]+)$/.exec(pathOf(m));
      const body = parse(r.body);
      const rail = read ? firstRail.get(decodeURIComponent(read[1]!)) : undefined;
      if (m.method !== 'GET' || !rail || r.status !== 200 || body?.status !== 'completed') return r;
      return { ...r, body: JSON.stringify({ ...body, transactionType: rail }) };
    },
  };
}

export const explorationMutants: ExplorationMutant[] = [
  {
    name: 'Idempotency-Keys are shared by organisations: an identical body under a key another organisation used replays its session',
    clauses: ['auth.isolation', 'idem.replay'],
    api: keysAcrossOrganisations(),
    caughtByHand: ['ORG-002'],
  },
  {
    name: 'a key forgets its body after a small clock move: a different body under it makes a new session',
    clauses: ['idem.conflict', 'limit.idempotency'],
    api: conflictForgottenAfterSmallMove(),
  },
  {
    name: 'a session is read back only with the key that made it: another test key of its organisation gets 404',
    clauses: ['read.ok', 'auth.isolation'],
    api: sessionsScopedToTheKey(),
  },
  {
    name: 'a replay after the session was paid makes a new session',
    clauses: ['idem.replay', 'create.one'],
    api: replayAfterPaymentMakesNewSession(),
  },
  {
    name: 'transactionType tells the rail of the first attempt, not the one that paid',
    clauses: ['res.read.transaction-type'],
    api: transactionTypeOfFirstAttempt(),
  },
];

/**
 * Broken variants for the parts of clauses a looser reading leaves unjudged, each designed
 * from the clause's words like those of clause-mutants.ts (which lists these with its own):
 * what counts as an answer to a delivery ("Any 2xx status"; "Any other status"; "A 4xx
 * other than 408 or 429 is treated as final"), the order of completion and its webhook
 * ("a prompt to read"), the token endpoint's identical answer down to its headers, and a
 * value the service makes (a generated `code`) held to the rule of the field.
 */
import type { ClauseMutant } from './clause-mutants.ts';
import { isCreate, parse, pathOf } from './conformance-variants.ts';
import { editJson, type Knowledge, type Message, type Mutation, type Reply } from './mutating-proxy.ts';

const isRead = (m: Message) => m.method === 'GET' && /^\/api\/checkout-sessions\/[^/]+$/.test(pathOf(m));
const isToken = (m: Message) => pathOf(m) === '/api/token';
const clientIdOf = (m: Message) => new URLSearchParams(m.body).get('clientId') ?? '';

/** The sender sees another status than the receiver gave, where `when` picks the receiver's answer. */
const senderSees = (when: (r: Reply) => boolean, status: number): Mutation => ({
  response: (_m, r) => (when(r) ? { ...r, status } : r),
});

/**
 * A sender that follows a redirect as a browser would: 307 and 308 repeat the POST at the
 * Location, the others turn it into a GET; the answer there is the one it takes.
 */
const followsRedirects: Mutation = {
  request: async (m, _k, forward) => {
    const r = await forward(m);
    const location = r.headers.location;
    if (r.status < 300 || r.status > 399 || !location || !URL.canParse(location)) return r;
    const { pathname, search } = new URL(location);
    const repeat = r.status === 307 || r.status === 308;
    return forward({ ...m, url: `${pathname}${search}`, ...(repeat ? {} : { method: 'GET', body: '' }) });
  },
};

/**
 * A target that commits a payment's status only once its delivery is answered: while a
 * delivery naming the session waits for its answer, the session still reads pending.
 */
function statusAfterDelivery(): Pick<ClauseMutant, 'api' | 'hook'> {
  const waiting = new Map<string, number>();
  return {
    hook: {
      request: async (m, _k, forward) => {
        const id = parse(m.body)?.checkoutSessionId;
        if (typeof id !== 'string') return m;
        waiting.set(id, (waiting.get(id) ?? 0) + 1);
        try {
          return await forward(m);
        } finally {
          waiting.set(id, waiting.get(id)! - 1);
        }
      },
    },
    api: {
      response: (m, r) =>
        isRead(m) && r.status === 200
          ? editJson(r, (b) =>
              b.status === 'completed' && (waiting.get(b.id) ?? 0) > 0
                ? { ...b, status: 'pending', transactionType: 'open_banking' }
                : b,
            )
          : r,
    },
  };
}

/** Codes made for sessions created without one, each given a form outside the field's rule (the same on every read). */
function generatedCodesOutOfRule(): Mutation {
  const generated = new Set<string>();
  const outOfRule = (code: string) => `generated_${code}`;
  return {
    response: (m, r) => {
      if (r.status !== 200) return r;
      if (isCreate(m) && parse(m.body)?.creditorReference?.code === undefined)
        return editJson(r, (b) => {
          if (typeof b.code !== 'string') return b;
          generated.add(b.code);
          return { ...b, code: outOfRule(b.code) };
        });
      if (isRead(m)) return editJson(r, (b) => (generated.has(b.code) ? { ...b, code: outOfRule(b.code) } : b));
      return r;
    },
  };
}

const isKnownClient = (m: Message, k: Knowledge) => k.orgByClientId.has(clientIdOf(m));

export const clausePartMutants: ClauseMutant[] = [
  // ---- Response and retry behaviour: what counts as an answer ----
  {
    clauses: ['retry.success'],
    name: 'only 200 counts as delivered: a 201, 202 or 204 is retried on the card rail',
    hook: senderSees((r) => r.status > 200 && r.status < 300, 500),
  },
  {
    clauses: ['retry.success'],
    name: 'a 2xx with no body is taken as a failure',
    hook: senderSees((r) => r.status >= 200 && r.status < 300 && r.body === '', 502),
  },
  {
    clauses: ['retry.failure'],
    name: 'a redirect counts as delivered: a card delivery answered 302 or 307 is not retried',
    hook: senderSees((r) => r.status >= 300 && r.status < 400, 200),
  },
  {
    clauses: ['retry.failure', 'receiver.post'],
    name: 'the sender follows a redirect to its Location',
    hook: followsRedirects,
  },
  {
    clauses: ['retry.failure'],
    name: 'a 503 counts as delivered',
    hook: senderSees((r) => r.status === 503, 200),
  },
  {
    clauses: ['retry.final'],
    name: 'only 400 is final: a card delivery answered 404 or 410 is retried',
    hook: senderSees((r) => r.status === 404 || r.status === 410, 500),
  },
  // ---- What the service does, States and transitions: the order of completion and its webhook ----
  {
    clauses: ['svc.prompt', 'state.completed-webhook', 'event.completed'],
    name: 'the status is committed once the delivery is answered: a read made while it waits says pending',
    ...statusAfterDelivery(),
  },
  // ---- POST /api/token: the identical answer ----
  {
    clauses: ['token.identical'],
    name: 'the 401 for a wrong secret carries a WWW-Authenticate header the unknown client id’s lacks',
    api: {
      response: (m, r, k) =>
        isToken(m) && r.status === 401 && isKnownClient(m, k)
          ? { ...r, headers: { ...r.headers, 'www-authenticate': 'Form realm="api", error="invalid_client_secret"' } }
          : r,
    },
  },
  // ---- POST /api/checkout-sessions: values the service makes ----
  {
    clauses: ['create.code', 'res.create.code', 'limit.code'],
    name: 'a generated code reads generated_ and the code: over 12 characters, with an underscore',
    api: generatedCodesOutOfRule(),
  },
];

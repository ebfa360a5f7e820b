/**
 * Clause mutants of the input space (conformance/modes/run/input-space.ts): each refuses, or
 * answers otherwise, a class of input the document allows, or answers a request from one
 * organisation (or mode) with another's resource, or contradicts what the target's own
 * harness acknowledged. One per input class kind and per configuration cell kind; each is
 * caught by the checks citing the clauses it breaks (see ../clause-mutants.ts).
 */
import { isCreate, parse, pathOf } from '../conformance-variants.ts';
import { editJson, type Message, type Mutation, type Reply } from '../mutating-proxy.ts';
import { type ClauseMutant, envelope, isRead, isToken } from './kit.ts';

const mediaOf = (m: Message) => m.headers['content-type'] ?? '';

/** Refuses a request `when` says, as the target would refuse a body it cannot read. */
const refuses = (when: (m: Message) => boolean, status = 400, code = 'validation_failed'): Mutation => ({
  request: (m) => (when(m) ? envelope(status, code) : m),
});

/**
 * A create's answer replaced by the first one given for the same Idempotency-Key and body
 * across `across`: another organisation's, or (within one organisation) the other mode's.
 */
function keyedAcross(across: 'organisation' | 'mode'): Mutation {
  const first = new Map<string, { body: string; org: string; testMode: unknown }>();
  return {
    response: (m, r, k) => {
      const key = m.headers['idempotency-key'];
      const org = k.orgOf(m)?.id;
      if (!isCreate(m) || !key || !org || r.status !== 200) return r;
      const testMode = parse(r.body)?.testMode;
      const seen = first.get(`${key}\0${m.body}`);
      if (!seen) {
        first.set(`${key}\0${m.body}`, { body: r.body, org, testMode });
        return r;
      }
      const leaks = across === 'organisation' ? seen.org !== org : seen.org === org && seen.testMode !== testMode;
      return leaks ? { ...r, body: seen.body } : r;
    },
  };
}

export const inputClauseMutants: ClauseMutant[] = [
  // ---- ids of other forms ----
  {
    clauses: ['code.not-found', 'read.errors'],
    name: 'a session id without the cs_ prefix is refused 400 validation_failed, not answered not_found',
    api: refuses((m) => isRead(m) && !/^\/api\/checkout-sessions\/cs_/.test(pathOf(m))),
  },
  {
    clauses: ['code.not-found', 'link.endpoints'],
    name: 'a payment link id that is no UUID is refused 400 validation_failed, not answered not_found',
    api: refuses(
      (m) =>
        m.method === 'GET' &&
        /^\/api\/payment-links\//.test(pathOf(m)) &&
        !/^\/api\/payment-links\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(pathOf(m)),
    ),
  },
  // ---- field values alone ----
  {
    clauses: ['create.reference'],
    name: 'a reference with an apostrophe or an @ (characters its class allows) is refused validation_failed naming it',
    api: refuses((m) => isCreate(m) && /['@]/.test(String(parse(m.body)?.creditorReference?.reference ?? ''))),
  },
  // ---- header forms ----
  {
    clauses: ['auth.bearer'],
    name: 'an Authorization header whose scheme is written bearer is refused 400 validation_failed',
    api: refuses((m) => /^bearer /.test(m.headers.authorization ?? '')),
  },
  {
    clauses: ['idem.replay'],
    name: 'an Idempotency-Key longer than 64 characters is dropped: each create with it makes a new session',
    api: {
      request: (m) => {
        const key = m.headers['idempotency-key'];
        if (!isCreate(m) || key === undefined || key.length <= 64) return m;
        const { 'idempotency-key': _dropped, ...headers } = m.headers;
        return { ...m, headers };
      },
    },
  },
  // ---- media types ----
  {
    clauses: ['conv.request-body'],
    name: 'a create sent as application/json; charset=utf-8 is refused: only the bare media type is read',
    api: refuses((m) => isCreate(m) && /;/.test(mediaOf(m)), 415, 'validation_failed'),
  },
  {
    clauses: ['conv.request-body'],
    name: 'a create whose media type is written Application/JSON is refused: its letter case is taken as meaningful',
    api: refuses((m) => isCreate(m) && /[A-Z]/.test(mediaOf(m).split(';')[0]!)),
  },
  {
    clauses: ['token.form'],
    name: 'a token request sent as x-www-form-urlencoded; charset=UTF-8 is refused',
    api: {
      request: (m) =>
        isToken(m) && /;/.test(mediaOf(m))
          ? {
              status: 400,
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({
                error: 'Invalid credentials - missing or malformed clientId/clientSecret',
              }),
            }
          : m,
    },
  },
  // ---- query parameters ----
  {
    clauses: ['read.ok'],
    name: 'a read with a query parameter the document does not name is refused 400 validation_failed',
    api: refuses((m) => isRead(m) && m.url.includes('?')),
  },
  {
    clauses: ['create.ok'],
    name: 'a create with a query parameter the document does not name is refused 400 validation_failed',
    api: refuses((m) => isCreate(m) && m.url.includes('?')),
  },
  // ---- the configuration table's cells that must succeed ----
  {
    clauses: ['create.ok', 'create.checkout-method'],
    name: 'an organisation without card payments is refused an open_banking session with card_not_enabled',
    api: {
      request: (m, k) =>
        isCreate(m) && parse(m.body)?.checkoutMethod === 'open_banking' && k.orgOf(m)?.settings.cardEnabled === false
          ? envelope(400, 'card_not_enabled')
          : m,
    },
  },
  {
    clauses: ['create.currency'],
    name: 'an AUD organisation’s create without a currency is refused currency_mismatch, not filled in',
    api: {
      request: (m, k) =>
        isCreate(m) &&
        parse(m.body)?.amount?.currency === undefined &&
        k.orgOf(m)?.settings.settlementCurrency === 'AUD'
          ? envelope(400, 'currency_mismatch')
          : m,
    },
  },
  {
    clauses: ['create.ok', 'order.aud-first'],
    name: 'an AUD organisation is refused a card session with open_banking_currency_unsupported (a bank rail’s code)',
    api: {
      request: (m, k) =>
        isCreate(m) && parse(m.body)?.checkoutMethod === 'card' && k.orgOf(m)?.settings.settlementCurrency === 'AUD'
          ? envelope(400, 'open_banking_currency_unsupported')
          : m,
    },
  },
  // ---- the organisation and mode a request comes from ----
  {
    clauses: ['auth.isolation'],
    name: 'another organisation’s Idempotency-Key with an identical body is answered with the first organisation’s session',
    api: keyedAcross('organisation'),
  },
  {
    clauses: ['auth.mode'],
    name: 'a live create with the test create’s Idempotency-Key and body is answered with the test session',
    api: keyedAcross('mode'),
  },
  {
    clauses: ['read.isolation'],
    name: 'a payment link its owner has read is readable by another organisation',
    api: (() => {
      const owners = new Map<string, string>();
      return {
        response: (m, r, k) => {
          if (m.method !== 'GET' || !/^\/api\/payment-links\/[^/]+$/.test(pathOf(m))) return r;
          const org = k.orgOf(m)?.id;
          if (r.status === 200 && org) owners.set(pathOf(m), r.body);
          const owned = owners.get(pathOf(m));
          return r.status === 404 && owned !== undefined ? { ...r, status: 200, body: owned } : r;
        },
      };
    })(),
  },
  {
    clauses: ['link.endpoints', 'legacy.retired'],
    name: 'a paid session’s transactionId reads as a payment link',
    api: {
      response: (m, r, k) =>
        m.method === 'GET' &&
        /^\/api\/payment-links\/[0-9a-f-]{36}$/.test(pathOf(m)) &&
        r.status === 404 &&
        k.orgOf(m) !== undefined
          ? {
              status: 200,
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ id: pathOf(m).split('/').at(-1), status: 'completed' }),
            }
          : r,
    },
  },
  // ---- what the target's own harness acknowledged ----
  {
    clauses: ['state.declined'],
    name: 'after a declined attempt a session reads failed for good, though the harness answers a later attempt completed',
    api: (() => {
      const failed = new Set<string>();
      return {
        response: (m: Message, r: Reply): Reply => {
          const attempt = /^\/sandbox\/checkout-sessions\/([^/]+)\/attempts$/.exec(pathOf(m));
          if (attempt && r.status === 200) {
            if (parse(m.body)?.outcome === 'declined') failed.add(attempt[1]!);
            // The harness says where the payer went as the service would: nowhere that shows it.
            return failed.has(attempt[1]!) ? editJson(r, (b) => ({ ...b, redirectTo: null })) : r;
          }
          const id = /^\/api\/checkout-sessions\/([^/]+)$/.exec(pathOf(m))?.[1];
          return m.method === 'GET' && id && failed.has(id) && r.status === 200
            ? editJson(r, (b) => ({ ...b, status: 'failed' }))
            : r;
        },
      };
    })(),
  },
];

/**
 * Broken variants of the reference server, made by mutating proxies between the suite
 * and the server and between the server and the suite's receiver, each named with the
 * checks meant to catch it (test/e2e/conformance-mutants.test.ts runs them; the
 * exploration's kill rates count them too). Those of the webhooks a payment produces live
 * in webhook-mutants.ts; the list here keeps them in their place.
 */
import { isCreate, parse, pathOf, recode, type Variant } from './conformance-variants.ts';
import { editJson, type Mutation } from './mutating-proxy.ts';
import { webhookMutants } from './webhook-mutants.ts';

export interface Mutant extends Variant {
  /** The checks meant to catch it. */
  caughtBy: string[];
  /** Checks of the same run that must still pass (the mutation is narrow). */
  stillPass?: string[];
  /**
   * What `traffic` makes of the run's HAR (assumptions held strictly): the TRAFFIC checks
   * that fail on it, or why traffic cannot show this defect (its HAR then fails none).
   */
  traffic: { caughtBy: string[] } | { cannot: string };
}

const inFlightKeys = new Map<string, number>();
const failedKeys = new Set<string>();
const seenKeys = new Map<string, number>();

export const mutants: Mutant[] = [
  {
    name: 'token endpoint accepts a JSON body',
    only: 'TOKEN-*',
    caughtBy: ['TOKEN-002'],
    traffic: { caughtBy: ['TRAFFIC-011'] },
    stillPass: ['TOKEN-001', 'TOKEN-005'],
    api: {
      request: (m) => {
        if (pathOf(m) !== '/api/token' || !String(m.headers['content-type']).includes('json')) return m;
        const body = parse(m.body) ?? {};
        return {
          ...m,
          headers: { ...m.headers, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(body).toString(),
        };
      },
    },
  },
  {
    name: 'token endpoint tells an unknown client id from a wrong secret',
    only: 'TOKEN-*',
    caughtBy: ['TOKEN-005'],
    traffic: { caughtBy: ['TRAFFIC-012'] },
    stillPass: ['TOKEN-001', 'TOKEN-002'],
    api: {
      response: (m, r, k) => {
        if (pathOf(m) !== '/api/token' || r.status !== 401) return r;
        const clientId = new URLSearchParams(m.body).get('clientId') ?? '';
        return k.orgByClientId.has(clientId) ? r : { ...r, body: JSON.stringify({ error: 'Unknown client id' }) };
      },
    },
  },
  {
    name: 'token endpoint answers a missing clientId with 401',
    only: 'TOKEN-*',
    caughtBy: ['TOKEN-003'],
    traffic: { caughtBy: ['TRAFFIC-011'] },
    stillPass: ['TOKEN-004'],
    api: {
      response: (m, r) =>
        pathOf(m) === '/api/token' && r.status === 400 && !new URLSearchParams(m.body).has('clientId') && m.body !== ''
          ? { ...r, status: 401, body: JSON.stringify({ error: 'Invalid credentials' }) }
          : r,
    },
  },
  {
    name: 'a double-prefixed token is answered unauthorized instead of invalid_token',
    only: 'AUTH-00*',
    caughtBy: ['AUTH-005'],
    traffic: { caughtBy: ['TRAFFIC-014'] },
    stillPass: ['AUTH-001', 'AUTH-003', 'AUTH-004'],
    api: {
      response: (m, r) =>
        r.status === 401 && String(m.headers.authorization).startsWith('Bearer Bearer ')
          ? editJson(r, (b) => recode(b, 'unauthorized'))
          : r,
    },
  },
  {
    name: 'an expired token is answered invalid_token',
    only: 'AUTH-006,AUTH-007',
    caughtBy: ['AUTH-006'],
    traffic: {
      cannot: "the token expired by a move of the organisation's clock: the traffic cannot date a token across it",
    },
    stillPass: ['AUTH-007'],
    api: {
      response: (_m, r) =>
        r.status === 401 && parse(r.body)?.error?.code === 'token_expired'
          ? editJson(r, (b) => recode(b, 'invalid_token'))
          : r,
    },
  },
  {
    name: 'a token of a deleted key is answered token_expired',
    only: 'AUTH-008',
    caughtBy: ['AUTH-008'],
    traffic: {
      cannot:
        "a key's removal is made through the sandbox or the portal: the traffic does not say which tokens it voided",
    },
    api: {
      response: (_m, r) =>
        r.status === 401 && parse(r.body)?.error?.code === 'unknown_api_key'
          ? editJson(r, (b) => recode(b, 'token_expired'))
          : r,
    },
  },
  {
    name: 'param names the parent object instead of the field (amount, not amount.total)',
    only: 'VAL-001,VAL-023',
    caughtBy: ['VAL-001'],
    traffic: { caughtBy: ['TRAFFIC-013'] },
    stillPass: ['VAL-023'],
    api: {
      response: (m, r) =>
        isCreate(m) && r.status === 400
          ? editJson(r, (b) =>
              b.error.details?.length === 1
                ? { ...b, error: { ...b.error, param: String(b.error.param).split('.')[0] } }
                : b,
            )
          : r,
    },
  },
  {
    name: 'details lists only some of the failing fields',
    only: 'VAL-032,VAL-001',
    caughtBy: ['VAL-032'],
    traffic: { caughtBy: ['TRAFFIC-013'] },
    stillPass: ['VAL-001'],
    api: {
      response: (m, r) =>
        isCreate(m) && r.status === 400
          ? editJson(r, (b) =>
              b.error.details?.length > 1 ? { ...b, error: { ...b.error, details: b.error.details.slice(0, -1) } } : b,
            )
          : r,
    },
  },
  {
    name: '19.99 refused: multipleOf computed in binary floating point',
    only: 'VAL-002,VAL-003,VAL-004',
    caughtBy: ['VAL-003'],
    traffic: { caughtBy: ['TRAFFIC-013'] },
    stillPass: ['VAL-002', 'VAL-004'],
    api: {
      request: (m) => {
        const total = isCreate(m) ? parse(m.body)?.amount?.total : undefined;
        // 19.99 * 100 is 1998.9999999999998 in binary floating point.
        if (typeof total !== 'number' || Number.isInteger(total * 100)) return m;
        const error = {
          code: 'validation_failed',
          message: 'bad',
          param: 'amount.total',
          doc_url: 'http://127.0.0.1/docs/errors/#validation_failed',
          details: [{ field: 'amount.total', constraints: { multipleOf: 'must be a multiple of 0.01' } }],
        };
        return { status: 400, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error }) };
      },
    },
  },
  {
    name: 'a test key may send webhooks to a private address',
    only: 'VAL-031,VAL-041',
    caughtBy: ['VAL-041'],
    traffic: { cannot: "whether an address is publicly reachable is the service's knowledge, not the body's" },
    stillPass: ['VAL-031'],
    api: {
      request: (m) => {
        const body = isCreate(m) ? parse(m.body) : undefined;
        // As a server that relaxes the target rules for test keys beyond loopback.
        if (typeof body?.webhookUrl !== 'string' || !body.webhookUrl.startsWith('https://10.')) return m;
        body.webhookUrl = 'https://shop.example.com/hooks';
        return { ...m, body: JSON.stringify(body) };
      },
    },
  },
  {
    name: 'multipleOf with a tolerance: 1.0000000001 is taken as 1.00',
    only: 'VAL-006,VAL-039',
    caughtBy: ['VAL-039'],
    traffic: { caughtBy: ['TRAFFIC-013'] },
    stillPass: ['VAL-006'],
    api: {
      request: (m) => {
        const body = isCreate(m) ? parse(m.body) : undefined;
        const total = body?.amount?.total;
        // ajv's multipleOfPrecision: 8 lets anything within 1e-8 of a whole cent through.
        if (typeof total !== 'number' || Math.abs(Math.round(total * 100) - total * 100) > 1e-6) return m;
        body.amount.total = Math.round(total * 100) / 100;
        return { ...m, body: JSON.stringify(body) };
      },
    },
  },
  {
    name: 'a 13-character reference is accepted (cut to 12)',
    only: 'VAL-009,VAL-010',
    caughtBy: ['VAL-010'],
    traffic: { caughtBy: ['TRAFFIC-013'] },
    stillPass: ['VAL-009'],
    api: {
      request: (m) => {
        const body = isCreate(m) ? parse(m.body) : undefined;
        if (body?.creditorReference?.reference?.length !== 13) return m;
        body.creditorReference.reference = body.creditorReference.reference.slice(0, 12);
        return { ...m, body: JSON.stringify(body) };
      },
    },
  },
  {
    name: 'doc_url without the #: {docs_url}/errors/<code>',
    only: 'VAL-001,READ-002,RESP-005',
    caughtBy: ['RESP-005'],
    traffic: { caughtBy: ['TRAFFIC-003', 'TRAFFIC-005'] },
    stillPass: ['VAL-001', 'READ-002'],
    api: {
      response: (_m, r) =>
        r.status >= 400 && parse(r.body)?.error?.doc_url
          ? editJson(r, (b) => ({
              ...b,
              error: { ...b.error, doc_url: String(b.error.doc_url).replace('/errors/#', '/errors/') },
            }))
          : r,
    },
  },
  {
    name: 'open_banking_not_enabled checked before open_banking_currency_unsupported',
    only: 'CFG-004,CFG-005',
    caughtBy: ['CFG-005'],
    traffic: { cannot: "an organisation's configuration is not in the traffic" },
    stillPass: ['CFG-004'],
    api: {
      response: (m, r, k) => {
        if (!isCreate(m) || parse(r.body)?.error?.code !== 'open_banking_currency_unsupported') return r;
        return k.orgOf(m)?.settings.openBankingApproved === false
          ? editJson(r, (b) => recode(b, 'open_banking_not_enabled'))
          : r;
      },
    },
  },
  {
    name: 'amount.currency ignored (no currency_mismatch)',
    only: 'CFG-006,CFG-007',
    caughtBy: ['CFG-006'],
    traffic: { cannot: "an organisation's settlement currency is its configuration, not in the traffic" },
    stillPass: ['CFG-007'],
    api: {
      request: (m) => {
        const body = isCreate(m) ? parse(m.body) : undefined;
        if (!body?.amount?.currency) return m;
        delete body.amount.currency;
        return { ...m, body: JSON.stringify(body) };
      },
    },
  },
  {
    name: 'a replay answers with a different status (201)',
    only: 'IDEM-001,IDEM-002',
    caughtBy: ['IDEM-001'],
    traffic: { caughtBy: ['TRAFFIC-001', 'TRAFFIC-009'] },
    stillPass: ['IDEM-002'],
    api: {
      response: (m, r) => {
        const key = m.headers['idempotency-key'];
        if (!isCreate(m) || !key || r.status !== 200) return r;
        const n = (seenKeys.get(key) ?? 0) + 1;
        seenKeys.set(key, n);
        return n > 1 ? { ...r, status: 201 } : r;
      },
    },
  },
  {
    name: 'the same key with a different body makes a new session',
    only: 'IDEM-001,IDEM-002',
    caughtBy: ['IDEM-002'],
    traffic: { caughtBy: ['TRAFFIC-010'] },
    stillPass: ['IDEM-001'],
    api: {
      response: async (m, r, _k, forward) => {
        if (!isCreate(m) || parse(r.body)?.error?.code !== 'idempotency_error') return r;
        const headers = { ...m.headers };
        delete headers['idempotency-key'];
        return forward({ ...m, headers });
      },
    },
  },
  {
    name: 'concurrent creates with one key make several sessions',
    only: 'IDEM-001,IDEM-006',
    caughtBy: ['IDEM-006'],
    traffic: { caughtBy: ['TRAFFIC-009'] },
    stillPass: ['IDEM-001'],
    api: {
      // A second create while one with the same key is still in flight ignores the key.
      request: (m) => {
        const key = m.headers['idempotency-key'];
        if (!isCreate(m) || !key) return m;
        const n = inFlightKeys.get(key) ?? 0;
        inFlightKeys.set(key, n + 1);
        return n > 0 ? { ...m, headers: { ...m.headers, 'idempotency-key': `${key}-${n}` } } : m;
      },
      response: (m, r) => {
        const key = m.headers['idempotency-key'];
        if (isCreate(m) && key) inFlightKeys.set(key, (inFlightKeys.get(key) ?? 1) - 1);
        return r;
      },
    },
  },
  {
    name: 'a 500 forgets the Idempotency-Key: retries make new sessions',
    only: 'IDEM-007',
    caughtBy: ['IDEM-007'],
    traffic: { caughtBy: ['TRAFFIC-009'] },
    api: {
      request: (m) => {
        const key = m.headers['idempotency-key'];
        return isCreate(m) && key && failedKeys.has(key)
          ? { ...m, headers: { ...m.headers, 'idempotency-key': `${key}-${Math.random()}` } }
          : m;
      },
      response: (m, r) => {
        const key = m.headers['idempotency-key'];
        if (isCreate(m) && key && r.status === 500) failedKeys.add(key);
        return r;
      },
    },
  },
  {
    name: 'a 500 does not store the Idempotency-Key: the first retry makes a new session, later retries replay it',
    only: 'IDEM-007',
    caughtBy: ['IDEM-007'],
    traffic: {
      cannot:
        "whether the create answered 500 made a session is not in the traffic: the retry that made one reads as the document's completion",
    },
    api: (() => {
      const failed = new Set<string>();
      return {
        request: (m) => {
          const key = m.headers['idempotency-key'];
          return isCreate(m) && key && failed.has(key)
            ? { ...m, headers: { ...m.headers, 'idempotency-key': `${key}-stored-late` } }
            : m;
        },
        response: (m, r) => {
          const key = m.headers['idempotency-key'];
          if (isCreate(m) && key && r.status === 500) failed.add(key);
          return r;
        },
      } satisfies Mutation;
    })(),
  },
  {
    name: 'a new token for a deleted key is refused 401 with the error envelope instead of { error: string }',
    only: 'AUTH-008,TOKEN-005',
    caughtBy: ['AUTH-008'],
    traffic: { caughtBy: ['TRAFFIC-003', 'TRAFFIC-007', 'TRAFFIC-012'] },
    stillPass: ['TOKEN-005'],
    api: (() => {
      const deleted = new Set<string>();
      return {
        request: (m) => {
          const id = /^\/sandbox\/api-keys\/([^/]+)$/.exec(pathOf(m))?.[1];
          if (m.method === 'DELETE' && id) deleted.add(decodeURIComponent(id));
          return m;
        },
        response: (m, r) =>
          pathOf(m) === '/api/token' &&
          r.status === 401 &&
          deleted.has(new URLSearchParams(m.body).get('clientId') ?? '')
            ? {
                ...r,
                body: JSON.stringify(
                  recode(
                    { error: { message: 'Unknown API key', param: null, doc_url: 'http://127.0.0.1/docs/errors/#x' } },
                    'unknown_api_key',
                  ),
                ),
              }
            : r,
      } satisfies Mutation;
    })(),
  },
  {
    name: "another organisation's session is 403, not 404",
    only: 'READ-002,READ-003',
    caughtBy: ['READ-003'],
    traffic: { caughtBy: ['TRAFFIC-001', 'TRAFFIC-008'] },
    stillPass: ['READ-002'],
    api: {
      response: (m, r, k) => {
        const id = /^\/api\/checkout-sessions\/([^/]+)$/.exec(pathOf(m))?.[1];
        if (m.method !== 'GET' || r.status !== 404 || !id || !k.sessions.has(id)) return r;
        return { ...r, status: 403, body: JSON.stringify(recode(parse(r.body), 'forbidden')) };
      },
    },
  },
  {
    name: 'the retired GET /api/transaction/{cs_id} answers the session',
    only: 'READ-004',
    caughtBy: ['READ-004'],
    traffic: { caughtBy: ['TRAFFIC-004'] },
    api: {
      request: (m) =>
        m.method === 'GET' && /^\/api\/transaction\/cs_/.test(pathOf(m))
          ? { ...m, url: m.url.replace('/api/transaction/', '/api/checkout-sessions/') }
          : m,
    },
  },
  {
    name: "the redirect drops the merchant's own query parameters",
    only: 'LIFE-003',
    caughtBy: ['LIFE-003'],
    traffic: {
      cannot:
        "the redirect is the payer's browser's, made after the sandbox's payment: a run's traffic holds no redirect",
    },
    api: {
      response: (m, r) =>
        /^\/sandbox\/checkout-sessions\/[^/]+\/attempts$/.test(pathOf(m)) && r.status === 200
          ? editJson(r, (b) => {
              if (!b.redirectTo) return b;
              const url = new URL(b.redirectTo);
              for (const name of [...url.searchParams.keys()])
                if (!['transactionId', 'checkoutSessionId'].includes(name)) url.searchParams.delete(name);
              return { ...b, redirectTo: url.toString() };
            })
          : r,
    },
  },
  {
    name: 'GET /api/transaction/{link id} still answers after the link settled',
    only: 'READ-008',
    caughtBy: ['READ-008'],
    traffic: { caughtBy: ['TRAFFIC-004'] },
    api: {
      request: (m) =>
        m.method === 'GET' && /^\/api\/transaction\/[0-9a-f-]{36}$/.test(pathOf(m))
          ? { ...m, url: m.url.replace('/api/transaction/', '/api/payment-links/') }
          : m,
    },
  },
  ...webhookMutants,
  {
    name: 'reads answer text/plain',
    only: 'READ-001,RESP-002',
    caughtBy: ['RESP-002'],
    traffic: { caughtBy: ['TRAFFIC-002'] },
    stillPass: ['READ-001'],
    api: {
      response: (m, r) =>
        m.method === 'GET' && r.status === 200 ? { ...r, headers: { ...r.headers, 'content-type': 'text/plain' } } : r,
    },
  },
  {
    name: 'the create response lacks expiresAt',
    only: 'VAL-002,RESP-003',
    caughtBy: ['RESP-003'],
    traffic: { caughtBy: ['TRAFFIC-003'] },
    stillPass: ['VAL-002'],
    api: {
      response: (m, r) =>
        isCreate(m) && r.status === 200
          ? editJson(r, (b) => {
              const { expiresAt: _drop, ...rest } = b;
              return rest;
            })
          : r,
    },
  },
];

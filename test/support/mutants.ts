/**
 * Broken variants of the reference server, made by mutating proxies between the suite
 * and the server and between the server and the suite's receiver, each named with the
 * checks meant to catch it (test/e2e/conformance-mutants.test.ts runs them; the
 * exploration's kill rates count them too).
 */
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
  type Variant,
} from './conformance-variants.ts';
import { editJson, type Mutation, type Reply } from './mutating-proxy.ts';

export interface Mutant extends Variant {
  /** The checks meant to catch it. */
  caughtBy: string[];
  /** Checks of the same run that must still pass (the mutation is narrow). */
  stillPass?: string[];
}

/** A receiver-side mutation: each delivery the merchant answered `status` is delivered once more (after `delayMs`). */
/** The sender delivers again after an answer of this status (and records it as an attempt). */
const deliverAgainAfter = (status: number, delayMs = 0) => extraAttempts((_m, r) => r.status === status, delayMs);

/**
 * An API-side mutation: a declined sandbox attempt on a session created with a
 * `webhookUrl` sends an (unsigned) `checkout_session.failed` webhook there, at once
 * (awaited) or `delayMs` later.
 */
const webhookOnDecline = (delayMs: number): Mutation => {
  const hooks = new Map<string, string>();
  return {
    response: async (m, r) => {
      if (isCreate(m) && r.status === 200 && parse(m.body)?.webhookUrl)
        hooks.set(parse(r.body).id, parse(m.body).webhookUrl);
      const attempt = /^\/sandbox\/checkout-sessions\/([^/]+)\/attempts$/.exec(pathOf(m));
      const url = attempt ? hooks.get(attempt[1]!) : undefined;
      if (url && parse(m.body)?.outcome === 'declined') {
        const body = JSON.stringify({
          event: 'checkout_session.failed',
          createdAt: new Date().toISOString(),
          checkoutSessionId: attempt![1],
          transactionId: crypto.randomUUID(),
          foreignTransactionId: null,
        });
        const send = () => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        if (delayMs === 0) await send();
        else setTimeout(() => void send().catch(() => undefined), delayMs);
      }
      return r;
    },
  };
};

const inFlightKeys = new Map<string, number>();
const failedKeys = new Set<string>();
const seenKeys = new Map<string, number>();

export const mutants: Mutant[] = [
  {
    name: 'token endpoint accepts a JSON body',
    only: 'TOKEN-*',
    caughtBy: ['TOKEN-002'],
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
    api: {
      request: (m) =>
        m.method === 'GET' && /^\/api\/transaction\/[0-9a-f-]{36}$/.test(pathOf(m))
          ? { ...m, url: m.url.replace('/api/transaction/', '/api/payment-links/') }
          : m,
    },
  },
  {
    name: 'a declined attempt sends a webhook',
    only: 'HOOK-006,HOOK-001',
    caughtBy: ['HOOK-006'],
    stillPass: ['HOOK-001'],
    api: webhookOnDecline(0),
  },
  {
    name: 'a declined attempt sends a webhook two seconds later',
    only: 'HOOK-006',
    caughtBy: ['HOOK-006'],
    api: webhookOnDecline(2000),
  },
  {
    name: "a declined or expired session is delivered elsewhere (the target's own records list the attempt)",
    only: 'HOOK-006,HOOK-007,HOOK-001',
    caughtBy: ['HOOK-006', 'HOOK-007'],
    stillPass: ['HOOK-001'],
    api: {
      response: (m, r) => {
        const id = new URLSearchParams(m.url.split('?')[1] ?? '').get('checkoutSessionId');
        if (
          pathOf(m) !== '/sandbox/webhook-deliveries' ||
          !id ||
          r.status !== 200 ||
          parse(r.body)?.deliveries?.length > 0
        )
          return r;
        // The suite reads the records of HOOK-001's session only after its delivery arrived; a record exists then anyway.
        const record = {
          transactionId: crypto.randomUUID(),
          url: 'https://elsewhere.example/hooks',
          attempt: 1,
          at: new Date().toISOString(),
          signed: true,
          responseStatus: 200,
          error: null,
          final: true,
        };
        return editJson(r, (b) => ({ ...b, deliveries: [record] }));
      },
    },
  },
  {
    name: 'the open banking rail retries after a 400',
    only: 'HOOK-026',
    caughtBy: ['HOOK-026'],
    ...deliverAgainAfter(400),
  },
  {
    name: 'the legacy body names another foreignTransactionId',
    only: 'HOOK-022,HOOK-025',
    caughtBy: ['HOOK-025'],
    stillPass: ['HOOK-022'],
    hook: {
      request: (m) =>
        parse(m.body) && !parse(m.body).event
          ? { ...m, body: JSON.stringify({ ...parse(m.body), foreignTransactionId: 'someone-else' }) }
          : m,
    },
  },
  {
    name: 'a payment link reads back without its id (a modelled operation: RESP-004 under --strict-assumptions, not RESP-003)',
    only: 'READ-008,RESP-001,RESP-003,RESP-004',
    caughtBy: ['RESP-004'],
    stillPass: ['READ-008', 'RESP-001', 'RESP-003'],
    args: ['--strict-assumptions'],
    api: {
      response: (m, r) =>
        m.method === 'GET' && /^\/api\/payment-links\/[^/]+$/.test(pathOf(m)) && r.status === 200
          ? editJson(r, (b) => {
              const { id: _drop, ...rest } = b;
              return { ...rest, amount: 'fifteen' };
            })
          : r,
    },
  },
  {
    name: 'the card rail makes a fourth attempt',
    only: 'HOOK-010,HOOK-013',
    caughtBy: ['HOOK-010'],
    stillPass: ['HOOK-013'],
    ...(() => {
      const failures = new Map<string, number>();
      return extraAttempts((m, r) => {
        if (r.status !== 500) return false;
        const n = (failures.get(m.url) ?? 0) + 1;
        failures.set(m.url, n);
        return n === 3;
      });
    })(),
  },
  {
    name: 'the webhook signature is over a re-serialised body (sent pretty-printed)',
    only: 'HOOK-001',
    caughtBy: ['HOOK-001'],
    hook: { request: (m) => ({ ...m, body: JSON.stringify(parse(m.body), null, 2) }) },
  },
  {
    name: 'createdAt is the time of each attempt, not of the event',
    only: 'HOOK-004,HOOK-001',
    caughtBy: ['HOOK-004'],
    stillPass: ['HOOK-001'],
    hook: {
      request: (m, k) => {
        const body = parse(m.body);
        if (!body?.event) return m;
        return resign(m, k, JSON.stringify({ ...body, createdAt: new Date().toISOString() }));
      },
    },
  },
  {
    name: 'the signature t is ten minutes old when the delivery arrives',
    only: 'HOOK-027,HOOK-005,HOOK-002',
    caughtBy: ['HOOK-027', 'HOOK-005'],
    stillPass: ['HOOK-002'],
    hook: {
      request: (m, k) => {
        const secret = secretOf(m, k);
        if (!secret) return m;
        const t = String(Math.floor(Date.now() / 1000) - 600);
        return { ...m, headers: { ...m.headers, 'service-signature': `t=${t},v1=${hmac(secret, t, m.body)}` } };
      },
    },
  },
  {
    name: 'the sender gives up on an answer after 1.5 s (a receiver answering in 3.5 s is counted as failed)',
    only: 'HOOK-028,HOOK-029,HOOK-001',
    caughtBy: ['HOOK-028', 'HOOK-029'],
    stillPass: ['HOOK-001'],
    hook: {
      request: (m, _k, forward) =>
        Promise.race([
          forward(m),
          new Promise<Reply>((resolve) =>
            setTimeout(
              () => resolve({ status: 504, headers: { 'content-type': 'text/plain' }, body: 'gave up' }),
              1500,
            ),
          ),
        ]),
    },
  },
  {
    name: 'a card delivery answered 400 is retried',
    only: 'HOOK-013,HOOK-010',
    caughtBy: ['HOOK-013'],
    stillPass: ['HOOK-010'],
    ...deliverAgainAfter(400, 50),
  },
  {
    name: 'the open banking rail makes a second attempt after a 500',
    only: 'HOOK-015,HOOK-018',
    caughtBy: ['HOOK-015'],
    stillPass: ['HOOK-018'],
    ...deliverAgainAfter(500),
  },
  {
    name: 'after rotation deliveries are still signed with the old secret',
    only: 'HOOK-020,HOOK-024,HOOK-001',
    caughtBy: ['HOOK-020', 'HOOK-024'],
    stillPass: ['HOOK-001'],
    hook: {
      request: (m, k) => {
        const secret = secretOf(m, k);
        const org = [...k.orgs.values()].find((o) => o.secrets.includes(secret ?? '') && o.secrets.length > 1);
        const parts = signatureParts(m.headers['service-signature']);
        if (!org || !parts) return m;
        return {
          ...m,
          headers: { ...m.headers, 'service-signature': `t=${parts.t},v1=${hmac(org.secrets[0]!, parts.t, m.body)}` },
        };
      },
    },
  },
  {
    name: 'the signing_secret_unavailable fault still sends a signature header',
    only: 'HOOK-021',
    caughtBy: ['HOOK-021'],
    hook: {
      request: (m) =>
        m.headers['service-signature'] || !parse(m.body)?.event
          ? m
          : {
              ...m,
              headers: { ...m.headers, 'service-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` },
            },
    },
  },
  {
    name: 'the legacy body gains an event field',
    only: 'HOOK-022',
    caughtBy: ['HOOK-022'],
    hook: {
      request: (m) =>
        parse(m.body) && !parse(m.body).event
          ? { ...m, body: JSON.stringify({ event: 'checkout_session.completed', ...parse(m.body) }) }
          : m,
    },
  },
  {
    name: 'reads answer text/plain',
    only: 'READ-001,RESP-002',
    caughtBy: ['RESP-002'],
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

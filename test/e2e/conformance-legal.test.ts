/**
 * Legal variants of the reference server (service document: what is not part of the
 * contract), made by mutating proxies: message wording, JSON key order, extra response
 * fields, extra signature versions and header part order, token text format, id and
 * generated code formats within their rules, headers of the token endpoint's 401 of its
 * own, a repeated delivery of a completed event (at once, or after its 2xx), the input
 * space's open questions answered the other way, and fields the document does not list
 * taken or refused. The suite must pass each of them, and all of them at once over the
 * whole suite.
 *
 * @tags long
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectPassed, explain } from '../support/conformance-cli.ts';
import {
  isCreate,
  parse,
  pathOf,
  resign,
  runVariant,
  signatureParts,
  type Variant,
} from '../support/conformance-variants.ts';
import { editJson, type Message, type Mutation, type Reply } from '../support/mutating-proxy.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { paced } from '../support/pace.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
});
afterAll(async () => {
  await t?.close();
});

const isJsonReply = (r: Reply) =>
  String(r.headers['content-type']).startsWith('application/json') && parse(r.body) !== undefined;

function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, reverseKeys(v)]),
    );
  return value;
}

const wording: Mutation = {
  response: (_m, r) =>
    r.status >= 400 && parse(r.body)?.error?.message
      ? editJson(r, (b) => ({ ...b, error: { ...b.error, message: 'Ceci n’est pas le message habituel.' } }))
      : r,
};

const keyOrder: Mutation = { response: (_m, r) => (isJsonReply(r) ? editJson(r, reverseKeys) : r) };

const extraFields: Mutation = {
  response: (_m, r) =>
    isJsonReply(r)
      ? editJson(r, (b) => {
          if (!b || typeof b !== 'object' || Array.isArray(b)) return b;
          const out = { ...b, object: 'extra', livemode: false };
          if (b.error && typeof b.error === 'object') out.error = { ...b.error, request_id: 'req_123', hint: 'extra' };
          if (b.amount && typeof b.amount === 'object') out.amount = { ...b.amount, minor: 1 };
          return out;
        })
      : r,
};

function opaqueTokens(): Mutation {
  const real = new Map<string, string>();
  return {
    request: (m) => {
      const auth = m.headers.authorization;
      if (!auth) return m;
      return {
        ...m,
        headers: {
          ...m.headers,
          authorization: auth.replace(/tok-[0-9a-f]+/g, (opaque) => real.get(opaque) ?? opaque),
        },
      };
    },
    response: (m, r) =>
      pathOf(m) === '/api/token' && r.status === 200
        ? editJson(r, (b) => {
            const opaque = `tok-${randomBytes(20).toString('hex')}`;
            real.set(opaque, b.accessToken);
            return { ...b, accessToken: opaque, expiresIn: '300 seconds' };
          })
        : r,
  };
}

// Session ids keep their documented prefix cs_ but take another form: cs_alt-<original>.
const toAlt = (text: string) => text.replace(/\bcs_(?!alt-)([A-Za-z0-9]+)/g, 'cs_alt-$1');
const fromAlt = (text: string) => text.replace(/\bcs_alt-/g, 'cs_');
const idFormatApi: Mutation = {
  request: (m) => ({ ...m, url: fromAlt(m.url), body: fromAlt(m.body) }),
  response: (_m, r) => ({ ...r, body: toAlt(r.body) }),
};
const idFormatHook: Mutation = { request: (m, k) => (m.body.includes('cs_') ? resign(m, k, toAlt(m.body)) : m) };

const signatureHeader: Mutation = {
  request: (m: Message) => {
    const parts = signatureParts(m.headers['service-signature']);
    return parts
      ? { ...m, headers: { ...m.headers, 'service-signature': `v2=${'ab'.repeat(32)},v1=${parts.v1},t=${parts.t}` } }
      : m;
  },
};

const repeatedDelivery: Mutation = {
  after: async (m, r, _k, forward) => {
    if (r.status >= 200 && r.status < 300) await forward(m);
  },
};

// A status the document does not name, for a while on the way to completed: the list is open.
const statusOnTheWay = (): Mutation => {
  const firstSeen = new Map<string, number>();
  return {
    response: (m, r) =>
      m.method === 'GET' && /^\/api\/checkout-sessions\/[^/]+$/.test(pathOf(m)) && r.status === 200
        ? editJson(r, (b) => {
            if (b.status !== 'completed') return b;
            const seen = firstSeen.get(b.id) ?? Date.now();
            firstSeen.set(b.id, seen);
            return Date.now() - seen < 1500 ? { ...b, status: 'authorised' } : b;
          })
        : r,
  };
};

// Another digest version beside v1, named as its scheme likes (parts are read by name).
const namedVersion: Mutation = {
  request: (m: Message) => {
    const header = m.headers['service-signature'];
    return header
      ? { ...m, headers: { ...m.headers, 'service-signature': `${header},v2_hs512=${'q'.repeat(86)}` } }
      : m;
  },
};

// The token endpoint's 401 says when it was made, in whole seconds: the same for an unknown
// client id and a wrong secret made in the same second.
const refusalTime: Mutation = {
  response: (m, r) =>
    pathOf(m) === '/api/token' && r.status === 401
      ? editJson(r, (b) => ({ ...b, at: new Date(Math.floor(Date.now() / 1000) * 1000).toISOString() }))
      : r,
};

// The token endpoint's 401 with headers of its own: one the same for an unknown client id and a
// wrong secret, one that differs on every answer (a trace id).
const refusalHeaders: Mutation = {
  response: (m, r) =>
    pathOf(m) === '/api/token' && r.status === 401
      ? {
          ...r,
          headers: {
            ...r.headers,
            'www-authenticate': 'Form realm="payments"',
            'x-trace-id': randomBytes(8).toString('hex'),
          },
        }
      : r,
};

// Codes made for sessions created without one, in another form within the field's rule (lower
// case, a space), the same on every read.
const generatedCodes = (): Mutation => {
  const made = new Map<string, string>();
  const isRead = (m: Message) => m.method === 'GET' && /^\/api\/checkout-sessions\/[^/]+$/.test(pathOf(m));
  return {
    response: (m, r) => {
      if (r.status !== 200) return r;
      if (isCreate(m) && parse(m.body)?.creditorReference?.code === undefined)
        return editJson(r, (b) => {
          if (typeof b.code !== 'string') return b;
          const code = `ab ${b.code.toLowerCase()}`.slice(0, 12);
          made.set(b.code, code);
          return { ...b, code };
        });
      return isRead(m) ? editJson(r, (b) => (made.has(b.code) ? { ...b, code: made.get(b.code) } : b)) : r;
    },
  };
};

// A committed 500 replayed to the retries with its key ("replays its result").
const replayedServerError = (): Mutation => {
  const failed = new Map<string, Reply>();
  return {
    response: (m, r) => {
      const key = isCreate(m) ? m.headers['idempotency-key'] : undefined;
      if (key === undefined) return r;
      const id = `${m.headers.authorization} ${key}`;
      if (r.status === 500) failed.set(id, r);
      return failed.get(id) ?? r;
    },
  };
};

// Payments in flight announced by an event of a kind the document does not name yet.
const pendingEvent = (): Mutation => {
  const hooks = new Map<string, string>();
  return {
    response: async (m, r) => {
      if (isCreate(m) && r.status === 200 && parse(m.body)?.webhookUrl)
        hooks.set(parse(r.body).id, parse(m.body).webhookUrl);
      const attempt = /^\/sandbox\/checkout-sessions\/([^/]+)\/attempts$/.exec(pathOf(m));
      const url = attempt ? hooks.get(attempt[1]!) : undefined;
      if (url && parse(m.body)?.outcome === 'pending' && r.status === 200) {
        const body = JSON.stringify({
          event: 'checkout_session.pending',
          createdAt: new Date().toISOString(),
          checkoutSessionId: attempt![1],
          transactionId: parse(r.body)?.session?.transactionId ?? null,
          foreignTransactionId: null,
        });
        await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).catch(
          () => undefined,
        );
      }
      return r;
    },
  };
};

/**
 * An event kind of the target's own ahead of each completed event ("More event values will
 * be added"): every paid session is first announced, signed, as checkout_session.paying.
 */
const announcedFirst = (): Mutation => {
  const announced = new Set<string>();
  return {
    request: async (m, k, forward) => {
      const body = parse(m.body);
      const key = `${pathOf(m)} ${body?.transactionId}`;
      if (body?.event !== 'checkout_session.completed' || announced.has(key)) return m;
      announced.add(key);
      await forward(resign(m, k, JSON.stringify({ ...body, event: 'checkout_session.paying' }))).catch(() => undefined);
      return m;
    },
  };
};

function combine(...mutations: Mutation[]): Mutation {
  return {
    request: async (m, k, f) => {
      let out: Message | Reply = m;
      for (const x of mutations) if (x.request && !('status' in out)) out = await x.request(out, k, f);
      return out;
    },
    response: async (m, r, k, f) => {
      let out = r;
      for (const x of [...mutations].reverse()) if (x.response) out = await x.response(m, out, k, f);
      return out;
    },
    after: async (m, r, k, f) => {
      for (const x of mutations) if (x.after) await x.after(m, r, k, f);
    },
  };
}

/**
 * Sessions expire in a sweep of the target's own, not at the moment they are read: a session
 * past its 24 hours reads created for a second and a half more.
 */
function expirySweep(): Mutation {
  const due = new Map<string, number>();
  return {
    response: (m, r) => {
      if (m.method !== 'GET' || !/^\/api\/checkout-sessions\/[^/]+$/.test(pathOf(m)) || r.status !== 200) return r;
      const session = parse(r.body);
      if (session?.status !== 'expired') return r;
      const since = due.get(session.id) ?? Date.now();
      due.set(session.id, since);
      return Date.now() - since < 1500 ? editJson(r, (b) => ({ ...b, status: 'created' })) : r;
    },
  };
}

/**
 * Idempotency-Keys remembered per organisation rather than per organisation and mode (the
 * document leaves the scope open): a live create under a key a test create used is refused
 * as the key reused.
 */
function keysPerOrganisation(): Mutation {
  const testKeys = new Set<string>();
  return {
    response: (m, r) => {
      const key = m.headers['idempotency-key'];
      if (!isCreate(m) || typeof key !== 'string' || r.status !== 200) return r;
      const testMode = parse(r.body)?.testMode;
      if (testMode === true) testKeys.add(key);
      if (testMode !== false || !testKeys.has(key)) return r;
      const error = {
        code: 'idempotency_error',
        message: 'This Idempotency-Key was used by another request of the organisation.',
        param: null,
        doc_url: `${t.url}/docs/errors/#idempotency_error`,
      };
      return { ...editJson(r, () => ({ error })), status: 400 };
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The same completed event delivered again 300 ms after the receiver answered it 2xx, as a
 * second completion path would send it (Duplicates), and not recorded as another attempt.
 */
const lateRepeat: Mutation = {
  after: async (m, r, _k, forward) => {
    if (r.status < 200 || r.status >= 300) return;
    await sleep(300);
    await forward(m);
  },
};

/**
 * Where the document leaves the input space open, the other answer each time: the bearer
 * scheme read case-sensitively, a test payment read with a live key answered as another's,
 * Idempotency-Keys longer than 100 characters refused, and of the configuration codes that apply
 * to a create, another one than the reference server's.
 */
function otherOpenAnswers(): Mutation {
  const liveTokens = new Set<string>();
  // The server's address is known once it runs, after the variants are made.
  const doc = () => `${t.url}/docs/errors/`;
  const refused = (r: Reply, status: number, code: string, param: string | null = null): Reply => ({
    ...editJson(r, () => ({
      error: { code, message: `Answered ${code} here.`, param, doc_url: `${doc()}#${code}` },
    })),
    status,
  });
  return {
    request: (m): Message | Reply => {
      const key = m.headers['idempotency-key'];
      if (isCreate(m) && typeof key === 'string' && key.length > 100)
        return {
          status: 400,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            error: {
              code: 'validation_failed',
              message: 'Idempotency-Key must be at most 100 characters.',
              param: 'Idempotency-Key',
              doc_url: `${doc()}#validation_failed`,
              details: [{ field: 'Idempotency-Key', constraints: { max: 'at most 100 characters' } }],
            },
          }),
        };
      if (/^bearer /.test(m.headers.authorization ?? ''))
        return {
          status: 401,
          headers: { 'content-type': 'application/json', 'www-authenticate': 'Bearer realm="api"' },
          body: JSON.stringify({
            error: { code: 'unauthorized', message: 'Use Bearer.', param: null, doc_url: `${doc()}#unauthorized` },
          }),
        };
      return m;
    },
    response: (m, r, k) => {
      if (
        pathOf(m) === '/api/token' &&
        r.status === 200 &&
        /^ck_live/.test(new URLSearchParams(m.body).get('clientId') ?? '')
      )
        liveTokens.add(parse(r.body)?.accessToken);
      const token = /^Bearer (.+)$/.exec(m.headers.authorization ?? '')?.[1] ?? '';
      if (m.method === 'GET' && /^\/api\/checkout-sessions\/[^/]+$/.test(pathOf(m)) && liveTokens.has(token))
        return r.status === 200 && parse(r.body)?.testMode === true ? refused(r, 404, 'not_found') : r;
      const settings = k.orgOf(m)?.settings;
      if (
        isCreate(m) &&
        parse(r.body)?.error?.code === 'card_not_enabled' &&
        parse(m.body)?.checkoutMethod === 'both' &&
        settings?.settlementCurrency === 'NZD' &&
        settings?.openBankingApproved === false
      )
        return refused(r, 400, 'open_banking_not_enabled');
      return r;
    },
  };
}

/** The create fields the description lists, and those of them a create may leave out. */
const LISTED: Record<string, string[]> = {
  '': [
    'type',
    'amount',
    'creditorReference',
    'redirectUrl',
    'checkoutMethod',
    'webhookUrl',
    'foreignTransactionId',
    'description',
  ],
  amount: ['total', 'currency'],
  creditorReference: ['reference', 'particulars', 'code'],
};
const OPTIONAL = [
  'amount.currency',
  'creditorReference.particulars',
  'creditorReference.code',
  'webhookUrl',
  'foreignTransactionId',
  'description',
];

/** A create body's fields the document neither lists nor forbids: unknown ones, and optional ones sent as null. */
function unforbidden(body: Record<string, unknown>): string[] {
  const found: string[] = [];
  for (const [object, fields] of Object.entries(LISTED)) {
    const value = object === '' ? body : body[object];
    if (typeof value !== 'object' || value === null || Array.isArray(value)) continue;
    for (const [name, v] of Object.entries(value)) {
      const field = object === '' ? name : `${object}.${name}`;
      if (!fields.includes(name) || (v === null && OPTIONAL.includes(field))) found.push(field);
    }
  }
  return found;
}

/**
 * What the document neither lists nor forbids in a create (a field it does not name, null for
 * an optional one), taken as left out (`accept`) or refused with validation_failed naming
 * each (`refuse`): the document allows either.
 */
function unforbiddenFields(way: 'accept' | 'refuse'): Mutation {
  return {
    request: (m): Message | Reply => {
      const body = isCreate(m) ? parse(m.body) : undefined;
      const fields = body ? unforbidden(body) : [];
      if (fields.length === 0) return m;
      if (way === 'refuse')
        return {
          status: 400,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            error: {
              code: 'validation_failed',
              message: `Not accepted here: ${fields.join(', ')}.`,
              param: fields.length === 1 ? fields[0] : null,
              doc_url: `${t.url}/docs/errors/#validation_failed`,
              details: fields.map((field) => ({ field, constraints: { known: `${field} is not accepted` } })),
            },
          }),
        };
      const kept = structuredClone(body);
      for (const field of fields) {
        const [object, name] = field.includes('.') ? field.split('.') : ['', field];
        delete (object ? kept[object!] : kept)[name!];
      }
      return { ...m, body: JSON.stringify(kept) };
    },
  };
}

/** A target slow to answer creates (the document states no timing): eleven seconds each. */
const slowCreates: Mutation = {
  response: async (m, r) => {
    if (isCreate(m)) await sleep(11_000);
    return r;
  },
};

const legal: Variant[] = [
  // The longest first: the variants run side by side, a few at a time.
  {
    name: 'a completed event delivered more than once',
    hook: repeatedDelivery,
    only: 'HOOK-00?,HOOK-01?,HOOK-02?,HOOK-03?,RESP-007',
  },
  {
    name: 'a completed event delivered again 300 ms after its 2xx answer, not recorded as an attempt',
    hook: lateRepeat,
    only: 'HOOK-*,LIFE-*,RESP-007',
  },
  {
    name: 'the input space’s open questions answered the other way',
    api: otherOpenAnswers(),
    only: 'INP-*,ORG-*,CFG-*,RESP-00[1-6]',
  },
  {
    name: 'error messages worded differently',
    api: wording,
    only: 'TOKEN-*,AUTH-00?,VAL-0[0-3]?,CFG-00[1-5],IDEM-002,READ-002,RESP-00[1-6]',
  },
  {
    name: 'JSON keys in another order',
    api: keyOrder,
    only: 'TOKEN-001,VAL-00?,IDEM-001,IDEM-003,READ-001,CFG-007,LIFE-003,RESP-00[1-6]',
  },
  {
    name: 'extra fields in every response',
    api: extraFields,
    only: 'TOKEN-*,VAL-00?,VAL-032,IDEM-001,READ-*,CFG-*,LIFE-*,RESP-00[1-6]',
  },
  {
    name: 'opaque token text and expiresIn in another wording',
    api: opaqueTokens(),
    only: 'TOKEN-*,AUTH-*,IDEM-001,READ-001,RESP-00[1-6]',
  },
  {
    name: 'session ids in another form within the cs_ rule',
    api: idFormatApi,
    hook: idFormatHook,
    only: 'READ-*,IDEM-00?,LIFE-*,HOOK-001,HOOK-002,HOOK-004,HOOK-021,HOOK-034,RESP-*',
  },
  {
    name: 'an extra v2= digest and the header parts reordered',
    hook: signatureHeader,
    only: 'HOOK-001,HOOK-002,HOOK-005,HOOK-020,RESP-007',
  },
  {
    name: 'a status of its own (authorised) on the way to completed',
    api: statusOnTheWay(),
    only: 'LIFE-*,HOOK-001,HOOK-034,READ-001',
  },
  {
    name: 'a further digest version under a name of its own (v2_hs512=)',
    hook: namedVersion,
    only: 'HOOK-001,HOOK-002,HOOK-020,HOOK-024,HOOK-027',
  },
  {
    name: 'a 401 of the token endpoint that says when it was made',
    api: refusalTime,
    only: 'TOKEN-*',
  },
  {
    name: 'a 401 of the token endpoint with headers of its own, one of them per answer',
    api: refusalHeaders,
    only: 'TOKEN-*',
  },
  {
    name: 'generated codes in another form within the rule (lower case, a space)',
    api: generatedCodes(),
    only: 'READ-*,VAL-01?,RESP-00[1-6]',
  },
  {
    name: 'a committed 500 replayed to its retries',
    api: replayedServerError(),
    only: 'IDEM-*',
  },
  {
    name: 'a payment in flight announced as checkout_session.pending',
    api: pendingEvent(),
    only: 'HOOK-006,LIFE-004',
  },
  {
    name: 'an event kind of its own sent ahead of every completed event',
    hook: announcedFirst(),
    only: 'HOOK-002,HOOK-004,HOOK-010,HOOK-015,HOOK-021,HOOK-024,HOOK-031,HOOK-034',
  },
  {
    name: 'sessions expired in a sweep, a moment after they are due',
    api: expirySweep(),
    only: 'READ-006,LIFE-005,HOOK-007',
  },
  {
    // A token's age counts the time the target took too: AUTH-007 moves the clock less.
    name: 'a create answered after eleven seconds',
    api: slowCreates,
    only: 'AUTH-007',
  },
  {
    name: 'fields the document does not list, and nulls for optional ones, taken as left out',
    api: unforbiddenFields('accept'),
    only: 'INP-001,VAL-*,RESP-00[1-6]',
  },
  {
    name: 'fields the document does not list, and nulls for optional ones, refused naming each',
    api: unforbiddenFields('refuse'),
    only: 'INP-001,VAL-*,RESP-00[1-6]',
  },
  {
    name: 'Idempotency-Keys remembered per organisation, whatever the mode',
    api: keysPerOrganisation(),
    only: 'IDEM-*,READ-007,ORG-00[2-3],RESP-00[1-6]',
  },
];

describe.concurrent('legal variants pass', () => {
  // First, as the longest: the tests run a few at a time.
  it(
    'all of them at once, over the whole suite: passes',
    async () => {
      const run = await runVariant(
        t.url,
        {
          name: 'all legal variants',
          api: combine(
            wording,
            keyOrder,
            extraFields,
            opaqueTokens(),
            idFormatApi,
            statusOnTheWay(),
            refusalTime,
            refusalHeaders,
            generatedCodes(),
            replayedServerError(),
            pendingEvent(),
            expirySweep(),
            keysPerOrganisation(),
          ),
          hook: combine(idFormatHook, signatureHeader, repeatedDelivery, namedVersion, announcedFirst()),
        },
        'pass',
      );
      expectPassed(run);
      expect(run.report!.summary.failed, explain(run)).toBe(0);
      expect(run.report!.summary.skipped, explain(run)).toBe(0);
    },
    paced(180_000),
  );

  for (const variant of legal) {
    it(
      `${variant.name}: passes`,
      async () => {
        const run = await runVariant(t.url, variant, 'pass');
        expectPassed(run);
        expect(run.report!.summary.failed, explain(run)).toBe(0);
        expect(run.report!.summary.skipped, explain(run)).toBe(0);
      },
      paced(120_000),
    );
  }
});

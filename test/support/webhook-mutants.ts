/**
 * Broken variants of the webhooks a payment produces (which events, their payload, their
 * signature, attempts and retries), and of the payment-link and legacy paths that produce
 * them: the second half of the mutants of mutants.ts, which lists them in its order.
 */
import {
  extraAttempts,
  hookAddress,
  hmac,
  isCreate,
  parse,
  pathOf,
  resign,
  secretOf,
  signatureParts,
} from './conformance-variants.ts';
import { editJson, type Mutation, type Reply } from './mutating-proxy.ts';
import type { Mutant } from './mutants.ts';

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

export const webhookMutants: Mutant[] = [
  {
    name: 'a declined attempt sends a webhook',
    only: 'HOOK-006,HOOK-001',
    caughtBy: ['HOOK-006'],
    traffic: {
      cannot:
        "a declined attempt is the sandbox's, and an unsigned event of a kind the document may add is allowed: nothing in the delivery says the payment failed",
    },
    stillPass: ['HOOK-001'],
    api: webhookOnDecline(0),
  },
  {
    name: 'a declined attempt sends a webhook two seconds later',
    only: 'HOOK-006',
    caughtBy: ['HOOK-006'],
    traffic: {
      cannot:
        "a declined attempt is the sandbox's, and an unsigned event of a kind the document may add is allowed: nothing in the delivery says the payment failed",
    },
    api: webhookOnDecline(2000),
  },
  {
    name: "a declined or expired session is delivered elsewhere (the target's own records list the attempt)",
    only: 'HOOK-006,HOOK-007,HOOK-001',
    caughtBy: ['HOOK-006', 'HOOK-007'],
    traffic: { cannot: "where a payment's events go is the target's own record, not traffic" },
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
    traffic: {
      cannot:
        'the same event may arrive again by another path (Duplicates): the traffic cannot tell a retry from a duplicate, nor which rail a payment took',
    },
    ...deliverAgainAfter(400),
  },
  {
    name: 'the legacy body names another foreignTransactionId',
    only: 'HOOK-022,HOOK-025',
    caughtBy: ['HOOK-025'],
    traffic: {
      cannot:
        "the legacy body's ids are not tied to the session's create in its own traffic: the mutant's id is as well formed",
    },
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
    traffic: { caughtBy: ['TRAFFIC-004'] },
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
    traffic: {
      cannot:
        'the same event may arrive again by another path (Duplicates): the traffic cannot tell a retry from a duplicate, nor which rail a payment took',
    },
    stillPass: ['HOOK-013'],
    ...(() => {
      const failures = new Map<string, number>();
      return extraAttempts((m, r) => {
        if (r.status !== 500) return false;
        const n = (failures.get(hookAddress(m)) ?? 0) + 1;
        failures.set(hookAddress(m), n);
        return n === 3;
      });
    })(),
  },
  {
    name: 'the webhook signature is over a re-serialised body (sent pretty-printed)',
    only: 'HOOK-001',
    caughtBy: ['HOOK-001'],
    traffic: {
      cannot:
        "a digest is judged with --webhook-secret, and a run's organisations each sign with their own, which its traffic does not hold",
    },
    hook: { request: (m) => ({ ...m, body: JSON.stringify(parse(m.body), null, 2) }) },
  },
  {
    name: 'createdAt is the time of each attempt, not of the event',
    only: 'HOOK-004,HOOK-001',
    caughtBy: ['HOOK-004'],
    traffic: {
      cannot:
        'the same event may arrive again by another path (Duplicates): the traffic cannot tell a retry from a duplicate, nor which rail a payment took',
    },
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
    traffic: { caughtBy: ['TRAFFIC-023'] },
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
    traffic: {
      cannot:
        'the same event may arrive again by another path (Duplicates): the traffic cannot tell a retry from a duplicate, nor which rail a payment took',
    },
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
    traffic: {
      cannot:
        'the same event may arrive again by another path (Duplicates): the traffic cannot tell a retry from a duplicate, nor which rail a payment took',
    },
    stillPass: ['HOOK-010'],
    ...deliverAgainAfter(400, 50),
  },
  {
    name: 'the open banking rail makes a second attempt after a 500',
    only: 'HOOK-015,HOOK-018',
    caughtBy: ['HOOK-015'],
    traffic: {
      cannot:
        'the same event may arrive again by another path (Duplicates): the traffic cannot tell a retry from a duplicate, nor which rail a payment took',
    },
    stillPass: ['HOOK-018'],
    ...deliverAgainAfter(500),
  },
  {
    name: 'after rotation deliveries are still signed with the old secret',
    only: 'HOOK-020,HOOK-024,HOOK-001',
    caughtBy: ['HOOK-020', 'HOOK-024'],
    traffic: {
      cannot:
        "a digest is judged with --webhook-secret, and a run's organisations each sign with their own, which its traffic does not hold",
    },
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
    traffic: {
      cannot: 'the fault is set through the sandbox: a signed delivery is what the traffic expects otherwise',
    },
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
    traffic: { caughtBy: ['TRAFFIC-020'] },
    hook: {
      request: (m) =>
        parse(m.body) && !parse(m.body).event
          ? { ...m, body: JSON.stringify({ event: 'checkout_session.completed', ...parse(m.body) }) }
          : m,
    },
  },
];

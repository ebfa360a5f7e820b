/**
 * The clause mutants of the service document's Events section, its response and retry
 * behaviour included (see ../clause-mutants.ts).
 */
import {
  addressOf,
  extraAttempts,
  hmac,
  hookAddress,
  isCreate,
  parse,
  pathOf,
  secretOf,
  signatureParts,
} from '../conformance-variants.ts';
import type { Knowledge, Message, Mutation, Reply } from '../mutating-proxy.ts';
import { type ClauseMutant, json, reply, sendEvent, deliveries } from './kit.ts';

export const eventClauseMutants: ClauseMutant[] = [
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
          const first = !seen.has(hookAddress(m));
          seen.add(hookAddress(m));
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
      const repeat = extraAttempts((m, r) => r.status === 500 && both.has(hookAddress(m)));
      return {
        hook: repeat.hook,
        api: {
          response: (m: Message, r: Reply, k: Knowledge, f: (m: Message) => Promise<Reply>) => {
            const body = isCreate(m) ? parse(m.body) : undefined;
            if (body?.checkoutMethod === 'both' && typeof body.webhookUrl === 'string')
              both.add(addressOf(body.webhookUrl));
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
];

/**
 * RCV checks of the Signature header and the receiver verification steps (Events): what a
 * receiver must accept (its exact raw bytes, parts in any order, extra digest versions, a
 * timestamp inside the tolerance) and reject (a tampered, re-serialised, stale, unsigned or
 * wrongly signed delivery, a header without v1), each for a transaction of its own.
 */
import { computeSignature, signWebhook } from '@payment-service/client/webhooks';
import { randomUUID } from 'node:crypto';
import type { Check } from '../../../runner/check-definition.ts';
import { now, type ReceiverContext, UNKNOWN_EVENT } from '../context.ts';

const SIGNATURE = 'Events: Signature header';

export const signatureChecks: Check<ReceiverContext>[] = [
  {
    id: 'RCV-002',
    clauses: ['verify.raw'],
    section: SIGNATURE,
    title: 'a tampered body (signature of the original) is rejected',
    run: async (r) => {
      const body = await r.event();
      const header = signWebhook(JSON.stringify(body), r.secret);
      r.rejects('A tampered body', await r.send(JSON.stringify({ ...body, foreignTransactionId: 'tampered' }), header));
    },
  },
  {
    id: 'RCV-003',
    clauses: ['verify.raw'],
    section: SIGNATURE,
    title:
      'a body with unusual spacing and escapes, signed over its exact bytes, is accepted (no re-serialising before verifying)',
    run: async (r) => {
      const tag = randomUUID().slice(0, 8);
      const e = await r.event({ foreignTransactionId: `caf\u00e9 \u2603 ${tag}` });
      const raw = `{ "event" : "${e.event}",\n  "createdAt":"${e.createdAt}" , "checkoutSessionId": "${e.checkoutSessionId}",\t"transactionId":"${e.transactionId}", "foreignTransactionId": "caf\\u00e9 \u2603 ${tag}" }`;
      r.accepts('A delivery verified over its exact raw bytes', await r.signed(raw));
    },
  },
  {
    id: 'RCV-004',
    clauses: ['verify.raw'],
    section: SIGNATURE,
    title: 'a body that differs from the signed bytes only by re-serialisation is rejected',
    run: async (r) => {
      const body = await r.event();
      const header = signWebhook(JSON.stringify(body), r.secret);
      r.rejects('A re-serialised body', await r.send(JSON.stringify(body, null, 2), header));
    },
  },
  {
    id: 'RCV-005',
    clauses: ['verify.age', 'limit.signature-age'],
    section: SIGNATURE,
    title: 'a correctly signed delivery with t ten minutes old is rejected',
    run: async (r) =>
      r.rejects('A stale timestamp (10 min)', await r.signed(JSON.stringify(await r.event()), now() - 600)),
  },
  {
    id: 'RCV-006',
    clauses: ['sig.reject-unsigned'],
    section: SIGNATURE,
    title: 'an event with no Service-Signature header is rejected',
    run: async (r) =>
      r.rejects('A delivery with no signature', await r.send(JSON.stringify(await r.event()), undefined)),
  },
  {
    id: 'RCV-007',
    clauses: ['verify.split', 'sig.versions'],
    section: SIGNATURE,
    title: 'a header with its parts reordered (v1=...,t=...) is accepted',
    run: async (r) => {
      const raw = JSON.stringify(await r.event());
      const t = now();
      await r.acceptsHeader(
        'A reordered header',
        await r.send(raw, `v1=${computeSignature(raw, r.secret, t)},t=${t}`),
        raw,
      );
    },
  },
  {
    id: 'RCV-008',
    clauses: ['sig.versions', 'ver.signature'],
    section: SIGNATURE,
    title: 'a header with an extra digest version (v2=) next to v1, before or after it, is accepted',
    run: async (r) => {
      const extra = 'ab'.repeat(32);
      const [after, before] = (await Promise.all([r.event(), r.event()])).map((e) => JSON.stringify(e)) as [
        string,
        string,
      ];
      const t = now();
      await r.acceptsHeader(
        'A header with v2= after v1',
        await r.send(after, `t=${t},v1=${computeSignature(after, r.secret, t)},v2=${extra}`),
        after,
      );
      await r.acceptsHeader(
        'A header with v2= before v1',
        await r.send(before, `t=${t},v2=${extra},v1=${computeSignature(before, r.secret, t)}`),
        before,
      );
    },
  },
  {
    id: 'RCV-011',
    clauses: ['verify.raw'],
    section: SIGNATURE,
    title: 'a delivery signed with another secret is rejected',
    run: async (r) => {
      const raw = JSON.stringify(await r.event());
      r.rejects('A wrong secret', await r.send(raw, signWebhook(raw, 'whsec_conformance_not_yours')));
    },
  },
  {
    id: 'RCV-012',
    clauses: ['verify.split'],
    section: SIGNATURE,
    title: 'a header without v1 (only t and v2) is rejected',
    run: async (r) => {
      const raw = JSON.stringify(await r.event());
      const t = now();
      r.rejects('A header without v1', await r.send(raw, `t=${t},v2=${computeSignature(raw, r.secret, t)}`));
    },
  },
  {
    id: 'RCV-015',
    clauses: ['sig.reject-unsigned', 'verify.parse-after'],
    section: SIGNATURE,
    title:
      'an unknown event value sent with no Service-Signature header is rejected (verify before looking at the event)',
    run: async (r) =>
      r.rejects(
        'An unsigned delivery of an unknown event',
        await r.send(JSON.stringify(await r.event({ event: UNKNOWN_EVENT })), undefined),
      ),
  },
  {
    id: 'RCV-016',
    clauses: ['verify.age', 'limit.signature-age'],
    section: SIGNATURE,
    title: 'a correctly signed delivery with t four minutes old is accepted (within the five-minute tolerance)',
    run: async (r) =>
      r.accepts('A timestamp four minutes old', await r.signed(JSON.stringify(await r.event()), now() - 240)),
  },
];

/**
 * Idempotent creates (service document: POST /api/checkout-sessions, Idempotency rules;
 * Limits: Idempotency-Key memory). The same key and body within 24 hours completes the
 * original request or replays its result; a different body is `idempotency_error`.
 */
import { isDeepStrictEqual } from 'node:util';
import { sessionBody } from '../context.ts';
import type { Check } from '../types.ts';

const section = 'Endpoints: POST /api/checkout-sessions (idempotency)';
const HOUR = 3600;
/** Resources: Checkout session (create response). */
const DOCUMENTED_CREATE_FIELDS = [
  'id',
  'status',
  'url',
  'code',
  'amount',
  'checkoutMethod',
  'reference',
  'testMode',
  'expiresAt',
];

export const idempotencyChecks: Check[] = [
  {
    id: 'IDEM-001',
    level: 'must',
    rule: 'Idempotency rules 1',
    section,
    title: 'the same key with an identical body replays the result: 200, the same session',
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      const key = ctx.newKey();
      const body = sessionBody({ foreignTransactionId: key });
      const first = await ctx.createSession(org, body, { idempotencyKey: key });
      ctx.expectStatus(first, 200, 'the first create');
      const second = await ctx.createSession(org, body, { idempotencyKey: key });
      ctx.expectStatus(second, 200, 'the repeated create with the same key and body');
      ctx.expect(
        second.json?.id === first.json?.id,
        `The repeat must replay the original session ${first.json?.id}; it answered ${second.json?.id}.`,
        second,
      );
      // The documented fields of the result are replayed; extra fields may differ.
      const changed = DOCUMENTED_CREATE_FIELDS.filter((f) => !isDeepStrictEqual(second.json?.[f], first.json?.[f]));
      ctx.expect(
        changed.length === 0,
        `The replayed result differs from the original in ${changed.join(', ')}.`,
        second,
      );
    },
  },
  {
    id: 'IDEM-002',
    level: 'must',
    rule: 'Idempotency rules 2',
    section,
    title: 'the same key with a different body gives 400 idempotency_error',
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      const key = ctx.newKey();
      const first = await ctx.createSession(org, sessionBody({ amount: { total: 10 } }), { idempotencyKey: key });
      ctx.expectStatus(first, 200, 'the first create');
      const second = await ctx.createSession(org, sessionBody({ amount: { total: 11 } }), { idempotencyKey: key });
      ctx.expectError(second, 400, 'idempotency_error', 'the same key with a different amount');
    },
  },
  {
    id: 'IDEM-003',
    level: 'assumption',
    rule: 'Idempotency rules 1 (identical body)',
    section,
    title: 'a body with the same JSON value in another key order and spacing counts as identical',
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      const key = ctx.newKey();
      const body = sessionBody({ foreignTransactionId: key });
      const first = await ctx.createSession(org, body, { idempotencyKey: key });
      ctx.expectStatus(first, 200, 'the first create');
      const reordered = Object.fromEntries(Object.entries(body).reverse());
      const second = await ctx.api('POST', '/api/checkout-sessions', {
        token: await ctx.token(org),
        raw: JSON.stringify(reordered, null, 2),
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
      });
      ctx.expectStatus(second, 200, 'the same value reordered and re-spaced');
      ctx.expect(
        second.json?.id === first.json?.id,
        `Expected a replay of ${first.json?.id}; received ${second.json?.id}.`,
        second,
      );
    },
  },
  {
    id: 'IDEM-004',
    level: 'must',
    rule: 'Limits: Idempotency-Key memory',
    section,
    title: 'the key is remembered for 24 hours: a repeat 23 h 50 min later replays the same session',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const key = ctx.newKey();
      const body = sessionBody();
      const first = await ctx.createSession(org, body, { idempotencyKey: key });
      ctx.expectStatus(first, 200, 'the first create');
      await ctx.advanceClock(org, 23 * HOUR + 50 * 60);
      const second = await ctx.createSession(org, body, { idempotencyKey: key });
      ctx.expectStatus(second, 200, 'the repeat 23 h 50 min later');
      ctx.expect(
        second.json?.id === first.json?.id,
        `Expected the original session ${first.json?.id} 23 h 50 min later; received ${second.json?.id}.`,
        second,
      );
      const mismatch = await ctx.createSession(org, sessionBody({ amount: { total: 99 } }), { idempotencyKey: key });
      ctx.expectError(mismatch, 400, 'idempotency_error', 'a different body under the same key 23 h 50 min later');
    },
  },
  {
    id: 'IDEM-005',
    level: 'assumption',
    rule: 'Errors: Codes idempotency_error (keys are remembered 24 hours)',
    section,
    title: 'after 24 hours the key is forgotten: a different body under it is accepted',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const key = ctx.newKey();
      const first = await ctx.createSession(org, sessionBody(), { idempotencyKey: key });
      ctx.expectStatus(first, 200, 'the first create');
      await ctx.advanceClock(org, 24 * HOUR + 10 * 60);
      const later = await ctx.createSession(org, sessionBody({ amount: { total: 99 } }), { idempotencyKey: key });
      ctx.expectStatus(later, 200, 'a different body under the key 24 h 10 min later');
      ctx.expect(later.json?.id !== first.json?.id, 'A new session was expected after the key was forgotten.', later);
    },
  },
  {
    id: 'IDEM-006',
    level: 'must',
    rule: 'Idempotency rules 1 (concurrent)',
    section,
    title: 'concurrent creates with the same key and body make one session: every answer 200 with the same id',
    async run(ctx) {
      const org = await ctx.organisation();
      const token = await ctx.token(org);
      const key = ctx.newKey();
      const body = sessionBody({ foreignTransactionId: key });
      const answers = await Promise.all(
        Array.from({ length: 12 }, () => ctx.createSession(org, body, { idempotencyKey: key, token })),
      );
      for (const answer of answers) ctx.expectStatus(answer, 200, 'one of 12 concurrent creates with the same key');
      const ids = new Set(answers.map((a) => a.json?.id));
      ctx.expect(
        ids.size === 1,
        `12 concurrent creates with one key made ${ids.size} sessions: ${[...ids].join(', ')}.`,
        answers.at(-1),
      );
    },
  },
  {
    id: 'IDEM-007',
    level: 'must',
    rule: 'Idempotency rules 1 (retry after 500)',
    section,
    title:
      'after a 500 that committed, a retry with the same key (10 min later on the clock) completes the original: the session created before the 500, not a new one',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      await ctx.sandbox('POST', '/sandbox/faults', { kind: 'internal_error_after_commit', orgId: org.id });
      const key = ctx.newKey();
      const body = sessionBody({ foreignTransactionId: key });
      const first = await ctx.createSession(org, body, { idempotencyKey: key });
      ctx.expectError(first, 500, 'internal_error', 'the create under the internal_error_after_commit fault');
      // Move the organisation's clock, so a session made by the retry would be told apart
      // from the one committed before the 500 by its createdAt.
      const now = await ctx.advanceClock(org, 10 * 60);
      const retry = await ctx.createSession(org, body, { idempotencyKey: key });
      ctx.expectStatus(retry, 200, 'the retry with the same key after a 500');
      const again = await ctx.createSession(org, body, { idempotencyKey: key });
      ctx.expectStatus(again, 200, 'a second retry');
      ctx.expect(
        again.json?.id === retry.json?.id,
        `The retries answered two different sessions (${retry.json?.id}, ${again.json?.id}).`,
        again,
      );
      const read = await ctx.readSession(org, retry.json.id);
      ctx.expectStatus(read, 200, 'reading the session the retry answered');
      ctx.expect(
        read.json?.foreignTransactionId === key,
        'The session the retry answered is not the one that was requested.',
        read,
      );
      const createdAt = Date.parse(read.json?.createdAt);
      const advancedTo = Date.parse(now ?? '');
      if (Number.isFinite(advancedTo)) {
        ctx.expect(
          Number.isFinite(createdAt) && createdAt <= advancedTo - 5 * 60 * 1000,
          `The retry answered a session created at ${JSON.stringify(read.json?.createdAt)}, after the clock was moved 10 min on (to ${now}): a new session, not the one committed before the 500.`,
          read,
        );
      }
    },
  },
  {
    id: 'IDEM-008',
    level: 'assumption',
    rule: 'Idempotency rules (key scope)',
    section,
    title: 'keys are scoped to the organisation: another organisation using the same key gets its own session',
    needs: ['secondOrganisation'],
    async run(ctx) {
      const a = await ctx.sharedOrganisation();
      const b = await ctx.secondOrganisation();
      const key = ctx.newKey();
      const first = await ctx.createSession(a, sessionBody(), { idempotencyKey: key });
      ctx.expectStatus(first, 200, 'the first organisation’s create');
      const second = await ctx.createSession(b, sessionBody({ amount: { total: 12 } }), { idempotencyKey: key });
      ctx.expectStatus(second, 200, 'the other organisation’s create with the same key');
      ctx.expect(
        second.json?.id !== first.json?.id,
        'The other organisation was answered with the first organisation’s session.',
        second,
      );
    },
  },
];

/**
 * Idempotent creates (service document: POST /api/checkout-sessions, Idempotency rules;
 * Limits: Idempotency-Key memory). The same key and body within 24 hours completes the
 * original request or replays its result; a different body is `idempotency_error`.
 */
import type { RunCheck } from '../context/check-context.ts';
import { AdapterError } from '../../../core/adapter.ts';
import { expect, expectError, expectStatus } from '../assert.ts';
import { sessionBody } from '../context/api.ts';
import { at, show, text } from '../../../core/json.ts';
import { replayDifferences } from '../../../rules/session.ts';

const section = 'Endpoints: POST /api/checkout-sessions (idempotency)';
const HOUR = 3600;
export const idempotencyChecks: RunCheck[] = [
  {
    id: 'IDEM-001',
    clauses: ['idem.replay', 'create.idempotency-key'],
    section,
    title: 'the same key with an identical body replays the result: 200, the same session',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const key = ctx.newKey();
      const body = sessionBody({ foreignTransactionId: key });
      const first = await ctx.api.createSession(org, body, { idempotencyKey: key });
      expectStatus(first, 200, 'the first create');
      const second = await ctx.api.createSession(org, body, { idempotencyKey: key });
      expectStatus(second, 200, 'the repeated create with the same key and body');
      const [a, b] = [at(first.json, 'id'), at(second.json, 'id')];
      expect(b === a, `The repeat must replay the original session ${show(a)}; it answered ${show(b)}.`, second);
      // The documented fields of the result are replayed; extra fields may differ.
      const changed = replayDifferences(second.json, first.json);
      expect(changed.length === 0, `The replayed result differs from the original in ${changed.join(', ')}.`, second);
    },
  },
  {
    id: 'IDEM-002',
    clauses: ['idem.conflict', 'order.idempotency', 'code.idempotency'],
    section,
    title:
      'the same key with a body that differs in any one field (amount, reference, particulars, method, redirectUrl, foreignTransactionId, description) gives 400 idempotency_error',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const base = { amount: { total: 10 }, foreignTransactionId: 'idem-base', description: 'first' };
      // "A different body" is any difference, not only in the money fields.
      const changes: [string, Record<string, unknown>][] = [
        ['amount.total', { amount: { total: 11 } }],
        ['creditorReference.reference', { creditorReference: { reference: 'INV-1002' } }],
        ['creditorReference.particulars', { creditorReference: { reference: 'INV-1001', particulars: 'other' } }],
        ['checkoutMethod', { checkoutMethod: 'card' }],
        ['redirectUrl', { redirectUrl: 'https://shop.example.com/done?order=1002' }],
        ['foreignTransactionId', { foreignTransactionId: 'idem-other' }],
        ['description', { description: 'second' }],
      ];
      for (const [field, change] of changes) {
        const key = ctx.newKey();
        const first = await ctx.api.createSession(org, sessionBody(base), { idempotencyKey: key });
        expectStatus(first, 200, 'the first create');
        const second = await ctx.api.createSession(org, sessionBody({ ...base, ...change }), { idempotencyKey: key });
        expectError(second, 400, 'idempotency_error', `the same key with a different ${field}`);
      }
    },
  },
  {
    id: 'IDEM-003',
    assumption: '"identical body" means the same JSON value: key order and whitespace do not matter',
    clauses: ['idem.replay'],
    section,
    title: 'a body with the same JSON value in another key order and spacing counts as identical',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const key = ctx.newKey();
      const body = sessionBody({ foreignTransactionId: key });
      const first = await ctx.api.createSession(org, body, { idempotencyKey: key });
      expectStatus(first, 200, 'the first create');
      const reordered = Object.fromEntries(Object.entries(body).reverse());
      const second = await ctx.api.send('POST', '/api/checkout-sessions', {
        token: await ctx.api.token(org),
        raw: JSON.stringify(reordered, null, 2),
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
      });
      expectStatus(second, 200, 'the same value reordered and re-spaced');
      const [a, b] = [at(first.json, 'id'), at(second.json, 'id')];
      expect(b === a, `Expected a replay of ${show(a)}; received ${show(b)}.`, second);
    },
  },
  {
    id: 'IDEM-004',
    clauses: ['idem.replay', 'create.idempotency-key', 'limit.idempotency', 'code.idempotency'],
    section,
    title: 'the key is remembered for 24 hours: a repeat 23 h 50 min later replays the same session',
    requires: ['createOrganisation', 'advanceClock'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const key = ctx.newKey();
      const body = sessionBody();
      const first = await ctx.api.createSession(org, body, { idempotencyKey: key });
      expectStatus(first, 200, 'the first create');
      await ctx.target.advanceClock(org, 23 * HOUR + 50 * 60);
      const second = await ctx.api.createSession(org, body, { idempotencyKey: key });
      expectStatus(second, 200, 'the repeat 23 h 50 min later');
      const [a, b] = [at(first.json, 'id'), at(second.json, 'id')];
      expect(b === a, `Expected the original session ${show(a)} 23 h 50 min later; received ${show(b)}.`, second);
      const mismatch = await ctx.api.createSession(org, sessionBody({ amount: { total: 99 } }), {
        idempotencyKey: key,
      });
      expectError(mismatch, 400, 'idempotency_error', 'a different body under the same key 23 h 50 min later');
    },
  },
  {
    id: 'IDEM-005',
    assumption: 'a key remembered 24 hours is forgotten after them',
    clauses: ['code.idempotency', 'limit.idempotency'],
    section,
    title: 'after 24 hours the key is forgotten: a different body under it is accepted',
    requires: ['createOrganisation', 'advanceClock'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const key = ctx.newKey();
      const first = await ctx.api.createSession(org, sessionBody(), { idempotencyKey: key });
      expectStatus(first, 200, 'the first create');
      await ctx.target.advanceClock(org, 24 * HOUR + 10 * 60);
      const later = await ctx.api.createSession(org, sessionBody({ amount: { total: 99 } }), { idempotencyKey: key });
      expectStatus(later, 200, 'a different body under the key 24 h 10 min later');
      expect(
        at(later.json, 'id') !== at(first.json, 'id'),
        'A new session was expected after the key was forgotten.',
        later,
      );
    },
  },
  {
    id: 'IDEM-006',
    clauses: ['idem.replay', 'create.one'],
    section,
    title: 'concurrent creates with the same key and body make one session: every answer 200 with the same id',
    async run(ctx) {
      const org = await ctx.target.organisation();
      const token = await ctx.api.token(org);
      const key = ctx.newKey();
      const body = sessionBody({ foreignTransactionId: key });
      const answers = await Promise.all(
        Array.from({ length: 12 }, () => ctx.api.createSession(org, body, { idempotencyKey: key, token })),
      );
      for (const answer of answers) expectStatus(answer, 200, 'one of 12 concurrent creates with the same key');
      const ids = new Set(answers.map((a) => at(a.json, 'id')));
      expect(
        ids.size === 1,
        `12 concurrent creates with one key made ${ids.size} sessions: ${[...ids].map(show).join(', ')}.`,
        answers.at(-1),
      );
    },
  },
  {
    id: 'IDEM-007',
    clauses: ['idem.replay', 'order.500', 'status.500', 'code.internal'],
    section,
    title:
      'after a 500 that committed, a retry with the same key (10 min later on the clock) completes the original (the session created before the 500, not a new one) or replays the 500',
    requires: ['createOrganisation', 'injectFault', 'advanceClock'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      // The organisation's time before the 500: a retry that made a new session 10 minutes
      // later on its clock would be told apart by its createdAt.
      const before = await ctx.api.readSession(org, (await ctx.api.session(org)).id);
      const startedAt = Date.parse(text(before.json, 'createdAt') ?? '');
      await ctx.target.injectFault(org, 'internal_error_after_commit');
      const key = ctx.newKey();
      const body = sessionBody({ foreignTransactionId: key });
      const first = await ctx.api.createSession(org, body, { idempotencyKey: key });
      // A create that succeeded shows the fault never took effect; any failure it answered
      // is the target's own, to be judged.
      if (first.status === 200) {
        throw new AdapterError(
          'injectFault(internal_error_after_commit) did not take effect: the next create answered 200',
        );
      }
      expectError(first, 500, 'internal_error', 'the create under the internal_error_after_commit fault');
      await ctx.target.advanceClock(org, 10 * 60);
      const retry = await ctx.api.createSession(org, body, { idempotencyKey: key });
      // "Either completes the original request or replays its result": a replayed 500 is
      // the second, as long as it is replayed as it was (and never a session made anew).
      if (retry.status === 500) {
        expectError(retry, 500, 'internal_error', 'the retry, replaying the 500');
        const again = await ctx.api.createSession(org, body, { idempotencyKey: key });
        expectError(again, 500, 'internal_error', 'a second retry, replaying the 500 as the first did');
        return;
      }
      expectStatus(retry, 200, 'the retry with the same key after a 500');
      const again = await ctx.api.createSession(org, body, { idempotencyKey: key });
      expectStatus(again, 200, 'a second retry');
      const [r, a] = [text(retry.json, 'id'), text(again.json, 'id')];
      expect(a === r, `The retries answered two different sessions (${show(r)}, ${show(a)}).`, again);
      const read = await ctx.api.readSession(org, r ?? '');
      expectStatus(read, 200, 'reading the session the retry answered');
      expect(
        at(read.json, 'foreignTransactionId') === key,
        'The session the retry answered is not the one that was requested.',
        read,
      );
      const createdAt = Date.parse(text(read.json, 'createdAt') ?? '');
      if (Number.isFinite(startedAt)) {
        expect(
          Number.isFinite(createdAt) && createdAt < startedAt + 5 * 60 * 1000,
          `The retry answered a session created at ${show(at(read.json, 'createdAt'))}, after the clock was moved 10 min on from ${show(at(before.json, 'createdAt'))}: a new session, not the one committed before the 500.`,
          read,
        );
      }
    },
  },
  {
    id: 'IDEM-008',
    assumption: 'keys are scoped to the organisation and mode of the API key',
    clauses: ['idem.replay', 'idem.conflict'],
    section,
    title: 'keys are scoped to the organisation: another organisation using the same key gets its own session',
    async run(ctx) {
      const a = await ctx.target.sharedOrganisation();
      const b = await ctx.target.secondOrganisation();
      const key = ctx.newKey();
      const first = await ctx.api.createSession(a, sessionBody(), { idempotencyKey: key });
      expectStatus(first, 200, 'the first organisation’s create');
      const second = await ctx.api.createSession(b, sessionBody({ amount: { total: 12 } }), { idempotencyKey: key });
      expectStatus(second, 200, 'the other organisation’s create with the same key');
      expect(
        at(second.json, 'id') !== at(first.json, 'id'),
        'The other organisation was answered with the first organisation’s session.',
        second,
      );
    },
  },
  {
    id: 'IDEM-010',
    clauses: ['idem.replay', 'idem.conflict', 'code.card', 'code.validation-failed'],
    section,
    title:
      'a create refused (configuration, or validation) and sent again with the same key and body gets the same refusal, never idempotency_error',
    async run(ctx) {
      // "Either completes the original request or replays its result": both give the
      // refusal again; idempotency_error is for a different body only.
      const noCard = await ctx.target.organisation({ cardEnabled: false });
      const key = ctx.newKey();
      const body = sessionBody({ checkoutMethod: 'card' });
      const first = await ctx.api.createSession(noCard, body, { idempotencyKey: key });
      expectError(first, 400, 'card_not_enabled', 'a card session on an organisation without card payments');
      const again = await ctx.api.createSession(noCard, body, { idempotencyKey: key });
      expectError(again, 400, 'card_not_enabled', 'the same create, same key and body, sent again');
      const org = await ctx.target.sharedOrganisation();
      const invalidKey = ctx.newKey();
      const invalid = sessionBody({ amount: { total: 0 } });
      const refused = await ctx.api.createSession(org, invalid, { idempotencyKey: invalidKey });
      expectError(refused, 400, 'validation_failed', 'a create with total 0');
      const repeated = await ctx.api.createSession(org, invalid, { idempotencyKey: invalidKey });
      expectError(repeated, 400, 'validation_failed', 'the same invalid create, same key and body, sent again');
    },
  },
  {
    id: 'IDEM-011',
    clauses: ['auth.mode', 'conv.mode', 'res.create.test-mode', 'idem.replay'],
    section,
    title:
      'a live key using a key a test key used, with the same body, is never answered with the test session: mode is decided by the API key',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const key = ctx.newKey();
      const body = sessionBody({ foreignTransactionId: key });
      const test = await ctx.api.createSession(org, body, { idempotencyKey: key });
      expectStatus(test, 200, 'the create with the test key');
      const live = await ctx.api.createSession(org, body, { idempotencyKey: key, mode: 'live' });
      // Which keys share a memory the document leaves open (IDEM-008's assumption): a key
      // remembered per organisation may refuse the live create as a reused key; what the
      // document rules out is a live key answered with the test key's payment.
      if (live.status === 400 && at(live.json, 'error', 'code') === 'idempotency_error') return;
      expectStatus(live, 200, 'the same create with the live key (or 400 idempotency_error, the key taken)');
      expect(
        at(live.json, 'testMode') === false && at(live.json, 'id') !== at(test.json, 'id'),
        `The live key was answered ${at(live.json, 'id') === at(test.json, 'id') ? 'the test key’s session' : 'a session'} with testMode ${show(at(live.json, 'testMode'))}: test or live is decided by the API key used.`,
        live,
      );
    },
  },
  {
    id: 'IDEM-009',
    clauses: ['create.one'],
    section,
    title: 'without an Idempotency-Key, each create makes a payment of its own: two identical bodies, two sessions',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const body = sessionBody({ foreignTransactionId: `no-key-${ctx.newKey()}` });
      const first = await ctx.api.createSession(org, body);
      expectStatus(first, 200, 'the first create without a key');
      const second = await ctx.api.createSession(org, body);
      expectStatus(second, 200, 'the same create again without a key');
      expect(
        at(second.json, 'id') !== at(first.json, 'id'),
        'Two creates without an Idempotency-Key were answered with one session: a create makes one payment each time.',
        second,
      );
    },
  },
];

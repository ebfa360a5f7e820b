/**
 * Reading sessions back, isolation and the retired path (service document: GET
 * /api/checkout-sessions/{id}; Resources: Checkout session; Authentication 7-8; Legacy
 * transaction endpoints; States and transitions).
 */
import type { RunCheck } from '../context/check-context.ts';
import { expect, expectError, expectStatus, fail } from '../assert.ts';
import { sessionBody } from '../context/api.ts';
import type { Exchange } from '../../../core/exchange.ts';
import { at, show, text } from '../../../core/json.ts';
import { expiryProblem } from '../../../rules/session.ts';
import { CheckFailure } from '../../../core/outcome.ts';
import { poll } from '../../../core/poll.ts';

const section = 'Endpoints: GET /api/checkout-sessions/{id}';
/** creditorReference.code: max 12 chars from `[a-zA-Z0-9- ]` (Endpoints: POST /api/checkout-sessions). */
const CODE_RULE = /^[a-zA-Z0-9- ]{0,12}$/;

export const readChecks: RunCheck[] = [
  {
    id: 'READ-001',
    clauses: [
      'read.ok',
      'res.create.id',
      'res.create.status',
      'res.create.reference',
      'res.create.code',
      'res.read.id',
      'res.read.code',
      'res.read.amount',
      'res.read.reference',
      'res.create.method',
      'res.read.particulars',
      'res.read.foreign-id',
      'res.read.method',
      'res.read.test-mode',
      'read.id',
      'res.read.transaction-type',
      'create.foreign-id',
      'state.created',
      'conv.amounts',
    ],
    section,
    title:
      'a created session reads back with what was given: status created, amount, reference, code, checkoutMethod, foreignTransactionId, testMode',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const created = await ctx.api.session(org, {
        checkoutMethod: 'card',
        foreignTransactionId: 'order-read-1',
        creditorReference: { reference: 'READ-1', particulars: 'Parts 1', code: 'CODE-1' },
      });
      const read = await ctx.api.readSession(org, created.id);
      expectStatus(read, 200, 'reading a created session');
      const field = (path: string) => at(read.json, ...path.split('.'));
      const expectField = (path: string, ok: (value: unknown) => boolean, want: unknown) =>
        expect(ok(field(path)), `${path} must read ${show(want)}; received ${show(field(path))}.`, read);
      const is = (want: unknown) => (value: unknown) => value === want;
      expectField('id', is(created.id), created.id);
      expectField('status', is('created'), 'created');
      expectField('amount.total', is(25.5), 25.5);
      // The currency is filled in with the organisation's settlement currency.
      const currency = org.settings.settlementCurrency ?? text(created, 'amount', 'currency');
      expectField(
        'amount.currency',
        (value) => value === currency && (value === 'NZD' || value === 'AUD'),
        currency ?? 'the settlement currency',
      );
      expectField('reference', is('READ-1'), 'READ-1');
      expectField('particulars', is('Parts 1'), 'Parts 1');
      expectField('code', is('CODE-1'), 'CODE-1');
      expectField('checkoutMethod', is('card'), 'card');
      expectField('foreignTransactionId', is('order-read-1'), 'order-read-1');
      expectField('testMode', is(true), true);
      // Before completion transactionType reads open_banking whatever checkoutMethod is.
      expectField('transactionType', is('open_banking'), 'open_banking');
    },
  },
  {
    id: 'READ-002',
    clauses: ['read.errors', 'code.not-found', 'status.404'],
    section,
    title: 'an unknown session id gives 404 not_found',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const read = await ctx.api.readSession(org, 'cs_conformance_does_not_exist');
      expectError(read, 404, 'not_found', 'reading an unknown session');
    },
  },
  {
    id: 'READ-003',
    clauses: ['read.isolation', 'auth.isolation', 'code.not-found'],
    section,
    title: "another organisation's session gives 404 not_found, never 403",
    async run(ctx) {
      const owner = await ctx.target.sharedOrganisation();
      const other = await ctx.target.secondOrganisation();
      const created = await ctx.api.session(owner);
      // Read by its owner first, so nothing the owner's read leaves behind (a cache) can let another in.
      expectStatus(await ctx.api.readSession(owner, created.id), 200, 'the owner reading its session');
      const read = await ctx.api.readSession(other, created.id);
      expect(
        read.status !== 403,
        "Another organisation's session was answered 403; the document requires 404 not_found, never 403.",
        read,
      );
      expectError(read, 404, 'not_found', "reading another organisation's session");
    },
  },
  {
    id: 'READ-004',
    clauses: ['legacy.retired', 'ver.retired', 'code.not-found'],
    section,
    title: 'the retired GET /api/transaction/{cs_id} gives 404 not_found for a checkout session',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const created = await ctx.api.session(org);
      const read = await ctx.api.send('GET', `/api/transaction/${encodeURIComponent(created.id)}`, {
        token: await ctx.api.token(org),
      });
      expectError(read, 404, 'not_found', 'GET /api/transaction/{cs_id}');
    },
  },
  {
    id: 'READ-005',
    clauses: ['res.create.expires', 'res.read.expires', 'limit.session'],
    section,
    title: 'expiresAt is 24 hours after creation, on the create and on the read',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const created = await ctx.api.session(org);
      const read = await ctx.api.readSession(org, created.id);
      expectStatus(read, 200, 'reading a created session');
      const expiresAt = Date.parse(text(read.json, 'expiresAt') ?? '');
      const problem = expiryProblem(read.json);
      if (problem) fail(problem, read);
      expect(
        Math.abs(expiresAt - Date.parse(text(created, 'expiresAt') ?? '')) < 1000,
        'expiresAt differs between the create and the read.',
        read,
      );
    },
  },
  {
    id: 'READ-006',
    clauses: ['state.expired', 'limit.session'],
    section,
    title: 'an unpaid session still reads created 23 h 50 min after creation, and expired once 24 hours have passed',
    requires: ['createOrganisation', 'advanceClock'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const created = await ctx.api.session(org);
      await ctx.target.advanceClock(org, 23 * 3600 + 50 * 60);
      const live = await ctx.api.readSession(org, created.id);
      expectStatus(live, 200, 'reading the session 23 h 50 min later');
      expect(
        at(live.json, 'status') === 'created',
        `An unpaid session lives 24 hours; 23 h 50 min after creation it reads ${show(at(live.json, 'status'))}, not created.`,
        live,
      );
      await ctx.target.advanceClock(org, 11 * 60);
      const read = await ctx.api.readSessionUntil(org, created.id, 'expired');
      expectStatus(read, 200, 'reading the session 24 h 1 min after creation');
      const status = at(read.json, 'status');
      expect(status === 'expired', `status must be expired 24 hours after creation; received ${show(status)}.`, read);
    },
  },
  {
    id: 'READ-012',
    clauses: ['res.create.expires', 'res.read.expires', 'limit.session', 'state.created'],
    section,
    title:
      'on an organisation whose clock has moved a day and more, a new session reads created and expires 24 hours after its own createdAt',
    requires: ['createOrganisation', 'advanceClock'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      await ctx.target.advanceClock(org, 25 * 3600);
      const created = await ctx.api.session(org);
      const read = await ctx.api.readSession(org, created.id);
      expectStatus(read, 200, 'reading a session created after the clock moved');
      expect(
        at(read.json, 'status') === 'created',
        `A session created now must read created; received ${show(at(read.json, 'status'))}.`,
        read,
      );
      const problem = expiryProblem(read.json);
      if (problem) fail(`On an organisation whose clock moved: ${problem}`, read);
    },
  },
  {
    id: 'READ-007',
    clauses: ['auth.mode', 'conv.mode', 'conv.host', 'res.create.test-mode'],
    section,
    title: 'testMode is decided by the API key: false with a live key, true with a test key',
    async run(ctx) {
      const org = await ctx.target.organisation();
      const live = await ctx.api.createSession(org, sessionBody(), { mode: 'live' });
      expectStatus(live, 200, 'creating with a live key');
      const liveMode = at(live.json, 'testMode');
      expect(liveMode === false, `testMode must be false for a live key; received ${show(liveMode)}.`, live);
      const test = await ctx.api.session(org);
      expect(test.testMode === true, `testMode must be true for a test key; received ${show(test.testMode)}.`);
    },
  },
  {
    id: 'READ-008',
    clauses: ['legacy.link', 'link.endpoints', 'res.link'],
    section,
    title:
      'GET /api/transaction/{link id} answers while the payment link is payable and is 404 not_found once it settles',
    requires: ['attempt'],
    uses: ['paymentLinks'],
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const token = await ctx.api.token(org);
      const id = await ctx.target.paymentLink(org, { reference: 'LINK-READ' });
      const path = encodeURIComponent(id);
      const payable = await ctx.api.send('GET', `/api/transaction/${path}`, { token });
      expectStatus(payable, 200, 'GET /api/transaction/{id} for a payable payment link');
      await ctx.target.attempt(org, { kind: 'payment-link', id }, 'card', 'succeeded');
      // A target may settle the link a moment after the attempt: read until it does.
      const settled = await poll(
        () => ctx.api.send('GET', `/api/transaction/${path}`, { token }),
        (read) => read.status !== 200,
        ctx.run.settings.settleTimeoutMs,
      );
      expectError(settled, 404, 'not_found', 'GET /api/transaction/{id} for a settled payment link');
      const read = await ctx.api.send('GET', `/api/payment-links/${path}`, { token });
      expectStatus(read, 200, 'GET /api/payment-links/{id} after it settled (the supported read)');
    },
  },
  {
    id: 'READ-009',
    clauses: ['create.code', 'res.create.code'],
    section,
    title: 'a creditorReference.code left out is generated: returned as code on the create and the same on the read',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const created = await ctx.api.session(org, { creditorReference: { reference: 'NO-CODE' } });
      const code = at(created, 'code');
      expect(
        typeof code === 'string' && code.length > 0,
        `An omitted code must be generated and returned as code; received ${show(code)}.`,
      );
      const read = await ctx.api.readSession(org, created.id);
      expectStatus(read, 200, 'reading a session created without a code');
      expect(
        at(read.json, 'code') === code,
        `The read must give the generated code ${show(code)}; received ${show(at(read.json, 'code'))}.`,
        read,
      );
    },
  },
  {
    id: 'READ-013',
    clauses: ['create.code', 'res.create.code', 'res.read.code', 'limit.code'],
    section,
    title:
      'a generated code obeys the rule of a given one: at most 12 characters from [a-zA-Z0-9- ], on the create and the read, for each checkoutMethod',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const problems: string[] = [];
      let evidence: Exchange | undefined;
      for (const checkoutMethod of ['open_banking', 'card', 'both'] as const) {
        const created = await ctx.api.session(org, {
          checkoutMethod,
          creditorReference: { reference: `GEN-${checkoutMethod.slice(0, 4).toUpperCase()}` },
        });
        const read = await ctx.api.readSession(org, created.id);
        expectStatus(read, 200, 'reading a session created without a code');
        // "generated if omitted and returned as code": the value the payer's statement shows
        // is bound by the field's rule, whoever wrote it.
        for (const [where, code, exchange] of [
          ['create', at(created, 'code'), undefined],
          ['read', at(read.json, 'code'), read],
        ] as const) {
          if (typeof code === 'string' && CODE_RULE.test(code)) continue;
          problems.push(`${checkoutMethod} session ${created.id}: the ${where} gives code ${show(code)}`);
          evidence ??=
            exchange ??
            ctx.api.exchanges.findLast((e) => e.request.method === 'POST' && at(e.json, 'id') === created.id);
        }
      }
      if (problems.length > 0)
        throw new CheckFailure(
          `A generated code must obey the rule of creditorReference.code (at most 12 characters from [a-zA-Z0-9- ]): ${problems.join('; ')}.`,
          evidence ? { exchange: evidence } : undefined,
        );
    },
  },
  {
    id: 'READ-010',
    clauses: ['auth.isolation', 'code.not-found'],
    section,
    title: "another organisation's payment link gives 404 not_found, never 403",
    uses: ['paymentLinks'],
    async run(ctx) {
      const owner = await ctx.target.sharedOrganisation();
      const other = await ctx.target.secondOrganisation();
      const id = await ctx.target.paymentLink(owner, { reference: 'LINK-ISO' });
      const path = `/api/payment-links/${encodeURIComponent(id)}`;
      const own = await ctx.api.send('GET', path, { token: await ctx.api.token(owner) });
      expectStatus(own, 200, 'reading a payment link by its own organisation');
      const read = await ctx.api.send('GET', path, { token: await ctx.api.token(other) });
      expect(
        read.status !== 403,
        "Another organisation's payment link was answered 403; the document requires 404 not_found.",
        read,
      );
      expectError(read, 404, 'not_found', "reading another organisation's payment link");
    },
  },
  {
    id: 'READ-011',
    clauses: ['code.not-found', 'link.endpoints'],
    section,
    title: 'an unknown payment link id, and an unknown transaction id, give 404 not_found',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const token = await ctx.api.token(org);
      // A link's id is its transaction's UUID; whatever shapes a target gives links and
      // legacy transactions, an id that does not exist is not_found.
      const unknown = '00000000-0000-4000-8000-00000000c0de';
      for (const path of [`/api/payment-links/${unknown}`, `/api/transaction/${unknown}`]) {
        const read = await ctx.api.send('GET', path, { token });
        expectError(read, 404, 'not_found', `GET ${path}`);
      }
    },
  },
];

/**
 * Reading sessions back, isolation and the retired path (service document: GET
 * /api/checkout-sessions/{id}; Resources: Checkout session; Authentication 7-8; Legacy
 * transaction endpoints; States and transitions).
 */
import { sessionBody } from '../context.ts';
import { CheckSkipped, type Check } from '../types.ts';

const section = 'Endpoints: GET /api/checkout-sessions/{id}';
const DAY_MS = 24 * 3600 * 1000;

export const readChecks: Check[] = [
  {
    id: 'READ-001',
    level: 'must',
    rule: 'Resources: Checkout session (read response)',
    section,
    title:
      'a created session reads back with what was given: status created, amount, reference, code, checkoutMethod, foreignTransactionId, testMode',
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      const created = await ctx.session(org, {
        checkoutMethod: 'card',
        foreignTransactionId: 'order-read-1',
        creditorReference: { reference: 'READ-1', particulars: 'Parts 1', code: 'CODE-1' },
      });
      const read = await ctx.readSession(org, created.id);
      ctx.expectStatus(read, 200, 'reading a created session');
      const s = read.json ?? {};
      const expect = (ok: boolean, field: string, want: unknown) =>
        ctx.expect(
          ok,
          `${field} must read ${JSON.stringify(want)}; received ${JSON.stringify(field.split('.').reduce((a: any, k) => a?.[k], s))}.`,
          read,
        );
      expect(s.id === created.id, 'id', created.id);
      expect(s.status === 'created', 'status', 'created');
      expect(s.amount?.total === 25.5, 'amount.total', 25.5);
      // The currency is filled in with the organisation's settlement currency.
      const currency = org.settings.settlementCurrency ?? created.amount?.currency;
      expect(
        s.amount?.currency === currency && ['NZD', 'AUD'].includes(s.amount?.currency),
        'amount.currency',
        currency ?? 'the settlement currency',
      );
      expect(s.reference === 'READ-1', 'reference', 'READ-1');
      expect(s.particulars === 'Parts 1', 'particulars', 'Parts 1');
      expect(s.code === 'CODE-1', 'code', 'CODE-1');
      expect(s.checkoutMethod === 'card', 'checkoutMethod', 'card');
      expect(s.foreignTransactionId === 'order-read-1', 'foreignTransactionId', 'order-read-1');
      expect(s.testMode === true, 'testMode', true);
      // Before completion transactionType reads open_banking whatever checkoutMethod is.
      expect(s.transactionType === 'open_banking', 'transactionType', 'open_banking');
    },
  },
  {
    id: 'READ-002',
    level: 'must',
    rule: 'GET /api/checkout-sessions/{id} rule 3',
    section,
    title: 'an unknown session id gives 404 not_found',
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      const read = await ctx.readSession(org, 'cs_conformance_does_not_exist');
      ctx.expectError(read, 404, 'not_found', 'reading an unknown session');
    },
  },
  {
    id: 'READ-003',
    level: 'must',
    rule: 'GET /api/checkout-sessions/{id} rule 2',
    section,
    title: "another organisation's session gives 404 not_found, never 403",
    needs: ['secondOrganisation'],
    async run(ctx) {
      const owner = await ctx.sharedOrganisation();
      const other = await ctx.secondOrganisation();
      const created = await ctx.session(owner);
      const read = await ctx.readSession(other, created.id);
      ctx.expect(
        read.status !== 403,
        "Another organisation's session was answered 403; the document requires 404 not_found, never 403.",
        read,
      );
      ctx.expectError(read, 404, 'not_found', "reading another organisation's session");
    },
  },
  {
    id: 'READ-004',
    level: 'must',
    rule: 'Legacy transaction endpoints; Versioning 5',
    section,
    title: 'the retired GET /api/transaction/{cs_id} gives 404 not_found for a checkout session',
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      const created = await ctx.session(org);
      const read = await ctx.api('GET', `/api/transaction/${encodeURIComponent(created.id)}`, {
        token: await ctx.token(org),
      });
      ctx.expectError(read, 404, 'not_found', 'GET /api/transaction/{cs_id}');
    },
  },
  {
    id: 'READ-005',
    level: 'must',
    rule: 'Resources: Checkout session expiresAt',
    section,
    title: 'expiresAt is 24 hours after creation, on the create and on the read',
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      const created = await ctx.session(org);
      const read = await ctx.readSession(org, created.id);
      ctx.expectStatus(read, 200, 'reading a created session');
      const span = Date.parse(read.json.expiresAt) - Date.parse(read.json.createdAt);
      ctx.expect(
        Math.abs(span - DAY_MS) <= 60_000,
        `expiresAt - createdAt is ${span / 3600000} h; the document says 24 hours.`,
        read,
      );
      ctx.expect(
        read.json.expiresAt === created.expiresAt ||
          Math.abs(Date.parse(read.json.expiresAt) - Date.parse(created.expiresAt)) < 1000,
        'expiresAt differs between the create and the read.',
        read,
      );
    },
  },
  {
    id: 'READ-006',
    level: 'must',
    rule: 'States and transitions: expired; States rule 3',
    section,
    title: 'an unpaid session reads expired once 24 hours have passed',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const created = await ctx.session(org);
      await ctx.advanceClock(org, 24 * 3600 + 60);
      const read = await ctx.readSession(org, created.id);
      ctx.expectStatus(read, 200, 'reading the session 24 h 1 min later');
      ctx.expect(
        read.json?.status === 'expired',
        `status must be expired 24 hours after creation; received ${JSON.stringify(read.json?.status)}.`,
        read,
      );
    },
  },
  {
    id: 'READ-007',
    level: 'must',
    rule: 'Authentication 7; Resources: testMode',
    section,
    title: 'testMode is decided by the API key: false with a live key, true with a test key',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.organisation();
      const live = await ctx.createSession(org, sessionBody(), { mode: 'live' });
      ctx.expectStatus(live, 200, 'creating with a live key');
      ctx.expect(
        live.json?.testMode === false,
        `testMode must be false for a live key; received ${JSON.stringify(live.json?.testMode)}.`,
        live,
      );
      const test = await ctx.session(org);
      ctx.expect(
        test.testMode === true,
        `testMode must be true for a test key; received ${JSON.stringify(test.testMode)}.`,
      );
    },
  },
  {
    id: 'READ-008',
    level: 'must',
    rule: 'Legacy transaction endpoints (payment links)',
    section,
    title:
      'GET /api/transaction/{link id} answers while the payment link is payable and is 404 not_found once it settles',
    needs: ['sandbox'],
    async run(ctx) {
      const org = await ctx.sharedOrganisation();
      const token = await ctx.token(org);
      // The payment link request shape is our modelling (the document does not show it).
      const link = await ctx.api('POST', '/api/payment-links', {
        token,
        json: {
          amount: { total: 15 },
          creditorReference: { reference: 'LINK-READ' },
          redirectUrl: 'https://shop.example.com/paid',
          checkoutMethod: 'card',
        },
      });
      if (link.status !== 200)
        throw new CheckSkipped(
          `POST /api/payment-links refused the modelled request (status ${link.status}); no link to read`,
        );
      const id = encodeURIComponent(link.json.id);
      const payable = await ctx.api('GET', `/api/transaction/${id}`, { token });
      ctx.expectStatus(payable, 200, 'GET /api/transaction/{id} for a payable payment link');
      await ctx.sandbox('POST', `/sandbox/payment-links/${id}/attempts`, { rail: 'card', outcome: 'succeeded' });
      const settled = await ctx.api('GET', `/api/transaction/${id}`, { token });
      ctx.expectError(settled, 404, 'not_found', 'GET /api/transaction/{id} for a settled payment link');
      const read = await ctx.api('GET', `/api/payment-links/${id}`, { token });
      ctx.expectStatus(read, 200, 'GET /api/payment-links/{id} after it settled (the supported read)');
    },
  },
];

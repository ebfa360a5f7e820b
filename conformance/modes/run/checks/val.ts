/**
 * Field validation of POST /api/checkout-sessions, each constraint on both sides of its
 * boundary (service document: Endpoints, POST /api/checkout-sessions parameters; Limits;
 * Errors: Envelope and Codes validation_failed). A refusal is 400 `validation_failed`
 * whose `details` name every failing field at once, `param` the field when exactly one
 * is to blame (else null).
 */
import { expect, expectError, expectStatus, fail } from '../assert.ts';
import { sessionBody } from '../context/api.ts';
import type { CheckContext, RunCheck } from '../context/check-context.ts';
import { at, show } from '../../../core/json.ts';
import { docUrlProblem, validationDetailsProblem } from '../../../rules/errors.ts';

const section = 'Endpoints: POST /api/checkout-sessions (validation)';

interface Case {
  id: string;
  clauses: readonly string[];
  title: string;
  patch: Record<string, unknown>;
  /** undefined: accepted (200); otherwise the fields `details` must name. */
  fails?: string[];
  /** Other codes that are also a correct answer (where the document allows two). */
  orCodes?: string[];
}

const ref = (reference: string) => ({ creditorReference: { reference } });

const cases: Case[] = [
  {
    id: 'VAL-001',
    clauses: ['create.total', 'limit.total', 'order.validation'],
    title: 'total 0 is refused (greater than 0)',
    patch: { amount: { total: 0 } },
    fails: ['amount.total'],
  },
  {
    id: 'VAL-002',
    clauses: ['create.total', 'limit.total', 'create.ok', 'conv.success'],
    title: 'total 0.01 is accepted',
    patch: { amount: { total: 0.01 } },
  },
  {
    id: 'VAL-048',
    clauses: ['create.total', 'limit.total'],
    title: 'total 0.01 is accepted for a card session too (the only floor is greater than 0, for every method)',
    patch: { amount: { total: 0.01 }, checkoutMethod: 'card' },
  },
  {
    id: 'VAL-049',
    clauses: ['create.total', 'limit.total'],
    title: 'total 0.01 is accepted for an open_banking session too',
    patch: { amount: { total: 0.01 }, checkoutMethod: 'open_banking' },
  },
  {
    id: 'VAL-003',
    clauses: ['create.total', 'limit.total'],
    title: 'total 19.99 is accepted (two decimals, checked exactly)',
    patch: { amount: { total: 19.99 } },
  },
  {
    id: 'VAL-004',
    clauses: ['create.total', 'limit.total'],
    title: 'total 10000 is accepted (the maximum)',
    patch: { amount: { total: 10000 } },
  },
  {
    id: 'VAL-005',
    clauses: ['create.total', 'limit.total', 'order.validation'],
    title: 'total 10000.01 is refused (over the maximum)',
    patch: { amount: { total: 10000.01 } },
    fails: ['amount.total'],
  },
  {
    id: 'VAL-006',
    clauses: ['create.total', 'limit.total', 'order.validation'],
    title: 'total 1.005 is refused (three decimals)',
    patch: { amount: { total: 1.005 } },
    fails: ['amount.total'],
  },
  {
    id: 'VAL-007',
    clauses: ['conv.amounts', 'create.total', 'order.validation'],
    title: 'total as a string ("25.00") is refused (a JSON number is required)',
    patch: { amount: { total: '25.00' } },
    fails: ['amount.total'],
  },
  {
    id: 'VAL-008',
    clauses: ['create.total', 'limit.total', 'order.validation'],
    title: 'a negative total is refused',
    patch: { amount: { total: -5 } },
    fails: ['amount.total'],
  },
  {
    id: 'VAL-009',
    clauses: ['create.reference', 'limit.reference'],
    title: 'a 12-character reference is accepted',
    patch: ref('ABCDEFGHIJ12'),
  },
  {
    id: 'VAL-010',
    clauses: ['create.reference', 'limit.reference', 'order.validation'],
    title: 'a 13-character reference is refused',
    patch: ref('ABCDEFGHIJ123'),
    fails: ['creditorReference.reference'],
  },
  {
    id: 'VAL-011',
    clauses: ['create.reference', 'limit.reference', 'order.validation'],
    title: 'an empty reference is refused (1 to 12 chars)',
    patch: ref(''),
    fails: ['creditorReference.reference'],
  },
  {
    id: 'VAL-012',
    clauses: ['create.reference'],
    title: "a reference using every allowed character kind [0-9A-Za-z '.,@_-] is accepted",
    patch: ref("aZ9 '.,@_-"),
  },
  {
    id: 'VAL-013',
    clauses: ['create.reference', 'order.validation'],
    title: 'a reference with a forbidden character (#) is refused',
    patch: ref('INV#1001'),
    fails: ['creditorReference.reference'],
  },
  {
    id: 'VAL-014',
    clauses: ['create.reference', 'order.validation'],
    title: 'a reference with a non-ASCII letter is refused',
    patch: ref('INVé1001'),
    fails: ['creditorReference.reference'],
  },
  {
    id: 'VAL-015',
    clauses: ['create.particulars', 'limit.particulars'],
    title: 'particulars of 12 allowed characters are accepted',
    patch: { creditorReference: { particulars: 'Order 1001-A' } },
  },
  {
    id: 'VAL-016',
    clauses: ['create.particulars', 'limit.particulars', 'order.validation'],
    title: 'particulars of 13 characters are refused',
    patch: { creditorReference: { particulars: 'Order 1001-AB' } },
    fails: ['creditorReference.particulars'],
  },
  {
    id: 'VAL-017',
    clauses: ['create.particulars', 'order.validation'],
    title: 'particulars with a forbidden character (_) are refused',
    patch: { creditorReference: { particulars: 'Order_1001' } },
    fails: ['creditorReference.particulars'],
  },
  {
    id: 'VAL-018',
    clauses: ['create.code', 'limit.code', 'res.create.code'],
    title: 'a code of 12 allowed characters is accepted and returned',
    patch: { creditorReference: { code: 'SHOP-12 abcd' } },
  },
  {
    id: 'VAL-019',
    clauses: ['create.code', 'limit.code', 'order.validation'],
    title: 'a code of 13 characters is refused',
    patch: { creditorReference: { code: 'SHOP-12 abcde' } },
    fails: ['creditorReference.code'],
  },
  {
    id: 'VAL-020',
    clauses: ['create.code', 'order.validation'],
    title: 'a code with a forbidden character (.) is refused',
    patch: { creditorReference: { code: 'SHOP.1' } },
    fails: ['creditorReference.code'],
  },
  {
    id: 'VAL-021',
    clauses: ['create.description', 'limit.description'],
    title: 'a 255-character description is accepted',
    patch: { description: 'd'.repeat(255) },
  },
  {
    id: 'VAL-022',
    clauses: ['create.description', 'limit.description', 'order.validation'],
    title: 'a 256-character description is refused',
    patch: { description: 'd'.repeat(256) },
    fails: ['description'],
  },
  {
    id: 'VAL-023',
    clauses: ['create.redirect-url', 'order.validation'],
    title: 'a relative redirectUrl is refused (valid absolute URL)',
    patch: { redirectUrl: '/checkout/done' },
    fails: ['redirectUrl'],
  },
  {
    id: 'VAL-024',
    clauses: ['create.redirect-url', 'order.validation'],
    title: 'a redirectUrl that is not a URL is refused',
    patch: { redirectUrl: 'not a url' },
    fails: ['redirectUrl'],
  },
  {
    id: 'VAL-025',
    clauses: ['create.redirect-url', 'order.validation'],
    title: 'a missing redirectUrl is refused',
    patch: { redirectUrl: undefined },
    fails: ['redirectUrl'],
  },
  {
    id: 'VAL-026',
    clauses: ['create.type', 'order.validation'],
    title: 'type other than single is refused',
    patch: { type: 'multiple' },
    fails: ['type'],
  },
  {
    id: 'VAL-027',
    clauses: ['create.type', 'order.validation'],
    title: 'a missing type is refused',
    patch: { type: undefined },
    fails: ['type'],
  },
  {
    id: 'VAL-028',
    clauses: ['create.checkout-method', 'order.validation'],
    title: 'an unknown checkoutMethod is refused',
    patch: { checkoutMethod: 'paypal' },
    fails: ['checkoutMethod'],
  },
  {
    id: 'VAL-029',
    clauses: ['create.checkout-method', 'res.create.amount'],
    title: 'each of open_banking, card and both is accepted',
    patch: {},
  },
  {
    id: 'VAL-030',
    clauses: ['create.currency', 'order.validation'],
    title: 'a currency other than NZD or AUD is refused',
    patch: { amount: { currency: 'USD' } },
    fails: ['amount.currency'],
    orCodes: ['currency_mismatch'],
  },
  {
    id: 'VAL-031',
    clauses: ['create.webhook-url', 'target.https', 'order.validation'],
    title: 'a plain http:// webhookUrl to a public host is refused (HTTPS)',
    patch: { webhookUrl: 'http://shop.example.com/hooks' },
    fails: ['webhookUrl'],
  },
  {
    id: 'VAL-032',
    clauses: ['code.validation-failed', 'err.details', 'err.details-entry', 'err.param'],
    title: 'details list every failing field at once, and param is null when several fail',
    patch: { amount: { total: 10000.01 }, creditorReference: { reference: 'ABCDEFGHIJ123' }, redirectUrl: 'not a url' },
    fails: ['amount.total', 'creditorReference.reference', 'redirectUrl'],
  },
  {
    id: 'VAL-033',
    clauses: ['create.reference', 'err.param', 'order.validation'],
    title: 'a missing creditorReference.reference is refused and named',
    patch: { creditorReference: { reference: undefined, particulars: 'Order 1' } },
    fails: ['creditorReference.reference'],
  },
  {
    id: 'VAL-035',
    clauses: ['create.reference', 'limit.reference'],
    title: 'a 1-character reference is accepted (1 to 12 chars)',
    patch: ref('A'),
  },
  {
    id: 'VAL-042',
    clauses: ['create.reference', 'order.validation'],
    title: 'a reference given as a number is refused (wrong type)',
    patch: { creditorReference: { reference: 1001 } },
    fails: ['creditorReference.reference'],
  },
  {
    id: 'VAL-043',
    clauses: ['create.redirect-url', 'order.validation'],
    title: 'a redirectUrl given as an object is refused (wrong type)',
    patch: { redirectUrl: { href: 'https://shop.example.com/done' } },
    fails: ['redirectUrl'],
  },
  {
    id: 'VAL-044',
    clauses: ['create.foreign-id', 'order.validation'],
    title: 'a foreignTransactionId given as a number is refused (wrong type)',
    patch: { foreignTransactionId: 1001 },
    fails: ['foreignTransactionId'],
  },
  {
    id: 'VAL-045',
    clauses: ['create.description', 'order.validation'],
    title: 'a description given as a number is refused (wrong type)',
    patch: { description: 42 },
    fails: ['description'],
  },
  {
    id: 'VAL-046',
    clauses: ['create.particulars', 'order.validation'],
    title: 'particulars given as a number are refused (wrong type)',
    patch: { creditorReference: { reference: 'INV-1001', particulars: 12 } },
    fails: ['creditorReference.particulars'],
  },
  {
    id: 'VAL-047',
    clauses: ['create.checkout-method', 'order.validation'],
    title: 'a checkoutMethod given as a list is refused (wrong type)',
    patch: { checkoutMethod: ['card'] },
    fails: ['checkoutMethod'],
  },
  {
    id: 'VAL-036',
    clauses: ['create.amount', 'order.validation'],
    title: 'a missing amount is refused and named in details',
    patch: { amount: undefined },
    fails: ['amount'],
  },
  {
    id: 'VAL-037',
    clauses: ['create.creditor-reference', 'order.validation'],
    title: 'a missing creditorReference is refused and named in details',
    patch: { creditorReference: undefined },
    fails: ['creditorReference'],
  },
  {
    id: 'VAL-038',
    clauses: ['create.checkout-method', 'order.validation'],
    title: 'a missing checkoutMethod is refused and named in details',
    patch: { checkoutMethod: undefined },
    fails: ['checkoutMethod'],
  },
  {
    id: 'VAL-039',
    clauses: ['create.total', 'limit.total', 'order.validation'],
    title: 'total 1.0000000001 is refused (ten decimals, however close to a whole cent)',
    patch: { amount: { total: 1.0000000001 } },
    fails: ['amount.total'],
  },
  {
    id: 'VAL-040',
    clauses: ['create.redirect-url', 'order.validation'],
    title: 'a redirectUrl with an empty host (https://) is refused (not a valid absolute URL; RFC 9110 4.2.1)',
    patch: { redirectUrl: 'https://' },
    fails: ['redirectUrl'],
  },
  {
    id: 'VAL-041',
    clauses: ['create.webhook-url', 'target.https', 'order.validation'],
    title: 'an https webhookUrl to a private address (10.0.0.1) is refused (publicly reachable), with a test key too',
    patch: { webhookUrl: 'https://10.0.0.1/hooks' },
    fails: ['webhookUrl'],
  },
];

async function accepted(ctx: CheckContext, c: Case) {
  const org = await ctx.target.sharedOrganisation();
  const methods = c.id === 'VAL-029' ? ['open_banking', 'card', 'both'] : [undefined];
  for (const method of methods) {
    const body = sessionBody(method ? { ...c.patch, checkoutMethod: method } : c.patch);
    const exchange = await ctx.api.createSession(org, body);
    expectStatus(exchange, 200, `${c.title.replace(/ is accepted.*$/, '')}`);
    const sentTotal = at(body, 'amount', 'total');
    if (sentTotal !== undefined) {
      const total = at(exchange.json, 'amount', 'total');
      expect(
        total === sentTotal,
        `The created session's amount.total is ${show(total)}, sent ${show(sentTotal)}.`,
        exchange,
      );
    }
    const sentCode = at(body, 'creditorReference', 'code');
    if (sentCode !== undefined) {
      const code = at(exchange.json, 'code');
      expect(
        code === sentCode,
        `The given creditorReference.code must be returned as code; received ${show(code)}.`,
        exchange,
      );
    }
  }
}

async function refused(ctx: CheckContext, c: Case) {
  const org = await ctx.target.sharedOrganisation();
  const exchange = await ctx.api.createSession(org, sessionBody(c.patch));
  const codes = ['validation_failed', ...(c.orCodes ?? [])];
  const error = expectError(exchange, 400, codes, c.title.replace(/ (is|are) refused.*$/, ''));
  if (error.code !== 'validation_failed') return;
  const problem = validationDetailsProblem(exchange.json, c.fails!);
  if (problem) fail(problem, exchange);
}

export const validationChecks: RunCheck[] = cases.map((c) => ({
  id: c.id,
  clauses: c.clauses,
  section,
  title: c.title,
  run: (ctx: CheckContext) => (c.fails ? refused(ctx, c) : accepted(ctx, c)),
}));

validationChecks.push({
  id: 'VAL-034',
  clauses: ['err.doc-url'],
  section,
  title: 'error.doc_url of validation_failed is {docs_url}/errors/#validation_failed',
  async run(ctx) {
    const org = await ctx.target.sharedOrganisation();
    const exchange = await ctx.api.createSession(org, sessionBody({ amount: { total: 0 } }));
    const error = expectError(exchange, 400, 'validation_failed', 'total 0');
    const problem = docUrlProblem(error.doc_url, 'validation_failed');
    if (problem) fail(problem, exchange);
  },
});

/**
 * Account-configuration errors of POST /api/checkout-sessions and the one order the
 * document states (service document: Validation and configuration order and errors;
 * Errors: Codes). `open_banking_currency_unsupported` comes before
 * `open_banking_not_enabled` and `settlement_account_missing`; where the document fixes
 * no order, any code that applies is a correct answer.
 */
import type { OrganisationSettings } from '../../../core/adapter.ts';
import { expect, expectError, expectStatus } from '../assert.ts';
import { sessionBody } from '../context/api.ts';
import type { CheckContext, RunCheck } from '../context/check-context.ts';
import { at, show } from '../../../core/json.ts';

const section = 'Endpoints: POST /api/checkout-sessions (configuration)';

async function expectConfigCode(
  ctx: CheckContext,
  settings: Partial<OrganisationSettings>,
  patch: Record<string, unknown>,
  codes: string | string[],
  what: string,
) {
  const org = await ctx.target.organisation(settings);
  const exchange = await ctx.api.createSession(org, sessionBody(patch));
  expectError(exchange, 400, codes, what);
}

export const configurationChecks: RunCheck[] = [
  {
    id: 'CFG-001',
    clauses: ['order.card', 'code.card', 'create.checkout-method', 'status.400'],
    section,
    title: 'card or both on an organisation without card payments gives 400 card_not_enabled',
    async run(ctx) {
      await expectConfigCode(
        ctx,
        { cardEnabled: false },
        { checkoutMethod: 'card' },
        'card_not_enabled',
        'checkoutMethod card, card not configured',
      );
      await expectConfigCode(
        ctx,
        { cardEnabled: false },
        { checkoutMethod: 'both' },
        'card_not_enabled',
        'checkoutMethod both, card not configured (open banking approved)',
      );
    },
  },
  {
    id: 'CFG-002',
    clauses: ['order.open-banking', 'code.open-banking', 'create.checkout-method'],
    section,
    title: 'open_banking or both without an approved open-banking application gives 400 open_banking_not_enabled',
    async run(ctx) {
      await expectConfigCode(
        ctx,
        { openBankingApproved: false },
        { checkoutMethod: 'open_banking' },
        'open_banking_not_enabled',
        'checkoutMethod open_banking, not approved',
      );
      await expectConfigCode(
        ctx,
        { openBankingApproved: false },
        { checkoutMethod: 'both' },
        'open_banking_not_enabled',
        'checkoutMethod both, open banking not approved (card enabled)',
      );
    },
  },
  {
    id: 'CFG-003',
    clauses: ['order.settlement', 'code.settlement'],
    section,
    title: 'a bank rail without a settlement account gives 400 settlement_account_missing',
    async run(ctx) {
      await expectConfigCode(
        ctx,
        { settlementAccount: false },
        { checkoutMethod: 'open_banking' },
        'settlement_account_missing',
        'checkoutMethod open_banking, no settlement account',
      );
    },
  },
  {
    id: 'CFG-010',
    clauses: ['order.settlement', 'code.settlement', 'create.ok'],
    section,
    title: 'a card session needs no settlement account: settlement_account_missing is for a bank rail only',
    async run(ctx) {
      const org = await ctx.target.organisation({ settlementAccount: false });
      const exchange = await ctx.api.createSession(org, sessionBody({ checkoutMethod: 'card' }));
      expectStatus(exchange, 200, 'checkoutMethod card, card enabled, no settlement account');
    },
  },
  {
    id: 'CFG-004',
    clauses: ['order.aud', 'code.aud', 'svc.rails', 'limit.open-banking-currency'],
    section,
    title: 'open_banking on an AUD organisation gives 400 open_banking_currency_unsupported',
    async run(ctx) {
      await expectConfigCode(
        ctx,
        { settlementCurrency: 'AUD' },
        { checkoutMethod: 'open_banking' },
        'open_banking_currency_unsupported',
        'checkoutMethod open_banking, AUD organisation',
      );
    },
  },
  {
    id: 'CFG-005',
    clauses: ['order.aud-first', 'code.aud'],
    section,
    title: 'open_banking_currency_unsupported comes before open_banking_not_enabled and settlement_account_missing',
    async run(ctx) {
      const aud = { settlementCurrency: 'AUD' as const };
      await expectConfigCode(
        ctx,
        { ...aud, openBankingApproved: false },
        { checkoutMethod: 'open_banking' },
        'open_banking_currency_unsupported',
        'AUD organisation, open banking not approved',
      );
      await expectConfigCode(
        ctx,
        { ...aud, settlementAccount: false },
        { checkoutMethod: 'open_banking' },
        'open_banking_currency_unsupported',
        'AUD organisation, no settlement account',
      );
      await expectConfigCode(
        ctx,
        { ...aud, openBankingApproved: false, settlementAccount: false },
        { checkoutMethod: 'open_banking' },
        'open_banking_currency_unsupported',
        'AUD organisation, neither',
      );
    },
  },
  {
    id: 'CFG-006',
    clauses: ['order.currency-mismatch', 'code.currency-mismatch', 'create.currency'],
    section,
    title: 'amount.currency other than the settlement currency gives 400 currency_mismatch',
    async run(ctx) {
      await expectConfigCode(
        ctx,
        {},
        { amount: { currency: 'AUD' } },
        'currency_mismatch',
        'AUD on an NZD organisation',
      );
      await expectConfigCode(
        ctx,
        { settlementCurrency: 'AUD' },
        { checkoutMethod: 'card', amount: { currency: 'NZD' } },
        'currency_mismatch',
        'NZD on an AUD organisation',
      );
    },
  },
  {
    id: 'CFG-007',
    clauses: ['create.currency', 'res.create.amount'],
    section,
    title: 'an omitted currency is filled in with the settlement currency',
    async run(ctx) {
      const org = await ctx.target.organisation({ settlementCurrency: 'AUD' });
      const exchange = await ctx.api.createSession(org, sessionBody({ checkoutMethod: 'card' }));
      expectStatus(exchange, 200, 'a card session on an AUD organisation without amount.currency');
      const currency = at(exchange.json, 'amount', 'currency');
      expect(currency === 'AUD', `amount.currency must be filled in as AUD; received ${show(currency)}.`, exchange);
    },
  },
  {
    id: 'CFG-008',
    clauses: ['order.card', 'order.open-banking', 'order.settlement'],
    section,
    title: 'where several configuration codes apply and no order is stated, one of them is answered',
    async run(ctx) {
      await expectConfigCode(
        ctx,
        { openBankingApproved: false, settlementAccount: false },
        { checkoutMethod: 'open_banking' },
        ['open_banking_not_enabled', 'settlement_account_missing'],
        'NZD organisation, open banking not approved and no settlement account',
      );
      await expectConfigCode(
        ctx,
        { cardEnabled: false, openBankingApproved: false },
        { checkoutMethod: 'both' },
        ['card_not_enabled', 'open_banking_not_enabled'],
        'both, neither rail configured',
      );
    },
  },
  {
    id: 'CFG-009',
    assumption: 'the table of validation and configuration errors is read top-down: validation before configuration',
    clauses: ['order.validation'],
    section,
    title: 'an invalid body on a misconfigured organisation gives validation_failed (validation before configuration)',
    async run(ctx) {
      await expectConfigCode(
        ctx,
        { cardEnabled: false },
        { checkoutMethod: 'card', amount: { total: 0 } },
        'validation_failed',
        'total 0, card not configured',
      );
    },
  },
];

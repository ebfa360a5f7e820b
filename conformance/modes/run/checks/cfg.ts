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
import type { Org } from '../context/organisations.ts';
import type { Exchange } from '../../../core/exchange.ts';
import { CheckFailure, CheckSkipped, NoVerdict } from '../../../core/outcome.ts';
import {
  type ConfigurationCell,
  cellName,
  configurationTable,
  currencyOf,
  everySettings,
} from '../../../rules/configuration.ts';
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
  {
    id: 'CFG-011',
    clauses: [
      'create.ok',
      'create.checkout-method',
      'create.currency',
      'order.currency-mismatch',
      'order.card',
      'order.open-banking',
      'order.settlement',
      'order.aud-first',
    ],
    section,
    title:
      'the configuration decision table, every cell (settlement currency × card × open banking × account × checkoutMethod × currency given, left out or the other): accepted where nothing it needs is missing, else one of the codes the stated order allows',
    async run(ctx) {
      const cells = configurationTable();
      const orgs = new Map<string, Org>();
      const missing: string[] = [];
      for (const settings of everySettings()) {
        try {
          orgs.set(JSON.stringify(settings), await ctx.target.organisation(settings));
        } catch (error) {
          if (!(error instanceof CheckSkipped)) throw error;
          missing.push(JSON.stringify(settings));
        }
      }
      // Every organisation or none: a table judged in part would pass on the cells it skipped.
      if (missing.length > 0) {
        throw new CheckSkipped(
          `needs an organisation for each of the 16 settings: createOrganisation, or a --config profile declaring each of ${missing.join(', ')}`,
          ['createOrganisation'],
        );
      }
      const wrong: Array<{ cell: ConfigurationCell; exchange: Exchange; saw: string }> = [];
      let limited = 0;
      for (const cell of cells) {
        const org = orgs.get(JSON.stringify(cell.settings))!;
        const currency = currencyOf(cell);
        const exchange = await ctx.api.createSession(
          org,
          sessionBody({ checkoutMethod: cell.method, amount: { total: 25.5, currency } }),
        );
        if (exchange.status === 429) {
          limited++;
          continue;
        }
        ctx.run.inputs.add(`create.configuration.${cellName(cell)}`);
        const code = at(exchange.json, 'error', 'code');
        const saw = exchange.status === 200 ? '200' : `${exchange.status} ${show(code)}`;
        const right =
          cell.codes.length === 0
            ? exchange.status === 200 && at(exchange.json, 'amount', 'currency') === cell.settings.settlementCurrency
            : exchange.status === 400 && typeof code === 'string' && cell.codes.includes(code);
        if (!right) wrong.push({ cell, exchange, saw });
      }
      const first = wrong[0];
      if (!first) {
        if (limited === cells.length) throw new NoVerdict(`every one of the ${cells.length} cells was answered 429`);
        ctx.note = `${cells.length - limited} of ${cells.length} cells judged${
          limited > 0 ? ` (${limited} answered 429)` : ''
        }; the table accepts ${cells.filter((c) => c.codes.length === 0).length}`;
        return;
      }
      const expected =
        first.cell.codes.length === 0 ? '200, in the settlement currency' : `400 ${first.cell.codes.join(' or ')}`;
      const broken =
        first.cell.codes.length === 0
          ? ['create.ok', 'create.checkout-method', 'create.currency']
          : [...new Set(first.cell.codes.map((c) => CODE_CLAUSES[c] ?? 'create.ok'))];
      throw new CheckFailure(
        `${cellName(first.cell)}: expected ${expected}; received ${first.saw}${
          wrong.length > 1
            ? ` (and ${wrong.length - 1} more of the ${cells.length} cells: ${wrong
                .slice(1, 4)
                .map((w) => `${cellName(w.cell)}: ${w.saw}`)
                .join('; ')}${wrong.length > 4 ? '; …' : ''})`
            : ''
        }.`,
        { exchange: first.exchange },
        broken,
      );
    },
  },
];

/** The clause that gives each configuration code its place in the order. */
const CODE_CLAUSES: Record<string, string> = {
  currency_mismatch: 'order.currency-mismatch',
  card_not_enabled: 'order.card',
  open_banking_not_enabled: 'order.open-banking',
  settlement_account_missing: 'order.settlement',
  open_banking_currency_unsupported: 'order.aud-first',
};

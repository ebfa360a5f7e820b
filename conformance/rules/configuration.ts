/**
 * The configuration decision table of POST /api/checkout-sessions (Validation and
 * configuration order and errors): for an organisation's settings, the checkoutMethod asked
 * for and the currency given, the codes the document allows. None applies: the create is
 * accepted. The one order it states: open_banking_currency_unsupported before
 * open_banking_not_enabled and settlement_account_missing; between the others it states
 * none, so any code that applies is right.
 */
import type { OrganisationSettings } from '../core/adapter.ts';

export type CheckoutMethod = 'open_banking' | 'card' | 'both';
export const CHECKOUT_METHODS: readonly CheckoutMethod[] = ['open_banking', 'card', 'both'];

/** The configuration codes that apply to a create, each one a right answer (an empty list: accepted). */
export function configCodes(settings: OrganisationSettings, method: CheckoutMethod, currency?: string): string[] {
  const codes: string[] = [];
  const bank = method !== 'card';
  if (currency !== undefined && currency !== settings.settlementCurrency) codes.push('currency_mismatch');
  if (method !== 'open_banking' && !settings.cardEnabled) codes.push('card_not_enabled');
  if (bank && settings.settlementCurrency === 'AUD') codes.push('open_banking_currency_unsupported');
  else {
    if (bank && !settings.openBankingApproved) codes.push('open_banking_not_enabled');
    if (bank && !settings.settlementAccount) codes.push('settlement_account_missing');
  }
  return codes;
}

/** How the create's currency is given: the settlement currency, left out (filled in), or the other one. */
export type CurrencyGiven = 'settlement' | 'omitted' | 'other';
export const CURRENCIES_GIVEN: readonly CurrencyGiven[] = ['settlement', 'omitted', 'other'];

/** One cell of the table: the organisation, the create, and what the document allows. */
export interface ConfigurationCell {
  settings: OrganisationSettings;
  method: CheckoutMethod;
  currency: CurrencyGiven;
  /** The codes allowed; empty: the create must be accepted. */
  codes: string[];
}

/** The currency a cell sends, or undefined when it leaves it out. */
export function currencyOf(cell: Pick<ConfigurationCell, 'settings' | 'currency'>): string | undefined {
  const { settlementCurrency } = cell.settings;
  if (cell.currency === 'omitted') return undefined;
  if (cell.currency === 'settlement') return settlementCurrency;
  return settlementCurrency === 'NZD' ? 'AUD' : 'NZD';
}

/** Every organisation the table's settings make: 2 currencies × card × open banking × account. */
export function everySettings(): OrganisationSettings[] {
  const all: OrganisationSettings[] = [];
  for (const settlementCurrency of ['NZD', 'AUD'] as const)
    for (const cardEnabled of [true, false])
      for (const openBankingApproved of [true, false])
        for (const settlementAccount of [true, false])
          all.push({ settlementCurrency, cardEnabled, openBankingApproved, settlementAccount });
  return all;
}

/** The whole table: every organisation × checkoutMethod × currency given, with its allowed codes. */
export function configurationTable(): ConfigurationCell[] {
  return everySettings().flatMap((settings) =>
    CHECKOUT_METHODS.flatMap((method) =>
      CURRENCIES_GIVEN.map((currency) => ({
        settings,
        method,
        currency,
        codes: configCodes(settings, method, currencyOf({ settings, currency })),
      })),
    ),
  );
}

/** A cell's name, the same in a report and in the reference pages: "NZD, card, no OB, account / both / omitted". */
export function cellName(cell: Pick<ConfigurationCell, 'settings' | 'method' | 'currency'>): string {
  const s = cell.settings;
  return `${s.settlementCurrency} org, card ${s.cardEnabled ? 'on' : 'off'}, open banking ${s.openBankingApproved ? 'approved' : 'not approved'}, ${s.settlementAccount ? 'an account' : 'no account'}: ${cell.method}, currency ${cell.currency === 'settlement' ? 'its own' : cell.currency === 'omitted' ? 'left out' : 'the other'}`;
}

/**
 * What the exploration sends (a pure part of its model): a small pool of create bodies, the
 * merchant's redirectUrl of each, and the settings of the second organisation.
 */
import type { OrganisationSettings } from '../../../core/adapter.ts';

export type Method = 'card' | 'open_banking' | 'both';

/** A create body of the exploration's pool: what it asks for, and the fields the document says are wrong in it. */
export interface BodySpec {
  checkoutMethod: Method;
  total: number;
  currency?: 'NZD' | 'AUD';
  reference: string;
  particulars?: string;
  code?: string;
  foreignTransactionId?: string;
  /** Sent with a webhookUrl of the suite's receiver. */
  hook: boolean;
  /** The fields that fail validation; empty for a valid body. */
  invalid: string[];
}

/**
 * A small pool, so that sequences repeat bodies (replays) and mix them (conflicts): valid
 * bodies of every method, with and without the optional fields and a webhookUrl, one with
 * a currency, and invalid ones failing one field and several.
 */
export const BODIES: readonly BodySpec[] = [
  { checkoutMethod: 'card', total: 25.5, reference: 'EXPL-1', hook: false, invalid: [] },
  {
    checkoutMethod: 'both',
    total: 10,
    reference: 'EXPL-2',
    foreignTransactionId: 'order-2',
    hook: true,
    invalid: [],
  },
  {
    checkoutMethod: 'open_banking',
    total: 99.99,
    reference: 'EXPL 3',
    particulars: 'Parts 3',
    code: 'CODE-3',
    foreignTransactionId: 'order-3',
    hook: true,
    invalid: [],
  },
  { checkoutMethod: 'card', total: 1, currency: 'NZD', reference: 'EXPL.4', hook: true, invalid: [] },
  { checkoutMethod: 'card', total: 0, reference: 'EXPL-5', hook: false, invalid: ['amount.total'] },
  {
    checkoutMethod: 'both',
    total: 10000.01,
    reference: 'EXPL-6-TOO-LONG',
    hook: false,
    invalid: ['amount.total', 'creditorReference.reference'],
  },
  { checkoutMethod: 'card', total: 42, currency: 'AUD', reference: 'EXPL-7', hook: true, invalid: [] },
  // Body 1 with particulars: the same money, another body (a conflict under one key).
  { checkoutMethod: 'card', total: 25.5, reference: 'EXPL-1', particulars: 'Again', hook: false, invalid: [] },
];

/**
 * The merchant's redirectUrl of a body: its own query, with a parameter repeated for every
 * other body (the redirect keeps the merchant's query as it was, every value of it).
 */
export function redirectUrlOf(bodyIndex: number): string {
  const repeated = bodyIndex % 2 === 1 ? '&tag=a&tag=b' : '';
  return `https://shop.example.com/done?order=${bodyIndex + 1}${repeated}`;
}

/** The organisation settings the second organisation of a sequence is drawn from. */
export const SETTINGS_POOL: readonly OrganisationSettings[] = [
  { settlementCurrency: 'NZD', cardEnabled: true, openBankingApproved: true, settlementAccount: true },
  { settlementCurrency: 'AUD', cardEnabled: true, openBankingApproved: true, settlementAccount: true },
  { settlementCurrency: 'NZD', cardEnabled: false, openBankingApproved: true, settlementAccount: true },
  { settlementCurrency: 'NZD', cardEnabled: true, openBankingApproved: false, settlementAccount: false },
  { settlementCurrency: 'AUD', cardEnabled: false, openBankingApproved: false, settlementAccount: true },
];

/**
 * Field validation of the create bodies (Endpoints: POST /api/checkout-sessions parameters;
 * Limits), and the configuration codes in the order this implementation checks them.
 */
import { isIP } from 'node:net';
import { type Method, type Currency, type Organisation, ApiError, type Problems } from './types.ts';
import { isObject, decimalPlaces, absoluteUrl, publicV4, publicV6 } from './helpers.ts';
import type { State } from './state.ts';

export interface SessionInput {
  total: number;
  currency: Currency | null;
  reference: string;
  particulars: string;
  code: string | null;
  redirectUrl: string;
  checkoutMethod: Method;
  webhookUrl: string | null;
  foreignTransactionId: string | null;
  description: string | null;
}

/** Validation, with the hosts this test deployment may deliver to. */
export function makeValidation(st: State) {
  const { options } = st;
  interface TextRule {
    required?: boolean;
    min?: number;
    max?: number;
    chars?: RegExp;
    charsText?: string;
  }

  function text(
    o: Record<string, unknown>,
    key: string,
    field: string,
    p: Problems,
    rule: TextRule,
  ): string | undefined {
    if (!Object.hasOwn(o, key)) {
      if (rule.required) p.add(field, { required: `${field} is required` });
      return undefined;
    }
    const v = o[key];
    if (typeof v !== 'string') {
      p.add(field, { isString: `${field} must be a string` });
      return undefined;
    }
    const length = [...v].length;
    const c: Record<string, string> = {};
    if (rule.min !== undefined && length < rule.min) c.minLength = `${field} must be at least ${rule.min} characters`;
    if (rule.max !== undefined && length > rule.max) c.maxLength = `${field} must be at most ${rule.max} characters`;
    if (rule.chars && !rule.chars.test(v)) c.matches = `${field} may only contain ${rule.charsText}`;
    if (Object.keys(c).length > 0) {
      p.add(field, c);
      return undefined;
    }
    return v;
  }

  /** create.total, limit.total, conv.amounts: a JSON number > 0, <= 10000, two decimals at most. */
  function money(v: unknown, present: boolean, field: string, p: Problems): number | undefined {
    if (!present) {
      p.add(field, { required: `${field} is required` });
      return undefined;
    }
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      p.add(field, { isNumber: `${field} must be a JSON number` });
      return undefined;
    }
    const c: Record<string, string> = {};
    if (v <= 0) c.positive = `${field} must be greater than 0`;
    if (v > 10000) c.max = `${field} must not be greater than 10000`;
    if (decimalPlaces(v) > 2) c.decimals = `${field} must have at most 2 decimal places`;
    if (Object.keys(c).length > 0) {
      p.add(field, c);
      return undefined;
    }
    return v;
  }

  /** target.https, create.webhook-url: HTTPS and publicly reachable, or a host of this test deployment. */
  function webhookTarget(o: Record<string, unknown>, key: string, p: Problems): string | null | undefined {
    const v = text(o, key, key, p, {});
    if (v === undefined) return Object.hasOwn(o, key) ? undefined : null;
    const url = absoluteUrl(v);
    if (!url) {
      p.add(key, { isUrl: `${key} must be a valid absolute URL` });
      return undefined;
    }
    if (url.protocol !== 'https:') {
      p.add(key, { https: `${key} must use https` });
      return undefined;
    }
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    if (!options.testHosts.includes(host) && !publiclyReachable(host)) {
      p.add(key, { publiclyReachable: `${key} must be reachable from the public internet` });
      return undefined;
    }
    return v;
  }

  function publiclyReachable(host: string): boolean {
    const family = isIP(host);
    if (family === 4) return publicV4(host);
    if (family === 6) return publicV6(host);
    // ours: names that can never resolve publicly (single labels, reserved and local TLDs).
    if (!host.includes('.')) return false;
    return !/(^|\.)(localhost|local|internal|home\.arpa|invalid|test)$/.test(host);
  }

  const REFERENCE_CHARS = /^[0-9A-Za-z '.,@_-]*$/; // create.reference
  const PARTICULARS_CHARS = /^[a-zA-Z0-9\- ]*$/; // create.particulars, create.code

  /** POST /api/checkout-sessions body, every rule of its parameter table. */
  function validateSession(b: Record<string, unknown>, p: Problems): SessionInput | null {
    if (!Object.hasOwn(b, 'type')) p.add('type', { required: 'type is required' });
    else if (b.type !== 'single') p.add('type', { equals: 'type must be single' }); // create.type

    let total: number | undefined;
    let currency: Currency | null = null;
    if (!Object.hasOwn(b, 'amount')) p.add('amount', { required: 'amount is required' });
    else if (!isObject(b.amount)) p.add('amount', { isObject: 'amount must be an object' });
    else {
      total = money(b.amount.total, Object.hasOwn(b.amount, 'total'), 'amount.total', p);
      if (Object.hasOwn(b.amount, 'currency')) {
        const c = b.amount.currency;
        if (c === 'NZD' || c === 'AUD') currency = c;
        else p.add('amount.currency', { isIn: 'amount.currency must be NZD or AUD' }); // create.currency
      }
    }

    let reference: string | undefined;
    let particulars: string | undefined;
    let code: string | undefined;
    const ref = b.creditorReference;
    if (!Object.hasOwn(b, 'creditorReference'))
      p.add('creditorReference', { required: 'creditorReference is required' });
    else if (!isObject(ref)) p.add('creditorReference', { isObject: 'creditorReference must be an object' });
    else {
      reference = text(ref, 'reference', 'creditorReference.reference', p, {
        required: true,
        min: 1,
        max: 12,
        chars: REFERENCE_CHARS,
        charsText: "0-9 A-Z a-z space ' . , @ _ -",
      });
      particulars = text(ref, 'particulars', 'creditorReference.particulars', p, {
        max: 12,
        chars: PARTICULARS_CHARS,
        charsText: 'a-z A-Z 0-9 - and space',
      });
      code = text(ref, 'code', 'creditorReference.code', p, {
        max: 12,
        chars: PARTICULARS_CHARS,
        charsText: 'a-z A-Z 0-9 - and space',
      });
    }

    const redirectUrl = text(b, 'redirectUrl', 'redirectUrl', p, { required: true });
    if (redirectUrl !== undefined && !absoluteUrl(redirectUrl))
      p.add('redirectUrl', { isUrl: 'redirectUrl must be a valid absolute URL' }); // create.redirect-url

    const method = b.checkoutMethod;
    if (!Object.hasOwn(b, 'checkoutMethod')) p.add('checkoutMethod', { required: 'checkoutMethod is required' });
    else if (method !== 'open_banking' && method !== 'card' && method !== 'both')
      p.add('checkoutMethod', { isIn: 'checkoutMethod must be open_banking, card or both' });

    const webhookUrl = webhookTarget(b, 'webhookUrl', p);
    const foreignTransactionId = text(b, 'foreignTransactionId', 'foreignTransactionId', p, {});
    const description = text(b, 'description', 'description', p, { max: 255 }); // create.description

    if (p.any) return null;
    return {
      total: total!,
      currency,
      reference: reference!,
      particulars: particulars ?? '',
      code: code ?? null, // ours: an empty code given is kept as given
      redirectUrl: redirectUrl!,
      checkoutMethod: method as Method,
      webhookUrl: webhookUrl ?? null,
      foreignTransactionId: foreignTransactionId ?? null,
      description: description ?? null,
    };
  }

  /**
   * Configuration codes, after validation. The document fixes only that
   * open_banking_currency_unsupported precedes open_banking_not_enabled and
   * settlement_account_missing (order.aud-first); the rest of this order is ours.
   */
  function configuration(input: SessionInput, org: Organisation): ApiError | null {
    const card = input.checkoutMethod !== 'open_banking';
    const bank = input.checkoutMethod !== 'card';
    if (card && !org.cardEnabled) return new ApiError(400, 'card_not_enabled', 'Card payments are not configured.');
    if (bank && org.settlementCurrency === 'AUD')
      return new ApiError(400, 'open_banking_currency_unsupported', 'The bank rail moves NZD only.');
    if (bank && !org.settlementAccount)
      return new ApiError(400, 'settlement_account_missing', 'The organisation has no settlement account.');
    if (bank && !org.openBankingApproved)
      return new ApiError(400, 'open_banking_not_enabled', 'The open-banking application is not approved.');
    if (input.currency && input.currency !== org.settlementCurrency)
      return new ApiError(
        400,
        'currency_mismatch',
        'amount.currency differs from the settlement currency.',
        'amount.currency',
      );
    return null;
  }

  return { text, money, webhookTarget, REFERENCE_CHARS, validateSession, configuration };
}

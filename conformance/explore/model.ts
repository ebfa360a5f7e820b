/**
 * A model of the service document for exploration: given everything done so far to two
 * organisations (their keys, tokens, clocks, payments and Idempotency-Keys), which answers
 * the target may give to the next operation. Pure: no I/O, no clock, no randomness.
 *
 * Where the document allows several answers, the model lists each of them, and follows
 * the one the target gave. Where only a rule of ours decides (x-assumption), the model
 * holds the target to it only with --strict-assumptions; otherwise anything documented
 * is accepted there and the model stops judging what depends on it.
 */
import type { OrganisationSettings, Outcome, Rail } from '../adapter.ts';

/** Authentication 4; Limits: access token lifetime. */
export const TOKEN_LIFETIME_S = 300;
/** Idempotency-Key memory, checkout session lifetime (Limits). */
export const DAY_S = 86_400;
/**
 * Real time passes while a sequence runs and a target's clock is its own: an event this
 * close to a boundary (a token's five minutes, a day) may fall on either side of it.
 */
export const EDGE_S = 30;

export type Mode = 'test' | 'live';
export type Method = 'card' | 'open_banking' | 'both';
export type Status = 'created' | 'pending' | 'completed' | 'failed' | 'expired';

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

export interface ModelKey {
  mode: Mode;
  removed: boolean;
}

export interface ModelOrg {
  settings: OrganisationSettings;
  /** How far the organisation's clock has been moved, in seconds. */
  clockS: number;
  keys: ModelKey[];
  /** How many times its signing secret was replaced. */
  rotations: number;
}

export interface ModelToken {
  org: number;
  key: number;
  issuedS: number;
}

export type PaymentKind = 'session' | 'link';

export interface ModelPayment {
  kind: PaymentKind;
  org: number;
  mode: Mode;
  /** Index into BODIES (sessions), or -1 (links: the modelled link body). */
  body: number;
  hook: boolean;
  createdS: number;
  status: Status;
  /** The rail the money moved on, once completed. */
  rail?: Rail;
}

/** What the target remembers of an Idempotency-Key in one scope (organisation and mode). */
export interface IdemEntry {
  org: number;
  mode: Mode;
  key: string;
  body: number;
  atS: number;
  /** The payment it made, or the code it was refused with. */
  result: { payment: number } | { code: string; fields: string[] };
  /** The target took a way the model cannot follow (a rule of ours it need not keep): no longer judged. */
  muddled: boolean;
}

export interface Model {
  orgs: ModelOrg[];
  tokens: ModelToken[];
  payments: ModelPayment[];
  idem: IdemEntry[];
  /** --strict-assumptions: hold the target to our rules where the document is silent. */
  strict: boolean;
  /** The target refused the modelled payment-link request: links are not explored further. */
  linksRefused: boolean;
  /** The target refused the receiver's address as webhookUrl: bodies with one are not sent again. */
  hooksRefused: boolean;
}

/** Two organisations, each with a test key (and a live one, when given), and a token of each key issued at the start. */
export function initialModel(settingsB: OrganisationSettings, live: [boolean, boolean], strict: boolean): Model {
  const org = (settings: OrganisationSettings, hasLive: boolean): ModelOrg => ({
    settings,
    clockS: 0,
    keys: [{ mode: 'test', removed: false }, ...(hasLive ? [{ mode: 'live' as const, removed: false }] : [])],
    rotations: 0,
  });
  return {
    orgs: [org(SETTINGS_POOL[0]!, live[0]), org(settingsB, live[1])],
    tokens: [
      { org: 0, key: 0, issuedS: 0 },
      { org: 1, key: 0, issuedS: 0 },
      ...live.flatMap((has, org) => (has ? [{ org, key: 1, issuedS: 0 }] : [])),
    ],
    payments: [],
    idem: [],
    strict,
    linksRefused: false,
    hooksRefused: false,
  };
}

/**
 * How a request authenticates: a token the model issued, as is or spoilt (one character
 * changed, cut short, or sent as "Bearer Bearer <token>"), or a header that is no bearer token.
 */
export type Spoilt = 'mangled' | 'truncated' | 'double';

export type TokenUse =
  | { kind: 'latest' | 'oldest' | Spoilt; org: number; mode: Mode }
  | { kind: 'missing' }
  | { kind: 'scheme' };

/** The model's token a use picks, if any. */
export function tokenOf(m: Model, use: TokenUse): number | undefined {
  if (use.kind === 'missing' || use.kind === 'scheme') return undefined;
  const own = m.tokens
    .map((t, i) => ({ t, i }))
    .filter(({ t }) => t.org === use.org && m.orgs[t.org]!.keys[t.key]!.mode === use.mode);
  return (use.kind === 'oldest' ? own[0] : own.at(-1))?.i;
}

/** Can the use be made now (a token of that organisation and mode exists)? */
export function canUse(m: Model, use: TokenUse): boolean {
  return use.kind === 'missing' || use.kind === 'scheme' || tokenOf(m, use) !== undefined;
}

/** One answer the target may give, and the rule that makes it right. */
export type Answer =
  | { kind: 'error'; status: number; code: string; fields?: string[] }
  /** 200 with a payment the model has not seen. */
  | { kind: 'new' }
  /** 200 with payment `payment` again (an idempotent replay). */
  | { kind: 'replay'; payment: number }
  /** 200 reading payment `payment` back. */
  | { kind: 'read'; payment: number }
  /** Anything documented: the model cannot say (a rule of ours, not held without --strict-assumptions). */
  | { kind: 'any' };

export interface Expectation {
  answers: Answer[];
  /** The clauses a wrong answer breaks. */
  clauses: string[];
  /** Why these answers, for the report. */
  why: string;
}

const error = (status: number, code: string, fields?: string[]): Answer => ({
  kind: 'error',
  status,
  code,
  ...(fields ? { fields } : {}),
});

/** What authentication alone decides: refusals that apply, and whether the request may get past them. */
interface Auth {
  refusals: Answer[];
  /** It may get past authentication (certainly, or at the edge of the token's lifetime). */
  passes: boolean;
  /** It certainly gets past authentication. */
  surely: boolean;
  org?: number;
  mode?: Mode;
  clauses: string[];
  why: string;
}

export function authOf(m: Model, use: TokenUse): Auth {
  if (use.kind === 'missing' || use.kind === 'scheme') {
    return {
      refusals: [error(401, 'unauthorized')],
      passes: false,
      surely: false,
      clauses: ['auth.bearer', 'code.unauthorized'],
      why:
        use.kind === 'missing'
          ? 'no Authorization header is 401 unauthorized'
          : 'an Authorization header not of the form Bearer <token> is 401 unauthorized',
    };
  }
  if (use.kind === 'mangled' || use.kind === 'truncated' || use.kind === 'double') {
    return {
      refusals: [error(401, 'invalid_token')],
      passes: false,
      surely: false,
      clauses: ['code.invalid-token'],
      why: `a ${use.kind === 'double' ? 'double-prefixed' : use.kind} token is 401 invalid_token`,
    };
  }
  const index = tokenOf(m, use)!;
  const token = m.tokens[index]!;
  const org = m.orgs[token.org]!;
  const age = org.clockS - token.issuedS;
  const removed = org.keys[token.key]!.removed;
  const expired = age >= TOKEN_LIFETIME_S + EDGE_S;
  const edge = !expired && age > TOKEN_LIFETIME_S - EDGE_S;
  const refusals: Answer[] = [];
  const clauses: string[] = [];
  // Both may apply; the document orders neither before the other.
  if (removed) {
    refusals.push(error(401, 'unknown_api_key'));
    clauses.push('auth.removed', 'code.unknown-api-key');
  }
  if (expired || edge) {
    refusals.push(error(401, 'token_expired'));
    clauses.push('auth.lifetime', 'auth.expired', 'code.token-expired');
  }
  const passes = !removed && !expired;
  return {
    refusals,
    passes,
    surely: passes && !edge,
    org: token.org,
    mode: use.mode,
    clauses: clauses.length > 0 ? clauses : ['auth.lifetime', 'auth.bearer'],
    why: [
      `token ${index + 1} was issued ${age} s ago on the organisation's clock`,
      ...(removed ? ['its API key was removed'] : []),
      edge
        ? 'its five minutes are just ending'
        : expired
          ? 'its five minutes are over'
          : 'it is within its five minutes',
    ].join('; '),
  };
}

/** Combines authentication with what the request is answered once past it. */
function withAuth(auth: Auth, past: () => Expectation): Expectation {
  if (!auth.passes) return { answers: auth.refusals, clauses: auth.clauses, why: auth.why };
  const then = past();
  if (auth.surely) return then;
  return {
    answers: [...auth.refusals, ...then.answers],
    clauses: [...auth.clauses, ...then.clauses],
    why: `${auth.why}; or, if still taken: ${then.why}`,
  };
}

/**
 * The configuration codes that apply to a create (Validation and configuration order and
 * errors): open_banking_currency_unsupported is checked before open_banking_not_enabled
 * and settlement_account_missing; no other order is stated, so any that applies is right.
 */
export function configCodes(settings: OrganisationSettings, method: Method, currency?: string): string[] {
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

const CONFIG_CLAUSES: Record<string, string> = {
  currency_mismatch: 'order.currency-mismatch',
  card_not_enabled: 'order.card',
  open_banking_not_enabled: 'order.open-banking',
  settlement_account_missing: 'order.settlement',
  open_banking_currency_unsupported: 'order.aud-first',
};

/** A create without an Idempotency-Key (or one the target has not seen in this scope). */
function freshCreate(m: Model, org: number, bodyIndex: number): Expectation {
  const body = BODIES[bodyIndex]!;
  const settings = m.orgs[org]!.settings;
  const codes = configCodes(settings, body.checkoutMethod, body.currency);
  if (body.invalid.length > 0) {
    // Validation before configuration is our reading of the table (CFG-009's assumption).
    const answers = [error(400, 'validation_failed', body.invalid)];
    if (!m.strict) answers.push(...codes.map((c) => error(400, c)));
    return {
      answers,
      clauses: ['order.validation', 'code.validation-failed', 'err.details'],
      why: `the body fails validation in ${body.invalid.join(', ')}`,
    };
  }
  if (codes.length > 0) {
    return {
      answers: codes.map((c) => error(400, c)),
      clauses: codes.map((c) => CONFIG_CLAUSES[c]!),
      why: `the organisation's settings refuse it: ${codes.join(' or ')}`,
    };
  }
  return {
    answers: [{ kind: 'new' }],
    clauses: ['create.ok', 'create.one'],
    why: 'a valid create makes a new session',
  };
}

export function findEntry(m: Model, org: number, mode: Mode, key: string): IdemEntry | undefined {
  return m.idem.find((e) => e.org === org && e.mode === mode && e.key === key);
}

/** POST /api/checkout-sessions with a token use, a body of the pool and maybe an Idempotency-Key. */
export function expectCreate(m: Model, use: TokenUse, bodyIndex: number, key: string | undefined): Expectation {
  return withAuth(authOf(m, use), () => {
    const { org, mode } = use as { org: number; mode: Mode };
    const fresh = freshCreate(m, org, bodyIndex);
    if (key === undefined) return fresh;
    const entry = findEntry(m, org, mode, key);
    if (!entry) {
      // Keys are scoped to the organisation and mode (IDEM-008's assumption): elsewhere, the
      // same key may also be refused, but never answered with another scope's payment.
      const elsewhere = m.idem.some((e) => e.key === key);
      if (!elsewhere || m.strict) return fresh;
      return { ...fresh, answers: [...fresh.answers, error(400, 'idempotency_error')] };
    }
    const age = m.orgs[org]!.clockS - entry.atS;
    if (entry.muddled || Math.abs(age - DAY_S) < EDGE_S) {
      return { answers: [{ kind: 'any' }], clauses: ['idem.replay'], why: 'not judged' };
    }
    if (age >= DAY_S) {
      // Forgotten after 24 hours is our reading of "remembered 24 hours" (IDEM-005's assumption).
      return m.strict
        ? { ...fresh, why: `the key was used ${age} s ago: forgotten; ${fresh.why}` }
        : { answers: [{ kind: 'any' }], clauses: ['limit.idempotency'], why: 'not judged' };
    }
    const result = entry.result;
    if (entry.body === bodyIndex) {
      return 'payment' in result
        ? {
            answers: [{ kind: 'replay', payment: result.payment }],
            clauses: ['idem.replay', 'create.idempotency-key'],
            why: `the same key and body ${age} s after the first use replay session ${result.payment + 1}`,
          }
        : {
            answers: [error(400, result.code, result.fields)],
            clauses: ['idem.replay', 'idem.conflict'],
            why: `the same key and body ${age} s after it was refused ${result.code} get the same refusal`,
          };
    }
    if (!('payment' in result)) {
      // Whether a refused create claims its key, the document does not say.
      return { answers: [{ kind: 'any' }], clauses: ['idem.conflict'], why: 'not judged' };
    }
    // The document orders idempotency_error after validation and configuration in its table, but
    // states no order between them: the new body's own refusals are right too.
    const own = fresh.answers.filter((a) => a.kind === 'error');
    return {
      answers: [error(400, 'idempotency_error'), ...own],
      clauses: ['idem.conflict', 'order.idempotency', 'code.idempotency'],
      why: `the key was used ${age} s ago with another body (body ${entry.body + 1}, now body ${bodyIndex + 1})`,
    };
  });
}

/** Records what a create answered, as the answer the target chose. */
export function applyCreate(
  m: Model,
  use: TokenUse,
  bodyIndex: number,
  key: string | undefined,
  answer: Answer,
  /** The payment a 200 answer named (a known one's index, or -1 for a new one); undefined for a refusal. */
  named: number | undefined,
): void {
  if (use.kind !== 'latest' && use.kind !== 'oldest') return;
  const token = m.tokens[tokenOf(m, use)!]!;
  if (answer.kind === 'error' && answer.status === 401) return;
  const org = token.org;
  const mode = use.mode;
  const clockS = m.orgs[org]!.clockS;
  let made: number | undefined;
  if (named === -1) {
    const body = BODIES[bodyIndex]!;
    m.payments.push({
      kind: 'session',
      org,
      mode,
      body: bodyIndex,
      hook: body.hook,
      createdS: clockS,
      status: 'created',
    });
    made = m.payments.length - 1;
  }
  if (key === undefined) return;
  const entry = findEntry(m, org, mode, key);
  if (answer.kind === 'any') {
    if (entry) entry.muddled = true;
    else m.idem.push({ org, mode, key, body: bodyIndex, atS: clockS, result: { code: '', fields: [] }, muddled: true });
    return;
  }
  const fresh = !entry || clockS - entry.atS >= DAY_S;
  if (!fresh) return;
  if (answer.kind === 'error' && answer.code === 'idempotency_error') return;
  const result: IdemEntry['result'] =
    made !== undefined
      ? { payment: made }
      : {
          code: answer.kind === 'error' ? answer.code : '',
          fields: answer.kind === 'error' ? (answer.fields ?? []) : [],
        };
  const next: IdemEntry = { org, mode, key, body: bodyIndex, atS: clockS, result, muddled: false };
  if (entry) Object.assign(entry, next);
  else m.idem.push(next);
}

/** The statuses a payment may read now: its own, or expired once its 24 hours without payment are over. */
export function statusesOf(m: Model, payment: number): Status[] {
  const p = m.payments[payment]!;
  if (p.status === 'completed' || p.status === 'expired') return [p.status];
  const age = m.orgs[p.org]!.clockS - p.createdS;
  if (age >= DAY_S + EDGE_S && p.status !== 'pending') return ['expired'];
  if (age > DAY_S - EDGE_S) return [p.status, 'expired'];
  return [p.status];
}

export type ReadTarget =
  | { kind: 'payment'; payment: number }
  | { kind: 'unknown' }
  | { kind: 'retired'; payment: number };

/** GET /api/checkout-sessions/{id} (or /api/payment-links/{id}, or the retired /api/transaction/{cs_id}). */
export function expectRead(m: Model, use: TokenUse, target: ReadTarget): Expectation {
  return withAuth(authOf(m, use), () => {
    const { org, mode } = use as { org: number; mode: Mode };
    if (target.kind === 'unknown') {
      return { answers: [error(404, 'not_found')], clauses: ['read.errors', 'code.not-found'], why: 'no such id' };
    }
    if (target.kind === 'retired') {
      return {
        answers: [error(404, 'not_found')],
        clauses: ['legacy.retired', 'ver.retired', 'code.not-found'],
        why: 'GET /api/transaction/{id} is not part of the API for checkout sessions',
      };
    }
    const p = m.payments[target.payment]!;
    if (p.org !== org) {
      return {
        answers: [error(404, 'not_found')],
        clauses: ['auth.isolation', 'read.isolation', 'code.not-found'],
        why: "the payment is another organisation's",
      };
    }
    if (p.mode !== mode) {
      // Whether a test payment can be read with the live key of its organisation, the document does not say.
      return {
        answers: [{ kind: 'read', payment: target.payment }, error(404, 'not_found')],
        clauses: ['auth.mode'],
        why: `a ${p.mode} payment read with a ${mode} key`,
      };
    }
    return {
      answers: [{ kind: 'read', payment: target.payment }],
      clauses: ['read.ok', 'svc.read'],
      why: `the organisation's own payment, status ${statusesOf(m, target.payment).join(' or ')}`,
    };
  });
}

/** Records the status a read showed, once it is one the model allows (an expiry seen stays seen). */
export function applyRead(m: Model, payment: number, status: unknown): void {
  const p = m.payments[payment]!;
  if (status === 'expired' && statusesOf(m, payment).includes('expired')) p.status = 'expired';
}

/** Can a payer attempt this payment now? A test-mode payment still live, not about to expire. */
export function payable(m: Model, payment: number): boolean {
  const p = m.payments[payment]!;
  const age = m.orgs[p.org]!.clockS - p.createdS;
  if (p.mode !== 'test' || age > DAY_S - EDGE_S) return false;
  return p.kind === 'link' ? p.status === 'created' : p.status === 'created' || p.status === 'failed';
}

/** The rails a payer may choose for a payment (its checkoutMethod). */
export function railsOf(m: Model, payment: number): Rail[] {
  const p = m.payments[payment]!;
  const method = p.kind === 'link' ? 'card' : BODIES[p.body]!.checkoutMethod;
  return method === 'both' ? ['card', 'open_banking'] : [method];
}

/** The status an attempt leaves a checkout session in (States and transitions). */
export const AFTER_ATTEMPT: Record<Outcome, Status> = {
  succeeded: 'completed',
  declined: 'failed',
  pending: 'pending',
};

export function applyAttempt(m: Model, payment: number, rail: Rail, outcome: Outcome): void {
  const p = m.payments[payment]!;
  p.status = AFTER_ATTEMPT[outcome];
  if (outcome === 'succeeded') p.rail = rail;
}

/** POST /api/token with a key pair of the organisation: a live key's, or a removed key's when `removed`. */
export function expectToken(removed: boolean): Expectation {
  if (removed) {
    return {
      answers: [error(401, '')],
      clauses: ['auth.removed', 'token.401'],
      why: 'the pair of a removed API key matches no key',
    };
  }
  return { answers: [{ kind: 'new' }], clauses: ['auth.exchange', 'token.ok'], why: 'a live key pair gets a token' };
}

/** The key a token request or a new token uses: the last live key of the mode. */
export function currentKey(m: Model, org: number, mode: Mode): number | undefined {
  const keys = m.orgs[org]!.keys;
  for (let i = keys.length - 1; i >= 0; i--) if (keys[i]!.mode === mode && !keys[i]!.removed) return i;
  return undefined;
}

/** A removed key of the mode, when there is one (its pair must be refused). */
export function removedKey(m: Model, org: number, mode: Mode): number | undefined {
  const keys = m.orgs[org]!.keys;
  const i = keys.findIndex((k) => k.mode === mode && k.removed);
  return i < 0 ? undefined : i;
}

/**
 * Which keys of the mode may be removed: any live one, but a test key only while another
 * stays (the suite confirms clock moves with the organisation's test key).
 */
export function removableKeys(m: Model, org: number, mode: Mode): number[] {
  const keys = m.orgs[org]!.keys;
  const live = keys.map((k, i) => ({ k, i })).filter(({ k }) => k.mode === mode && !k.removed);
  return mode === 'live' || live.length >= 2 ? live.map(({ i }) => i) : [];
}

/** A payment link (the modelled request: card, with or without webhookUrl) answered 200. */
export function applyLink(m: Model, org: number, mode: Mode, hook: boolean): void {
  m.payments.push({ kind: 'link', org, mode, body: -1, hook, createdS: m.orgs[org]!.clockS, status: 'created' });
}

/** Payments that must have sent no checkout_session.completed event (every one not completed). */
export function unpaidHooked(m: Model): number[] {
  return m.payments.flatMap((p, i) => (p.hook && p.status !== 'completed' ? [i] : []));
}

/**
 * POST /api/payment-links through the modelled request (the document shows no shape):
 * authentication is the document's; past it, a refusal of our modelling is no verdict.
 */
export function expectLink(m: Model, use: TokenUse): Expectation {
  return withAuth(authOf(m, use), () => ({
    answers: [{ kind: 'new' }, { kind: 'any' }],
    clauses: ['link.endpoints', 'res.link'],
    why: 'a payment link through the modelled request',
  }));
}

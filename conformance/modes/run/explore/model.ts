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
import type { OrganisationSettings, Rail } from '../../../core/adapter.ts';
import { SETTINGS_POOL } from './inputs.ts';

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
export type Status = 'created' | 'pending' | 'completed' | 'failed' | 'expired';

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

export const error = (status: number, code: string, fields?: string[]): Answer => ({
  kind: 'error',
  status,
  code,
  ...(fields ? { fields } : {}),
});

/** What authentication alone decides: refusals that apply, and whether the request may get past them. */
export interface Auth {
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
export function withAuth(auth: Auth, past: () => Expectation): Expectation {
  if (!auth.passes) return { answers: auth.refusals, clauses: auth.clauses, why: auth.why };
  const then = past();
  if (auth.surely) return then;
  return {
    answers: [...auth.refusals, ...then.answers],
    clauses: [...auth.clauses, ...then.clauses],
    why: `${auth.why}; or, if still taken: ${then.why}`,
  };
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

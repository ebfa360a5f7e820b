/**
 * The model's answers to creates (Endpoints: POST /api/checkout-sessions: validation and
 * configuration order and errors; Idempotency rules): which answers a create may get, and
 * what the target's answer leaves it remembering of an Idempotency-Key.
 */
import { configCodes } from '../../../rules/configuration.ts';
import { BODIES } from './inputs.ts';
import {
  authOf,
  DAY_S,
  EDGE_S,
  error,
  type Answer,
  type Expectation,
  type IdemEntry,
  type Mode,
  type Model,
  type TokenUse,
  tokenOf,
  withAuth,
} from './model.ts';

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

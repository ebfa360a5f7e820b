/**
 * The model's answers about payments once made (GET /api/checkout-sessions/{id}; States and
 * transitions; payment links): what a read may show, who may pay and by which rail, what an
 * attempt leaves, and the modelled payment link.
 */
import type { Outcome, Rail } from '../../../core/adapter.ts';
import { BODIES } from './inputs.ts';
import {
  authOf,
  DAY_S,
  EDGE_S,
  error,
  type Expectation,
  type Mode,
  type Model,
  type Status,
  type TokenUse,
  withAuth,
} from './model.ts';

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

/**
 * Steps on payments (Endpoints: POST and GET /api/checkout-sessions, payment links; States
 * and transitions; Redirect rule): creates with and without Idempotency-Keys, reads, links,
 * and a payer's attempts, each answer judged against the model and what was asked.
 */
import type { Outcome, Rail } from '../../../core/adapter.ts';
import { paymentLinkBody } from '../context/api.ts';
import type { Exchange } from '../../../core/exchange.ts';
import { at, isObject, type JsonObject, show, text } from '../../../core/json.ts';
import { validationDetailsProblem } from '../../../rules/errors.ts';
import { redirectProblem } from '../../../rules/redirect.ts';
import { expiryProblem, replayDifferences } from '../../../rules/session.ts';
import { isUtcTimestamp } from '../../../rules/values.ts';
import { Divergence, matchAnswer } from './judge.ts';
import { BODIES, redirectUrlOf } from './inputs.ts';
import { applyCreate, expectCreate } from './model-creates.ts';
import {
  AFTER_ATTEMPT,
  applyAttempt,
  applyLink,
  applyRead,
  expectLink,
  expectRead,
  payable,
  railsOf,
  type ReadTarget,
  statusesOf,
} from './model-payments.ts';
import { type Answer, canUse, type Mode, type Model, type TokenUse } from './model.ts';
import { awaitDelivery } from './delivery-judge.ts';
import { authorization, Step, useLabel } from './step.ts';
import { orgName, type World } from './world.ts';

/** The fields of a create answer that must say what was asked (Resources: Checkout session (create response)). */
function judgeCreated(m: Model, e: Exchange, bodyIndex: number, org: number, mode: Mode): void {
  const body = BODIES[bodyIndex]!;
  const wrong: Array<[string, unknown, string]> = [];
  const want = (field: string, ok: boolean, expected: string, clause: string) => {
    if (!ok) wrong.push([`${field} must be ${expected}; it is ${show(at(e.json, ...field.split('.')))}`, null, clause]);
  };
  const id = at(e.json, 'id');
  want('id', typeof id === 'string' && id.startsWith('cs_'), 'a cs_ id', 'res.create.id');
  want('status', at(e.json, 'status') === 'created', '"created"', 'res.create.status');
  want('url', typeof at(e.json, 'url') === 'string', 'the hosted page address', 'res.create.url');
  want('testMode', at(e.json, 'testMode') === (mode === 'test'), String(mode === 'test'), 'res.create.test-mode');
  want('amount.total', at(e.json, 'amount', 'total') === body.total, String(body.total), 'res.create.amount');
  const currency = body.currency ?? m.orgs[org]!.settings.settlementCurrency;
  want('amount.currency', at(e.json, 'amount', 'currency') === currency, currency, 'create.currency');
  want(
    'checkoutMethod',
    at(e.json, 'checkoutMethod') === body.checkoutMethod,
    body.checkoutMethod,
    'res.create.method',
  );
  want('reference', at(e.json, 'reference') === body.reference, show(body.reference), 'res.create.reference');
  const code = at(e.json, 'code');
  want(
    'code',
    body.code === undefined ? typeof code === 'string' : code === body.code,
    body.code === undefined ? 'a generated code' : show(body.code),
    'res.create.code',
  );
  want('expiresAt', isUtcTimestamp(at(e.json, 'expiresAt')), 'an ISO 8601 UTC timestamp', 'res.create.expires');
  if (wrong.length > 0)
    throw new Divergence(
      `The created session ${wrong.map(([w]) => w).join('; ')}.`,
      wrong.map(([, , c]) => c),
      e,
    );
}

/** A 200 create naming a payment the sequence knows must name one of the same organisation and mode. */
function judgeScope(m: Model, w: World, e: Exchange, known: number, org: number, mode: Mode): void {
  const p = m.payments[known]!;
  if (p.org !== org)
    throw new Divergence(
      `The create was answered with ${orgName(p.org)}'s session ${w.payments[known]!.id}: a resource of another organisation.`,
      ['auth.isolation', 'idem.replay'],
      e,
    );
  if (p.mode !== mode)
    throw new Divergence(
      `The ${mode} key's create was answered with the ${p.mode} session ${w.payments[known]!.id}: test or live is decided by the API key.`,
      ['auth.mode', 'conv.mode', 'res.create.test-mode'],
      e,
    );
}

export class Create extends Step {
  constructor(
    readonly use: TokenUse,
    readonly body: number,
    readonly key: string | undefined,
  ) {
    super();
  }
  check(m: Readonly<Model>) {
    return canUse(m as Model, this.use) && !(BODIES[this.body]!.hook && m.hooksRefused);
  }
  toString() {
    return `create body ${this.body + 1} with ${useLabel(this.use)}${this.key ? `, Idempotency-Key ${this.key}` : ''}`;
  }
  protected async act(m: Model, w: World) {
    const expected = expectCreate(m, this.use, this.body, this.key);
    const e = await w.api.send('POST', '/api/checkout-sessions', {
      json: w.body(this.body),
      headers: {
        ...authorization(m, w, this.use),
        ...(this.key ? { 'idempotency-key': `expl-${w.name}-${this.key}` } : {}),
      },
    });
    if (BODIES[this.body]!.hook && refusesReceiver(e)) {
      // The document wants a public HTTPS address; the suite's receiver may be neither.
      m.hooksRefused = true;
      return;
    }
    const answer = matchAnswer(e, expected);
    const { org, mode } = this.use as { org: number; mode: Mode };
    let named: number | undefined;
    if (answer.kind === 'error' && answer.code === 'validation_failed') {
      const problem = validationDetailsProblem(e.json, answer.fields ?? []);
      if (problem) throw new Divergence(problem, ['code.validation-failed', 'err.details', 'err.param'], e);
    } else if (e.status === 200) {
      const known = w.paymentOf(at(e.json, 'id'));
      if (known !== undefined) judgeScope(m, w, e, known, org, mode);
      if (answer.kind === 'replay') named = this.judgeReplay(m, w, e, answer.payment, known);
      else if (known !== undefined) {
        if (answer.kind === 'new')
          throw new Divergence(
            `A create that makes a new payment was answered with session ${w.payments[known]!.id}, made before (${expected.why}).`,
            ['create.one', 'idem.replay'],
            e,
          );
        named = known;
      } else {
        judgeCreated(m, e, this.body, org, mode);
        named = -1;
      }
    }
    const before = m.payments.length;
    applyCreate(m, this.use, this.body, this.key, answer, named);
    if (m.payments.length > before) {
      const hook = BODIES[this.body]!.hook ? w.hookPath(this.body) : undefined;
      w.payments.push({ id: String(at(e.json, 'id')), created: e.json as JsonObject, hookPath: hook });
    }
  }
  private judgeReplay(m: Model, w: World, e: Exchange, payment: number, known: number | undefined): number {
    const original = w.payments[payment]!;
    if (known !== payment)
      throw new Divergence(
        `The same key and body within 24 hours must replay session ${original.id}; the answer is ${show(at(e.json, 'id'))}.`,
        ['idem.replay', 'create.idempotency-key'],
        e,
      );
    const changed = replayDifferences(e.json, original.created, m.payments[payment]!.status !== 'created');
    if (changed.length > 0)
      throw new Divergence(
        `The replay of session ${original.id} differs from the original answer in ${changed.join(', ')}.`,
        ['idem.replay'],
        e,
      );
    return payment;
  }
}

/** Did the target refuse the suite's receiver address as webhookUrl (validation_failed naming it)? */
function refusesReceiver(e: Exchange): boolean {
  if (e.status !== 400 || at(e.json, 'error', 'code') !== 'validation_failed') return false;
  const details = at(e.json, 'error', 'details');
  return (
    at(e.json, 'error', 'param') === 'webhookUrl' ||
    (Array.isArray(details) && details.some((d) => at(d, 'field') === 'webhookUrl'))
  );
}

export type ReadKind = 'own' | 'unknown' | 'retired';

/**
 * The `pick`-th most recent of a list (round and round): picks are drawn small, so steps
 * mostly act on the payment just made, which is where combinations of steps meet.
 */
const ordinal = (pick: number) =>
  pick === 0 ? 'latest' : `${pick + 1}${pick === 1 ? 'nd' : pick === 2 ? 'rd' : 'th'} latest`;

const latest = (list: readonly number[], pick: number): number | undefined =>
  list.length === 0 ? undefined : list[list.length - 1 - (pick % list.length)];

/** Payments of a kind, by index. */
const paymentsOf = (m: Readonly<Model>, kind: 'session' | 'link') =>
  m.payments.flatMap((p, i) => (p.kind === kind ? [i] : []));

export class Read extends Step {
  constructor(
    readonly use: TokenUse,
    readonly kind: 'session' | 'link',
    readonly variant: ReadKind,
    readonly pick: number,
  ) {
    super();
  }
  check(m: Readonly<Model>) {
    return canUse(m as Model, this.use) && (this.variant === 'unknown' || paymentsOf(m, this.kind).length > 0);
  }
  toString() {
    const what =
      this.variant === 'unknown'
        ? `an unknown ${this.kind} id`
        : `the ${ordinal(this.pick)} ${this.kind}${this.variant === 'retired' ? ' at the retired GET /api/transaction/{id}' : ''}`;
    return `read ${what} with ${useLabel(this.use)}`;
  }
  protected async act(m: Model, w: World) {
    const list = paymentsOf(m, this.kind);
    const payment = latest(list, this.pick);
    const target: ReadTarget =
      this.variant === 'unknown' || payment === undefined
        ? { kind: 'unknown' }
        : this.variant === 'retired'
          ? { kind: 'retired', payment }
          : { kind: 'payment', payment };
    const collection = this.kind === 'session' ? 'checkout-sessions' : 'payment-links';
    const id =
      target.kind === 'unknown'
        ? this.kind === 'session'
          ? `cs_unknown_${w.name}`
          : '00000000-0000-4000-8000-000000000000'
        : w.payments[target.payment]!.id;
    const path =
      target.kind === 'retired'
        ? `/api/transaction/${encodeURIComponent(id)}`
        : `/api/${collection}/${encodeURIComponent(id)}`;
    const e = await w.api.send('GET', path, { headers: authorization(m, w, this.use) });
    const answer = matchAnswer(e, expectRead(m, this.use, target));
    if (answer.kind !== 'read') return;
    if (at(e.json, 'id') !== id)
      throw new Divergence(`Reading ${id} answered id ${show(at(e.json, 'id'))}.`, ['res.read.id', 'res.link'], e);
    if (this.kind === 'session') judgeRead(m, e, answer.payment, id);
  }
}

/** A session read back must say what was asked and where it stands (Resources: Checkout session (read response)). */
function judgeRead(m: Model, e: Exchange, payment: number, id: string): void {
  const p = m.payments[payment]!;
  const body = BODIES[p.body]!;
  const statuses = statusesOf(m, payment);
  const status = at(e.json, 'status');
  if (!statuses.includes(status as never)) {
    const clauses =
      statuses[0] === 'expired'
        ? ['state.expired', 'limit.session']
        : status === 'expired'
          ? ['limit.session', 'res.create.expires']
          : [`state.${statuses[0]}`, 'res.read.status', 'svc.read'];
    throw new Divergence(
      `Session ${id} must read ${statuses.join(' or ')} (created ${m.orgs[p.org]!.clockS - p.createdS} s ago on its organisation's clock, last ${p.status}); it reads ${show(status)}.`,
      clauses,
      e,
    );
  }
  applyRead(m, payment, status);
  const wrong: string[] = [];
  const clauses: string[] = [];
  const want = (field: string, ok: boolean, expected: string, clause: string) => {
    if (ok) return;
    wrong.push(`${field} must be ${expected}; it is ${show(at(e.json, ...field.split('.')))}`);
    clauses.push(clause);
  };
  want('amount.total', at(e.json, 'amount', 'total') === body.total, String(body.total), 'res.read.amount');
  const currency = body.currency ?? m.orgs[p.org]!.settings.settlementCurrency;
  want('amount.currency', at(e.json, 'amount', 'currency') === currency, currency, 'res.read.amount');
  want('checkoutMethod', at(e.json, 'checkoutMethod') === body.checkoutMethod, body.checkoutMethod, 'res.read.method');
  want('reference', at(e.json, 'reference') === body.reference, show(body.reference), 'res.read.reference');
  if (body.code !== undefined) want('code', at(e.json, 'code') === body.code, show(body.code), 'res.read.code');
  if (body.particulars !== undefined)
    want('particulars', at(e.json, 'particulars') === body.particulars, show(body.particulars), 'res.read.particulars');
  if (body.foreignTransactionId !== undefined)
    want(
      'foreignTransactionId',
      at(e.json, 'foreignTransactionId') === body.foreignTransactionId,
      show(body.foreignTransactionId),
      'res.read.foreign-id',
    );
  want('testMode', at(e.json, 'testMode') === (p.mode === 'test'), String(p.mode === 'test'), 'res.read.test-mode');
  // Before completion transactionType reads open_banking whatever checkoutMethod is.
  const rail = status === 'completed' ? p.rail : 'open_banking';
  if (rail !== undefined)
    want('transactionType', at(e.json, 'transactionType') === rail, rail, 'res.read.transaction-type');
  const expiry = expiryProblem(e.json);
  if (expiry) {
    wrong.push(expiry.replace(/\.$/, ''));
    clauses.push('res.create.expires');
  }
  if (wrong.length > 0) throw new Divergence(`Session ${id} read back: ${wrong.join('; ')}.`, clauses, e);
}

const ATTEMPT_CLAUSES: Record<Outcome, string[]> = {
  succeeded: ['state.completed', 'svc.read'],
  declined: ['state.failed', 'state.declined'],
  pending: ['state.pending'],
};

export class Attempt extends Step {
  constructor(
    readonly kind: 'session' | 'link',
    readonly pick: number,
    readonly railPick: number,
    readonly outcome: Outcome,
  ) {
    super();
  }
  private choices(m: Readonly<Model>): number[] {
    return paymentsOf(m, this.kind).filter((i) => payable(m as Model, i));
  }
  check(m: Readonly<Model>) {
    return this.choices(m).length > 0;
  }
  toString() {
    return `a payer's ${this.outcome} attempt on the ${ordinal(this.pick)} payable ${this.kind}`;
  }
  protected async act(m: Model, w: World) {
    const choices = this.choices(m);
    const payment = latest(choices, this.pick)!;
    const p = m.payments[payment]!;
    const rails = railsOf(m, payment);
    const rail: Rail = rails[this.railPick % rails.length]!;
    const real = w.payments[payment]!;
    w.note(`adapter: attempt(${this.kind} ${real.id}, ${rail}, ${this.outcome})`);
    const done = await w.target.attempt(
      w.orgs[p.org]!,
      { kind: this.kind === 'session' ? 'checkout-session' : 'payment-link', id: real.id },
      rail,
      this.outcome,
    );
    if (this.kind === 'session') {
      const expected = AFTER_ATTEMPT[this.outcome];
      const read = w.exchanges.at(-1);
      if (read && read.status !== 200)
        throw new Divergence(
          `After a ${this.outcome} attempt the organisation's own session ${real.id} reads ${read.status}${typeof at(read.json, 'error', 'code') === 'string' ? ` ${at(read.json, 'error', 'code')}` : ''}, not 200.`,
          ['read.ok', 'svc.read'],
          read,
        );
      if (done.status !== expected)
        throw new Divergence(
          `After a ${this.outcome} attempt by ${rail} the session must read ${expected}; it reads ${show(done.status)}.`,
          ATTEMPT_CLAUSES[this.outcome],
          w.exchanges.at(-1),
        );
      if (this.outcome === 'succeeded' && done.redirectTo !== null)
        judgeRedirect(done.redirectTo, real.id, p.body, w.exchanges.at(-1));
    }
    applyAttempt(m, payment, rail, this.outcome);
    // The read that showed the outcome is a read like any other: every field is judged.
    const read = w.exchanges.at(-1);
    if (this.kind === 'session' && read?.status === 200 && read.request.method === 'GET')
      judgeRead(m, read, payment, real.id);
    if (this.outcome === 'succeeded' && p.hook) await awaitDelivery(m, w, payment);
  }
}

/** Redirect rule: redirectUrl with transactionId and checkoutSessionId appended, the merchant's own parameters kept. */
function judgeRedirect(redirectTo: string, sessionId: string, bodyIndex: number, e: Exchange | undefined): void {
  const problem = redirectProblem(redirectTo, redirectUrlOf(bodyIndex), sessionId);
  if (problem) throw new Divergence(problem, ['redirect.params'], e);
}

export class CreateLink extends Step {
  constructor(
    readonly use: TokenUse,
    readonly hook: boolean,
  ) {
    super();
  }
  check(m: Readonly<Model>) {
    return !m.linksRefused && canUse(m as Model, this.use) && !(this.hook && m.hooksRefused);
  }
  toString() {
    return `create a payment link${this.hook ? ' with a webhookUrl' : ''} with ${useLabel(this.use)}`;
  }
  protected async act(m: Model, w: World) {
    const expected = expectLink(m, this.use);
    const hookPath = this.hook ? `/hooks/EXPL-001/${w.name}/links` : undefined;
    const e = await w.api.send('POST', '/api/payment-links', {
      json: paymentLinkBody(hookPath ? { webhookUrl: w.hookUrl(hookPath) } : {}),
      headers: authorization(m, w, this.use),
    });
    const passes = expected.answers.some((a) => a.kind === 'new');
    const refusal = expected.answers.find(
      (a): a is Extract<Answer, { kind: 'error' }> =>
        a.kind === 'error' && e.status === a.status && at(e.json, 'error', 'code') === a.code,
    );
    if (passes && e.status !== 200 && !refusal) {
      // The request shape is ours: a target that refuses it has links we cannot reach.
      if (this.hook && refusesReceiver(e)) m.hooksRefused = true;
      else m.linksRefused = true;
      return;
    }
    const answer = matchAnswer(e, expected);
    const id = text(e.json, 'id');
    if (answer.kind !== 'new' || e.status !== 200 || id === undefined) return;
    const { org, mode } = this.use as { org: number; mode: Mode };
    applyLink(m, org, mode, this.hook);
    w.payments.push({ id, created: isObject(e.json) ? e.json : {}, hookPath });
  }
}

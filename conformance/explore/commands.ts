/**
 * The operations an explored sequence is made of, as fast-check commands: each runs
 * against the target through its public API or its adapter, then compares the answer with
 * the model (model.ts) and the invariants (judge.ts), and moves the model on as the target
 * answered. Commands that need a capability the adapter lacks are never generated.
 */
import fc from 'fast-check';
import type { Capability, Outcome, Rail } from '../adapter.ts';
import { paymentLinkBody, spoilt } from '../modes/run/context/api.ts';
import type { Exchange } from '../exchange.ts';
import { at, isObject, type JsonObject, show, text } from '../json.ts';
import { poll } from '../poll.ts';
import { isOtherEvent, type Received } from '../modes/run/capture-receiver.ts';
import { validationDetailsProblem } from '../judges/errors.ts';
import { payloadProblems } from '../judges/payload.ts';
import { redirectProblem } from '../judges/redirect.ts';
import { expiryProblem, replayDifferences } from '../judges/session.ts';
import { headerFormatProblem, unixSecondsProblem, verifies } from '../judges/signature.ts';
import { tellingApart, tokenResponseProblem } from '../judges/token.ts';
import { isUtcTimestamp } from '../judges/values.ts';
import { Divergence, matchAnswer } from './judge.ts';
import {
  AFTER_ATTEMPT,
  type Answer,
  applyAttempt,
  applyCreate,
  applyLink,
  applyRead,
  BODIES,
  redirectUrlOf,
  canUse,
  currentKey,
  DAY_S,
  expectCreate,
  expectLink,
  expectRead,
  expectToken,
  type Mode,
  type Model,
  type Spoilt,
  payable,
  railsOf,
  removableKeys,
  removedKey,
  type ReadTarget,
  statusesOf,
  type TokenUse,
  tokenOf,
} from './model.ts';
import { ORG_NAMES, type World } from './world.ts';

type Command = fc.AsyncCommand<Model, World>;

const name = (org: number) => ORG_NAMES[org]!;

function useLabel(use: TokenUse): string {
  if (use.kind === 'missing') return 'no Authorization header';
  if (use.kind === 'scheme') return 'Authorization: Token <a token>';
  const which = use.kind === 'oldest' ? 'first' : 'latest';
  const spoilt =
    use.kind === 'latest' || use.kind === 'oldest' ? '' : `, ${use.kind === 'double' ? 'double-prefixed' : use.kind}`;
  return `${name(use.org)}'s ${which} ${use.mode} token${spoilt}`;
}

function authorization(m: Model, w: World, use: TokenUse): Record<string, string> {
  if (use.kind === 'missing') return {};
  if (use.kind === 'scheme') return { authorization: `Token ${w.tokens[0]}` };
  const token = w.tokens[tokenOf(m, use)!]!;
  return {
    authorization: `Bearer ${use.kind === 'latest' || use.kind === 'oldest' ? token : spoilt(token, use.kind)}`,
  };
}

/** A step of a sequence: written down for the report, then judged. */
abstract class Step implements Command {
  abstract check(m: Readonly<Model>): boolean;
  abstract toString(): string;
  protected abstract act(m: Model, w: World): Promise<void>;

  async run(m: Model, w: World): Promise<void> {
    w.begin(this.toString());
    try {
      await this.act(m, w);
      await judgeDeliveries(m, w);
    } finally {
      w.end();
    }
  }
}

/**
 * How many times a run may ask for a token with a removed key's pair. A target may throttle
 * failed pairs from one address (the document shows no limits, but guessing must be slowed),
 * and the hand-written checks running beside the exploration need their own failed pairs
 * answered 401, so the exploration spends few of them.
 */
export const REFUSED_PAIRS_PER_RUN = 12;

class GetToken extends Step {
  constructor(
    readonly org: number,
    readonly mode: Mode,
    /** Ask with the pair of a removed key instead. */
    readonly removed: boolean,
    readonly refusals: { left: number },
  ) {
    super();
  }
  check(m: Readonly<Model>) {
    if (this.removed && this.refusals.left <= 0) return false;
    return (this.removed ? removedKey : currentKey)(m as Model, this.org, this.mode) !== undefined;
  }
  toString() {
    return `token for ${name(this.org)}'s ${this.removed ? 'removed' : 'current'} ${this.mode} key`;
  }
  protected async act(m: Model, w: World) {
    const key = (this.removed ? removedKey : currentKey)(m, this.org, this.mode)!;
    if (this.removed) this.refusals.left -= 1;
    const e = await w.api.tokenRequest(w.keys[this.org]![key]!);
    const answer = matchAnswer(e, expectToken(this.removed));
    if (answer.kind !== 'new') return;
    const problem = tokenResponseProblem(e.json);
    if (problem)
      throw new Divergence(
        `The token response: ${problem}`,
        ['res.token.access', 'res.token.type', 'res.token.expires'],
        e,
      );
    const token = String(at(e.json, 'accessToken'));
    m.tokens.push({ org: this.org, key, issuedS: m.orgs[this.org]!.clockS });
    w.tokens.push(token);
  }
}

type BadRequest = 'json' | 'missing-secret' | 'unknown-and-wrong';

/** POST /api/token asked wrongly: a JSON body, a field missing, or a pair that matches no key (two ways, answered alike). */
class BadTokenRequest extends Step {
  constructor(
    readonly org: number,
    readonly kind: BadRequest,
    readonly refusals: { left: number },
  ) {
    super();
  }
  check(m: Readonly<Model>) {
    if (this.kind === 'unknown-and-wrong' && this.refusals.left < 4) return false;
    return currentKey(m as Model, this.org, 'test') !== undefined;
  }
  toString() {
    const what = {
      json: 'as JSON',
      'missing-secret': 'without clientSecret',
      'unknown-and-wrong': 'with an unknown client id, then with a wrong secret',
    }[this.kind];
    return `a token asked for ${what} (${name(this.org)}'s test key)`;
  }
  protected async act(m: Model, w: World) {
    const pair = w.keys[this.org]![currentKey(m, this.org, 'test')!]!;
    if (this.kind !== 'unknown-and-wrong') {
      const e =
        this.kind === 'json'
          ? await w.api.send('POST', '/api/token', { json: pair })
          : await w.api.send('POST', '/api/token', { form: { clientId: pair.clientId } });
      matchAnswer(e, {
        answers: [{ kind: 'error', status: 400, code: '' }],
        clauses:
          this.kind === 'json'
            ? ['token.400', 'token.form', 'conv.request-body']
            : ['token.400', 'token.client-secret'],
        why: this.kind === 'json' ? 'the body must be form-encoded' : 'clientSecret is required',
      });
      return;
    }
    this.refusals.left -= 4;
    const refused = {
      answers: [{ kind: 'error' as const, status: 401, code: '' }],
      clauses: ['token.401', 'auth.pair'],
      why: 'the pair matches no key',
    };
    const unknownPair = { clientId: `unknown-${w.name}`, clientSecret: pair.clientSecret };
    const wrongPair = { clientId: pair.clientId, clientSecret: `${pair.clientSecret}x` };
    // Each asked twice, interleaved: what varies between two answers to one request (a
    // request id, a time) cannot tell the two apart.
    const answers: Exchange[] = [];
    for (const form of [unknownPair, wrongPair, unknownPair, wrongPair]) {
      const e = await w.api.tokenRequest(form);
      matchAnswer(e, refused);
      answers.push(e);
    }
    const [unknown, wrong, unknownAgain, wrongAgain] = answers as [Exchange, Exchange, Exchange, Exchange];
    const differ = tellingApart([unknown, unknownAgain], [wrong, wrongAgain]);
    if (differ.length > 0)
      throw new Divergence(
        `An unknown client id was answered ${unknown.text} and a wrong secret ${wrong.text}: they differ at ${differ.join(', ')}, and the answers must be identical.`,
        ['token.identical'],
        wrong,
      );
  }
}

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
      `The create was answered with ${name(p.org)}'s session ${w.payments[known]!.id}: a resource of another organisation.`,
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

class Create extends Step {
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

type ReadKind = 'own' | 'unknown' | 'retired';

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

class Read extends Step {
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

class Advance extends Step {
  constructor(
    readonly org: number,
    readonly seconds: number,
  ) {
    super();
  }
  check() {
    return true;
  }
  toString() {
    return `move ${name(this.org)}'s clock ${this.seconds} s on`;
  }
  protected async act(m: Model, w: World) {
    w.note(`adapter: advanceClock(${name(this.org)}, ${this.seconds})`);
    await w.target.advanceClock(w.orgs[this.org]!, this.seconds);
    m.orgs[this.org]!.clockS += this.seconds;
  }
}

const ATTEMPT_CLAUSES: Record<Outcome, string[]> = {
  succeeded: ['state.completed', 'svc.read'],
  declined: ['state.failed', 'state.declined'],
  pending: ['state.pending'],
};

class Attempt extends Step {
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

/** Waits for the payment's first delivery (a webhook is due once it completed). */
async function awaitDelivery(m: Model, w: World, payment: number): Promise<void> {
  const timeoutMs = w.run.settings.settleTimeoutMs;
  const got = await poll(
    async () => w.deliveries().filter((d) => names(m, w, d, payment)),
    (found) => found.length > 0,
    timeoutMs,
  );
  if (got.length === 0)
    throw new Divergence(
      `No webhook arrived within ${timeoutMs / 1000} s of ${m.payments[payment]!.kind} ${w.payments[payment]!.id} completing with a webhookUrl.`,
      ['state.completed-webhook', 'event.completed', 'svc.hook'],
      w.exchanges.at(-1),
    );
}

/** Does the delivery name this payment (its session id, or the link's transaction id)? */
function names(m: Model, w: World, d: Received, payment: number): boolean {
  const id = w.payments[payment]!.id;
  return m.payments[payment]!.kind === 'link'
    ? at(d.body, 'transactionId') === id
    : at(d.body, 'checkoutSessionId') === id;
}

/**
 * Every delivery that arrived since the last step: the payment it names must have
 * completed (no event for failure or expiry), its payload says what the document says,
 * and its signature verifies with the organisation's secret of the time.
 */
async function judgeDeliveries(m: Model, w: World): Promise<void> {
  for (const d of w.deliveries()) {
    if (w.judged.has(d)) continue;
    w.judged.add(d);
    const fail: Fail = (message, clauses) => {
      throw new Divergence(message, clauses, undefined, d);
    };
    const payment = m.payments.findIndex((_, i) => names(m, w, d, i) && w.payments[i]!.hookPath === d.path);
    if (payment < 0)
      fail(`A delivery to ${d.path} names no payment created with that webhookUrl: ${show(d.body)}.`, [
        'target.none',
        'conv.webhook-address',
      ]);
    const p = m.payments[payment]!;
    // Event kinds will be added: one about a payment paid or in flight is not judged; for
    // failure and expiry the document sends none of any kind.
    if (isOtherEvent(d) && (p.status === 'completed' || p.status === 'pending')) continue;
    if (p.status !== 'completed')
      fail(
        `A webhook arrived for ${p.kind} ${w.payments[payment]!.id}, which is ${p.status}: only completion sends one.`,
        ['event.none', 'state.expiry-silent', 'event.completed'],
      );
    if (d.method !== 'POST' || !/^application\/json\b/i.test(String(d.headers['content-type'])))
      fail(`Deliveries are POST application/json; this one is ${d.method} ${String(d.headers['content-type'])}.`, [
        'receiver.post',
      ]);
    const spec = p.kind === 'session' ? BODIES[p.body]! : undefined;
    const problems = payloadProblems(d.body, {
      checkoutSessionId: p.kind === 'session' ? w.payments[payment]!.id : null,
      foreignTransactionId: spec?.foreignTransactionId ?? null,
    });
    if (problems.length > 0)
      fail(
        `The delivery for ${p.kind} ${w.payments[payment]!.id}: ${problems.map((x) => x.problem).join('; ')} (${show(d.body)}).`,
        problems.map((x) => x.clause),
      );
    judgeSignature(w, p.org, d, fail);
  }
}

/** How long after a rotation a delivery signed just before it may still arrive. */
const ROTATION_OVERLAP_MS = 2000;

type Fail = (message: string, clauses: string[]) => never;

function judgeSignature(w: World, org: number, d: Received, fail: Fail): void {
  const secrets = w.secrets[org]!;
  if (secrets.length === 0) return; // a --config profile without its secret: nothing to verify with
  const header = d.headers['service-signature'];
  if (typeof header !== 'string')
    fail('A delivery the service can sign came without Service-Signature.', ['sig.header']);
  const format = headerFormatProblem(header) ?? unixSecondsProblem(d, w.orgs[org]!.clockMovedS);
  if (format) fail(`A delivery for ${name(org)}: ${format}`, ['sig.format']);
  // The secret of the time the delivery was signed: the current one, or the one before it
  // when the rotation happened just as the delivery was on its way.
  const current = secrets.findLastIndex((s) => s.since <= d.receivedAt);
  const allowed = [secrets[current]!];
  if (current > 0 && d.receivedAt - secrets[current]!.since < ROTATION_OVERLAP_MS) allowed.push(secrets[current - 1]!);
  if (allowed.some((s) => verifies(d, s.secret))) return;
  const older = secrets.slice(0, Math.max(0, current)).some((s) => verifies(d, s.secret));
  fail(
    older
      ? `The delivery is signed with ${name(org)}'s replaced secret: after a rotation every delivery is signed with the new one.`
      : `The delivery's signature does not verify with ${name(org)}'s signing secret over the raw body.`,
    older ? ['secret.rotation'] : ['sig.digest', 'sig.format', 'secret.scope'],
  );
}

class Rotate extends Step {
  constructor(readonly org: number) {
    super();
  }
  check() {
    return true;
  }
  toString() {
    return `replace ${name(this.org)}'s signing secret`;
  }
  protected async act(m: Model, w: World) {
    w.note(`adapter: rotateWebhookSecret(${name(this.org)})`);
    const org = w.orgs[this.org]!;
    const secret = await w.target.rotateWebhookSecret(org);
    org.webhookSigningSecret = secret;
    w.secrets[this.org]!.push({ secret, since: Date.now() });
    m.orgs[this.org]!.rotations += 1;
  }
}

class NewKey extends Step {
  constructor(
    readonly org: number,
    readonly mode: Mode,
  ) {
    super();
  }
  check() {
    return true;
  }
  toString() {
    return `a new ${this.mode} key for ${name(this.org)}`;
  }
  protected async act(m: Model, w: World) {
    w.note(`adapter: createApiKey(${name(this.org)}, ${this.mode})`);
    const org = w.orgs[this.org]!;
    const pair = await w.target.createApiKey(org, this.mode);
    w.keys[this.org]!.push(pair);
    m.orgs[this.org]!.keys.push({ mode: this.mode, removed: false });
    org.keys[this.mode] = pair;
    org.tokens.delete(this.mode);
  }
}

class RemoveKey extends Step {
  constructor(
    readonly org: number,
    readonly mode: Mode,
    readonly pick: number,
  ) {
    super();
  }
  check(m: Readonly<Model>) {
    return removableKeys(m as Model, this.org, this.mode).length > 0;
  }
  toString() {
    return `remove one of ${name(this.org)}'s ${this.mode} keys`;
  }
  protected async act(m: Model, w: World) {
    const keys = removableKeys(m, this.org, this.mode);
    const key = keys[this.pick % keys.length]!;
    const pair = w.keys[this.org]![key]!;
    w.note(`adapter: deleteApiKey(${name(this.org)}'s ${this.mode} key ${key + 1})`);
    await w.target.deleteApiKey(pair.clientId);
    m.orgs[this.org]!.keys[key]!.removed = true;
    // The suite's own requests (clock confirmations) go on with a key that still exists.
    const org = w.orgs[this.org]!;
    const next = currentKey(m, this.org, this.mode);
    if (this.mode === 'test') org.keys.test = w.keys[this.org]![next!]!;
    else org.keys.live = next === undefined ? undefined : w.keys[this.org]![next];
    org.tokens.delete(this.mode);
  }
}

class CreateLink extends Step {
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

/** What `--explore` may generate, given the adapter's capabilities. */
export function commandArbitraries(capabilities: ReadonlySet<Capability>): fc.Arbitrary<Command>[] {
  // A (default settings, where most operations succeed) twice as often as B: B is there to be crossed.
  const org = fc.constantFrom(0, 0, 1);
  const mode = fc.constantFrom<Mode>('test', 'test', 'live');
  const use: fc.Arbitrary<TokenUse> = fc.oneof(
    { weight: 12, arbitrary: fc.record({ kind: fc.constant('latest' as const), org, mode }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('oldest' as const), org, mode }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom<Spoilt>('mangled', 'truncated', 'double'), org, mode }) },
    { weight: 1, arbitrary: fc.constantFrom<TokenUse>({ kind: 'missing' }, { kind: 'scheme' }) },
  );
  // Bodies 1, 2 and 8 (two valid ones and one with body 1's money) more often than the rest:
  // a body met again is what replays, conflicts and repeated creates need.
  const body = fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(0, 1, 7) },
    { weight: 1, arbitrary: fc.nat({ max: BODIES.length - 1 }) },
  );
  // Few keys, one of them most often: replays and conflicts need a key met again.
  const key = fc.option(fc.constantFrom('k1', 'k1', 'k2'), { freq: 3 });
  const pick = fc.nat({ max: 7 });
  const refusals = { left: REFUSED_PAIRS_PER_RUN };
  const weighted = (weight: number, arbitrary: fc.Arbitrary<Command>) => ({ weight, arbitrary });
  const all: Array<{ weight: number; arbitrary: fc.Arbitrary<Command>; needs?: Capability }> = [
    weighted(
      3,
      fc.tuple(org, mode, fc.boolean()).map(([o, md, removed]) => new GetToken(o, md, removed, refusals)),
    ),
    weighted(
      6,
      fc.tuple(use, body, key).map(([u, b, k]) => new Create(u, b, k ?? undefined)),
    ),
    weighted(
      6,
      fc
        .tuple(use, fc.constantFrom<ReadKind>('own', 'own', 'own', 'unknown', 'retired'), pick)
        .map(([u, v, p]) => new Read(u, 'session', v, p)),
    ),
    weighted(
      1,
      fc
        .tuple(use, fc.constantFrom<ReadKind>('own', 'own', 'unknown'), pick)
        .map(([u, v, p]) => new Read(u, 'link', v, p)),
    ),
    weighted(
      1,
      fc.tuple(use, fc.boolean()).map(([u, h]) => new CreateLink(u, h)),
    ),
    weighted(
      1,
      fc
        .tuple(org, fc.constantFrom<BadRequest>('json', 'missing-secret', 'unknown-and-wrong'))
        .map(([o, k]) => new BadTokenRequest(o, k, refusals)),
    ),
    {
      ...weighted(
        3,
        fc
          .tuple(org, fc.constantFrom(45, 120, 240, 3600, 6 * 3600, 23 * 3600 + 1800, DAY_S + 600))
          .map(([o, s]) => new Advance(o, s)),
      ),
      needs: 'advanceClock',
    },
    {
      ...weighted(
        4,
        fc
          .tuple(
            fc.constantFrom<'session' | 'link'>('session', 'session', 'session', 'link'),
            pick,
            fc.nat(1),
            fc.constantFrom<Outcome>('succeeded', 'succeeded', 'declined', 'pending'),
          )
          .map(([k, p, r, o]) => new Attempt(k, p, r, k === 'link' ? 'succeeded' : o)),
      ),
      needs: 'attempt',
    },
    {
      ...weighted(
        1,
        org.map((o) => new Rotate(o)),
      ),
      needs: 'rotateWebhookSecret',
    },
    {
      ...weighted(
        1,
        fc.tuple(org, mode).map(([o, md]) => new NewKey(o, md)),
      ),
      needs: 'createApiKey',
    },
    {
      ...weighted(
        2,
        fc.tuple(org, mode, pick).map(([o, md, p]) => new RemoveKey(o, md, p)),
      ),
      needs: 'deleteApiKey',
    },
  ];
  return all
    .filter((c) => c.needs === undefined || capabilities.has(c.needs))
    .flatMap((c) => Array.from({ length: c.weight }, () => c.arbitrary));
}

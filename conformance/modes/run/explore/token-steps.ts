/**
 * Steps on the token endpoint (Endpoints: POST /api/token): a token for a key, current or
 * removed, and the endpoint asked wrongly.
 */
import type { Exchange } from '../../../core/exchange.ts';
import { at } from '../../../core/json.ts';
import { tellingApart, tokenResponseProblem } from '../../../rules/token.ts';
import { Divergence, matchAnswer } from './judge.ts';
import { currentKey, expectToken, type Mode, type Model, removedKey } from './model.ts';
import { Step } from './step.ts';
import { orgName, type World } from './world.ts';

/**
 * How many times a run may ask for a token with a removed key's pair. A target may throttle
 * failed pairs from one address (the document shows no limits, but guessing must be slowed),
 * and the hand-written checks running beside the exploration need their own failed pairs
 * answered 401, so the exploration spends few of them.
 */
export const REFUSED_PAIRS_PER_RUN = 12;

export class GetToken extends Step {
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
    return `token for ${orgName(this.org)}'s ${this.removed ? 'removed' : 'current'} ${this.mode} key`;
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

export type BadRequest = 'json' | 'missing-secret' | 'unknown-and-wrong';

/** POST /api/token asked wrongly: a JSON body, a field missing, or a pair that matches no key (two ways, answered alike). */
export class BadTokenRequest extends Step {
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
    return `a token asked for ${what} (${orgName(this.org)}'s test key)`;
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

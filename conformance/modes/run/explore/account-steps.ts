/**
 * Steps the adapter takes on an organisation (Authentication; Webhook signing secret): its
 * clock moved, its signing secret replaced, API keys added and removed.
 */
import { currentKey, type Mode, type Model, removableKeys } from './model.ts';
import { Step } from './step.ts';
import { orgName, type World } from './world.ts';

export class Advance extends Step {
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
    return `move ${orgName(this.org)}'s clock ${this.seconds} s on`;
  }
  protected async act(m: Model, w: World) {
    w.note(`adapter: advanceClock(${orgName(this.org)}, ${this.seconds})`);
    await w.target.advanceClock(w.orgs[this.org]!, this.seconds);
    m.orgs[this.org]!.clockS += this.seconds;
  }
}

export class Rotate extends Step {
  constructor(readonly org: number) {
    super();
  }
  check() {
    return true;
  }
  toString() {
    return `replace ${orgName(this.org)}'s signing secret`;
  }
  protected async act(m: Model, w: World) {
    w.note(`adapter: rotateWebhookSecret(${orgName(this.org)})`);
    const org = w.orgs[this.org]!;
    const secret = await w.target.rotateWebhookSecret(org);
    org.webhookSigningSecret = secret;
    w.secrets[this.org]!.push({ secret, since: Date.now() });
    m.orgs[this.org]!.rotations += 1;
  }
}

export class NewKey extends Step {
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
    return `a new ${this.mode} key for ${orgName(this.org)}`;
  }
  protected async act(m: Model, w: World) {
    w.note(`adapter: createApiKey(${orgName(this.org)}, ${this.mode})`);
    const org = w.orgs[this.org]!;
    const pair = await w.target.createApiKey(org, this.mode);
    w.keys[this.org]!.push(pair);
    m.orgs[this.org]!.keys.push({ mode: this.mode, removed: false });
    org.keys[this.mode] = pair;
    org.tokens.delete(this.mode);
  }
}

export class RemoveKey extends Step {
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
    return `remove one of ${orgName(this.org)}'s ${this.mode} keys`;
  }
  protected async act(m: Model, w: World) {
    const keys = removableKeys(m, this.org, this.mode);
    const key = keys[this.pick % keys.length]!;
    const pair = w.keys[this.org]![key]!;
    w.note(`adapter: deleteApiKey(${orgName(this.org)}'s ${this.mode} key ${key + 1})`);
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

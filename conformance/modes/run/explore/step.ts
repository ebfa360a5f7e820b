/**
 * What every step of an explored sequence is: a fast-check command that writes itself down
 * for the report, acts on the target, and has every delivery that arrived meanwhile judged;
 * and how a step authenticates (a token of the model, spoilt or not, or none).
 */
import type fc from 'fast-check';
import { spoilt } from '../context/api.ts';
import { type Model, type TokenUse, tokenOf } from './model.ts';
import { judgeDeliveries } from './delivery-judge.ts';
import { orgName, type World } from './world.ts';

export type Command = fc.AsyncCommand<Model, World>;

export function useLabel(use: TokenUse): string {
  if (use.kind === 'missing') return 'no Authorization header';
  if (use.kind === 'scheme') return 'Authorization: Token <a token>';
  const which = use.kind === 'oldest' ? 'first' : 'latest';
  const spoilt =
    use.kind === 'latest' || use.kind === 'oldest' ? '' : `, ${use.kind === 'double' ? 'double-prefixed' : use.kind}`;
  return `${orgName(use.org)}'s ${which} ${use.mode} token${spoilt}`;
}

export function authorization(m: Model, w: World, use: TokenUse): Record<string, string> {
  if (use.kind === 'missing') return {};
  if (use.kind === 'scheme') return { authorization: `Token ${w.tokens[0]}` };
  const token = w.tokens[tokenOf(m, use)!]!;
  return {
    authorization: `Bearer ${use.kind === 'latest' || use.kind === 'oldest' ? token : spoilt(token, use.kind)}`,
  };
}

/** A step of a sequence: written down for the report, then judged. */
export abstract class Step implements Command {
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

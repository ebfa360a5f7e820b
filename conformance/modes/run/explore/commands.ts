/**
 * The operations an explored sequence is made of, as fast-check commands: which steps
 * (token-steps.ts, payment-steps.ts, account-steps.ts) may be drawn, how often, and with
 * which arguments. Each runs against the target through its public API or its adapter,
 * then compares the answer with the model (model.ts) and the invariants (judge.ts), and
 * moves the model on as the target answered. Commands that need a capability the adapter
 * lacks are never generated.
 */
import fc from 'fast-check';
import type { Capability, Outcome } from '../../../core/adapter.ts';
import { BODIES } from './inputs.ts';
import { DAY_S, type Mode, type Spoilt, type TokenUse } from './model.ts';
import { Advance, NewKey, RemoveKey, Rotate } from './account-steps.ts';
import { Attempt, Create, CreateLink, Read, type ReadKind } from './payment-steps.ts';
import type { Command } from './step.ts';
import { type BadRequest, BadTokenRequest, GetToken, REFUSED_PAIRS_PER_RUN } from './token-steps.ts';

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

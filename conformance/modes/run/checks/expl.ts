/**
 * Exploration (--explore): what no hand-written check enumerates. EXPL-001 runs random
 * sequences of operations against a model of the document (explore/); EXPL-002
 * sends boundary inputs derived from the description's create schema. Each failure is
 * shrunk by fast-check to a minimal case and reported with the clause it breaks, the
 * steps as numbered curl lines and the seed that replays it.
 */
import fc from 'fast-check';
import { AdapterError, CAPABILITIES } from '../../../core/adapter.ts';
import { sessionBody } from '../context/api.ts';
import type { CheckContext, RunCheck } from '../context/check-context.ts';
import { bodyWith, deriveVariants, type Variant } from '../explore/boundary.ts';
import { BOUNDARY_CLAUSES, judgeBoundary } from '../boundary-judge.ts';
import { describeFound, explore, findParameters, search, shrinkParameters, shrinkRuns } from '../explore/explorer.ts';
import { Divergence } from '../explore/judge.ts';
import { evidenceOf } from '../../../core/http.ts';
import { CheckFailure } from '../../../core/outcome.ts';
import { describeDelivery } from '../deliveries.ts';

const section = 'Exploration';

/** The clauses the model of EXPL-001 judges (each Divergence it can raise cites some of them). */
export const MODEL_CLAUSES = [
  'auth.exchange',
  'auth.bearer',
  'auth.lifetime',
  'auth.expired',
  'auth.removed',
  'auth.mode',
  'auth.isolation',
  'auth.pair',
  'token.ok',
  'token.400',
  'token.401',
  'token.form',
  'token.client-secret',
  'token.identical',
  'conv.request-body',
  'token.plain-error',
  'err.token',
  'res.token.access',
  'res.token.type',
  'res.token.expires',
  'code.unauthorized',
  'code.invalid-token',
  'code.token-expired',
  'code.unknown-api-key',
  'code.not-found',
  'conv.mode',
  'conv.response-body',
  'conv.timestamps',
  'conv.error-body',
  'conv.webhook-address',
  'err.code',
  'err.message',
  'err.param',
  'err.doc-url',
  'err.details',
  'create.ok',
  'create.one',
  'create.currency',
  'create.idempotency-key',
  'res.create.id',
  'res.create.status',
  'res.create.url',
  'res.create.amount',
  'res.create.method',
  'res.create.reference',
  'res.create.code',
  'res.create.test-mode',
  'res.create.expires',
  'idem.replay',
  'idem.conflict',
  'order.validation',
  'order.idempotency',
  'code.idempotency',
  'code.validation-failed',
  'order.currency-mismatch',
  'order.card',
  'order.open-banking',
  'order.settlement',
  'order.aud-first',
  'limit.idempotency',
  'limit.session',
  'read.ok',
  'read.errors',
  'read.isolation',
  'svc.read',
  'res.read.id',
  'res.read.status',
  'res.read.amount',
  'res.read.method',
  'res.read.reference',
  'res.read.code',
  'res.read.particulars',
  'res.read.foreign-id',
  'res.read.test-mode',
  'res.read.transaction-type',
  'legacy.retired',
  'ver.retired',
  'link.endpoints',
  'res.link',
  'state.created',
  'state.pending',
  'state.completed',
  'state.failed',
  'state.declined',
  'state.expired',
  'state.expiry-silent',
  'state.completed-webhook',
  'redirect.params',
  'event.completed',
  'event.none',
  'svc.hook',
  'target.none',
  'receiver.post',
  'payload.created',
  'payload.session',
  'payload.transaction',
  'payload.foreign-id',
  'target.no-mode',
  'sig.header',
  'sig.format',
  'sig.digest',
  'secret.scope',
  'secret.rotation',
];

/** How a run can be repeated: the flags that replay its exploration. */
function replayFlags(ctx: CheckContext): string {
  const { budget, seed } = ctx.run.settings.explore;
  return `${'cases' in budget ? `--explore-cases ${budget.cases}` : `--explore ${budget.ms / 1000}`} --seed ${seed}`;
}

async function exploreSequences(ctx: CheckContext): Promise<void> {
  const { budget, seed } = ctx.run.settings.explore;
  const outcome = await explore(ctx.run, {
    budget,
    seed,
    lanes: ctx.run.settings.concurrency,
    strict: ctx.run.settings.strictAssumptions,
    declared: CAPABILITIES.filter((c) => c === 'createOrganisation' || ctx.run.has(c)),
    clauses: MODEL_CLAUSES,
    signal: ctx.signal,
  });
  const rate = outcome.commands / Math.max(0.001, outcome.durationMs / 1000);
  const throttled = outcome.throttled > 0 ? ` (${outcome.throttled} cut short unjudged: the target answered 429)` : '';
  const summary = `${outcome.sequences} sequences${throttled}, ${outcome.commands} steps in ${(outcome.durationMs / 1000).toFixed(1)} s (${rate.toFixed(0)} steps/s), seed ${seed}`;
  const found = outcome.found;
  if (found) {
    const { message, clauses } = describeFound(found);
    const error = found.error;
    const subject =
      error instanceof Divergence && error.exchange
        ? evidenceOf(error.exchange, ctx.run.redactor)
        : error instanceof Divergence && error.delivery
          ? { request: describeDelivery(error.delivery), response: '(the suite’s receiver)', curl: '' }
          : { request: '', response: '', curl: '' };
    const steps = found.world.steps.length - 1;
    throw new CheckFailure(
      `${message}\nAfter ${steps} step${steps === 1 ? '' : 's'} (shrunk ${found.shrinks} times; sequence ${found.sequence + 1} of lane ${found.lane + 1}; replay: ${replayFlags(ctx)}). ${summary}.`,
      { evidence: { ...subject, curl: found.world.transcript() } },
      clauses,
    );
  }
  if (outcome.setupProblem) {
    throw new AdapterError(`exploration stopped after ${summary}: ${outcome.setupProblem.message}`);
  }
  ctx.note = `${summary}: every answer kept to the model`;
}

async function exploreBoundaries(ctx: CheckContext): Promise<void> {
  const org = await ctx.target.sharedOrganisation();
  const token = await ctx.api.token(org);
  const strict = ctx.run.settings.strictAssumptions;
  const started = Date.now();
  const variants = deriveVariants();
  const send = async (set: readonly Variant[]) => {
    const e = await ctx.api.send('POST', '/api/checkout-sessions', { token, json: bodyWith(sessionBody(), set) });
    judgeBoundary(e, set, strict);
  };
  // Each value alone, in the description's order: the same cases on every run.
  for (const v of variants) {
    try {
      await send([v]);
    } catch (error) {
      if (!(error instanceof Divergence)) throw error;
      throw new CheckFailure(error.message, error.exchange ? { exchange: error.exchange } : undefined, error.clauses);
    }
  }
  // Then several at once, drawn from the seed, each failure shrunk to the fewest values.
  const { budget, seed } = ctx.run.settings.explore;
  const byField = new Map<string, Variant[]>();
  for (const v of variants) byField.set(v.field, [...(byField.get(v.field) ?? []), v]);
  const combination = fc
    .shuffledSubarray([...byField.keys()], { minLength: 2, maxLength: 5 })
    // A field and one inside it would decide the same value twice: one or the other.
    .filter((fields) => !fields.some((f) => fields.some((o) => f.startsWith(`${o}.`))))
    .chain((fields) => fc.tuple(...fields.map((f) => fc.constantFrom(...byField.get(f)!))));
  const combinationOf = (spent = () => false) => {
    const outcome: { last?: Divergence } = {};
    const property = fc.asyncProperty(combination, async (set) => {
      if (spent()) return;
      try {
        await send(set);
      } catch (error) {
        if (error instanceof Divergence) outcome.last = error;
        throw error;
      }
    });
    return { property, outcome };
  };
  const unshrunk = new Map<number, Divergence>();
  const searched = await search(
    { budget, seed, lanes: Math.min(2, ctx.run.settings.concurrency), signal: ctx.signal },
    async (caseSeed) => {
      const { property, outcome } = combinationOf();
      const details = await fc.check(property, findParameters(caseSeed));
      if (!details.failed || !outcome.last) return 'passed';
      unshrunk.set(caseSeed, outcome.last);
      return 'failed';
    },
  );
  const combos = searched.cases;
  let found: Divergence | undefined;
  if (searched.first) {
    const { property, outcome } = combinationOf(shrinkRuns(budget));
    const details = await fc.check(property, shrinkParameters(searched.first.seed, budget));
    found = (details.failed && outcome.last) || unshrunk.get(searched.first.seed);
  }
  const summary = `${variants.length} values alone and ${combos} combinations in ${((Date.now() - started) / 1000).toFixed(1)} s, seed ${seed}`;
  if (found) {
    throw new CheckFailure(
      `${found.message}\n(shrunk to the fewest values; replay: ${replayFlags(ctx)}). ${summary}.`,
      found.exchange ? { exchange: found.exchange } : undefined,
      found.clauses,
    );
  }
  ctx.note = `${summary}: every answer as the document says`;
}

export const explorationChecks: RunCheck[] = [
  {
    id: 'EXPL-001',
    clauses: MODEL_CLAUSES,
    section,
    title:
      'random sequences of operations (tokens, creates with and without keys, replays, reads, clock moves, attempts, keys, secret rotation, deliveries) across two organisations and both modes keep to the model of the document',
    requires: ['createOrganisation'],
    uses: ['advanceClock', 'attempt', 'webhookDeliveries', 'rotateWebhookSecret', 'createApiKey', 'deleteApiKey'],
    slow: true,
    explores: true,
    usesWebhooks: true,
    run: exploreSequences,
  },
  {
    id: 'EXPL-002',
    clauses: BOUNDARY_CLAUSES,
    section,
    title:
      'boundary inputs derived from the description’s create schema, alone and several at once: each answered 200, or validation_failed naming exactly the failing fields with param by the rule',
    slow: true,
    explores: true,
    run: exploreBoundaries,
  },
];

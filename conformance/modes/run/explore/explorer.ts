/**
 * The exploration phase: random sequences of operations (commands.ts) run against the
 * target, each in two organisations of its own, and compared with the model after every
 * step. Lanes run side by side (--concurrency); each draws its sequences from the run's
 * seed, so `--seed N` replays a run exactly. On the first divergence fast-check shrinks the
 * sequence to a minimal one that still diverges, and that one is reported.
 */
import fc from 'fast-check';
import { AdapterError, type Capability } from '../../../core/adapter.ts';
import type { Org } from '../context/organisations.ts';
import type { ExploreBudget, RunContext } from '../context/run-context.ts';
import { CheckFailure, CheckSkipped } from '../../../core/outcome.ts';
import { commandArbitraries } from './commands.ts';
import { Divergence, Throttled } from './judge.ts';
import { SETTINGS_POOL } from './inputs.ts';
import { initialModel } from './model.ts';
import { World } from './world.ts';

export interface ExploreOptions {
  budget: ExploreBudget;
  seed: number;
  lanes: number;
  strict: boolean;
  /** The capabilities the check declared (the only ones its commands call). */
  declared: readonly Capability[];
  clauses: readonly string[];
  signal: AbortSignal;
}

/** How long shrinking a divergent case may take under a time budget: minimal steps are worth the wait. */
export const SHRINK_LIMIT_MS = 120_000;
/**
 * How many runs shrinking a divergent case may take under a budget of cases: a run
 * budget, so that a seed shrinks to the same steps on any machine.
 */
export const SHRINK_RUNS = 500;
/** Longest sequence generated. */
const MAX_COMMANDS = 40;

export interface Found {
  error: unknown;
  world: World;
  lane: number;
  sequence: number;
  /** fast-check's seed of the sequence (with its path, a replay of the minimal one). */
  fcSeed: number;
  shrinks: number;
}

export interface Explored {
  sequences: number;
  /** Sequences cut short because the target throttled the suite: not judged. */
  throttled: number;
  commands: number;
  durationMs: number;
  found?: Found;
  /** An adapter call that failed or had no effect: no verdict can be drawn. */
  setupProblem?: Error;
}

/** The seed of sequence `index` of lane `lane`: a fixed mix of the run's seed, so every sequence can be replayed. */
export function sequenceSeed(seed: number, lane: number, index: number): number {
  let h = (seed ^ Math.imul(lane + 1, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return (h ^ (h >>> 16)) | 0;
}

export interface SearchOptions {
  budget: ExploreBudget;
  seed: number;
  lanes: number;
  signal: AbortSignal;
}

/** How a case ended: kept to the rules, broke one, or showed no verdict can be drawn (stop searching). */
export type CaseOutcome = 'passed' | 'failed' | 'stop';

export interface Searched {
  cases: number;
  /** The earliest failing case of the run (by its index, then its lane), and its seed. */
  first?: { lane: number; index: number; seed: number };
}

/**
 * Draws cases lane by lane until the budget is spent, the check is abandoned, or a case
 * says to stop. Case `index` of lane `lane` always gets the same seed. Once a case fails,
 * every lane still runs its cases up to that index, and the earliest failing one is the
 * one reported, whichever lane was quickest: against a target that answers the same way
 * twice, the same seed finds the same case.
 */
export async function search(
  options: SearchOptions,
  once: (seed: number, lane: number, index: number) => Promise<CaseOutcome>,
): Promise<Searched> {
  const deadline = 'ms' in options.budget ? Date.now() + options.budget.ms : Number.POSITIVE_INFINITY;
  const perLane = 'cases' in options.budget ? options.budget.cases : Number.POSITIVE_INFINITY;
  const result: Searched = { cases: 0 };
  let stopped = false;
  const lane = async (laneIndex: number) => {
    for (let index = 0; !stopped && !options.signal.aborted; index++) {
      const limit = result.first?.index;
      if (limit === undefined ? index >= perLane || Date.now() >= deadline : index > limit) break;
      const seed = sequenceSeed(options.seed, laneIndex, index);
      const outcome = await once(seed, laneIndex, index);
      result.cases += 1;
      if (outcome === 'stop') stopped = true;
      const first = result.first;
      if (outcome === 'failed' && (!first || index < first.index || (index === first.index && laneIndex < first.lane)))
        result.first = { lane: laneIndex, index, seed };
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.lanes) }, (_, i) => lane(i)));
  return result;
}

/** fast-check's settings to find: one case of its own seed, stopped at the failure. */
export const findParameters = (seed: number) => ({ seed, numRuns: 1, endOnFailure: true });

/** fast-check's settings to shrink the case found: within a time limit under a time budget. */
export const shrinkParameters = (seed: number, budget: ExploreBudget) => ({
  seed,
  numRuns: 1,
  ...('ms' in budget ? { interruptAfterTimeLimit: SHRINK_LIMIT_MS, markInterruptAsFailure: false } : {}),
});

/**
 * Under a budget of cases, whether a shrinking property has had its runs: fast-check has no
 * limit of runs, so past SHRINK_RUNS the property passes at once, and shrinking ends with the
 * smallest failing case it had found.
 */
export function shrinkRuns(budget: ExploreBudget): () => boolean {
  let runs = 0;
  return () => 'cases' in budget && ++runs > SHRINK_RUNS;
}

export async function explore(run: RunContext, options: ExploreOptions): Promise<Explored> {
  const started = Date.now();
  const arbitraries = commandArbitraries(run.capabilities);
  const state: Explored = { sequences: 0, throttled: 0, commands: 0, durationMs: 0 };
  const hooksUsable = run.preflight?.ok === true;
  const pools = new Map<number, Map<string, Org>>();
  const failures = new Map<string, { error: unknown; world: World }>();

  /** One sequence's property; `phase` names its worlds apart (a replay must not meet the first run's keys). */
  const sequence = (laneIndex: number, index: number, phase: 'find' | 'shrink') => {
    const pool = pools.get(laneIndex) ?? new Map<string, Org>();
    pools.set(laneIndex, pool);
    const outcome: { last?: { error: unknown; world: World }; noVerdict: boolean } = { noVerdict: false };
    let made = 0;
    const spent = shrinkRuns(options.budget);
    const property = fc.asyncProperty(
      fc.constantFrom(...SETTINGS_POOL),
      fc.commands(arbitraries, { maxCommands: MAX_COMMANDS, size: 'max' }),
      async (settingsB, commands) => {
        if (phase === 'shrink' && spent()) return;
        made += 1;
        const name = `l${laneIndex}s${index}${phase === 'find' ? 'f' : 'r'}${made}`;
        const world = new World(run, options.signal, name, options.declared, options.clauses);
        try {
          const live = await world.setup(settingsB, pool);
          const model = initialModel(settingsB, live, options.strict);
          model.hooksRefused = !hooksUsable;
          await fc.asyncModelRun(() => ({ model, real: world }), commands);
        } catch (error) {
          if (error instanceof Throttled || throttledFailure(error)) {
            if (phase === 'find') state.throttled += 1;
            return;
          }
          if (error instanceof AdapterError || error instanceof CheckSkipped) {
            // Not the target's doing: no verdict, and nothing to shrink.
            state.setupProblem ??= error;
            outcome.noVerdict = true;
            return;
          }
          outcome.last = { error, world };
          throw error;
        } finally {
          if (phase === 'find') state.commands += Math.max(0, world.steps.length - 1);
        }
      },
    );
    return { property, outcome };
  };

  const searched = await search(options, async (seed, laneIndex, index) => {
    const { property, outcome } = sequence(laneIndex, index, 'find');
    const details = await fc.check(property, findParameters(seed));
    if (outcome.noVerdict) return 'stop';
    if (!details.failed || !outcome.last) return 'passed';
    failures.set(`${laneIndex}:${index}`, outcome.last);
    return 'failed';
  });
  state.sequences = searched.cases;
  const first = searched.first;
  if (first) {
    // The earliest failing sequence, run again from its seed and shrunk to the fewest steps.
    const { property, outcome } = sequence(first.lane, first.index, 'shrink');
    const details = await fc.check(property, shrinkParameters(first.seed, options.budget));
    const found = (details.failed && outcome.last) || failures.get(`${first.lane}:${first.index}`)!;
    state.found = {
      ...found,
      lane: first.lane,
      sequence: first.index,
      fcSeed: first.seed,
      shrinks: details.failed ? details.numShrinks : 0,
    };
  }
  state.durationMs = Date.now() - started;
  return state;
}

/** A failure of the suite's own request (a token for a valid pair) that the target throttled: no verdict. */
function throttledFailure(error: unknown): boolean {
  const subject = error instanceof CheckFailure ? error.subject : undefined;
  return subject !== undefined && 'exchange' in subject && subject.exchange.status === 429;
}

/** The clauses a failure breaks, and its message, whatever was thrown. */
export function describeFound(found: Found): { message: string; clauses: readonly string[] } {
  const { error } = found;
  if (error instanceof Divergence) return { message: error.message, clauses: error.clauses };
  if (error instanceof CheckFailure) return { message: error.message, clauses: [] };
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return { message: `The sequence could not complete: ${message}`, clauses: [] };
}

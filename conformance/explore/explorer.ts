/**
 * The exploration phase: random sequences of operations (commands.ts) run against the
 * target, each in two organisations of its own, and compared with the model after every
 * step. Lanes run side by side (--concurrency); each draws its sequences from the run's
 * seed, so `--seed N` replays a run exactly. On the first divergence fast-check shrinks the
 * sequence to a minimal one that still diverges, and that one is reported.
 */
import fc from 'fast-check';
import { AdapterError, type Capability } from '../adapter.ts';
import type { Org } from '../context/organisations.ts';
import type { RunContext } from '../context/run-context.ts';
import { CheckFailure, CheckSkipped } from '../outcome.ts';
import { commandArbitraries } from './commands.ts';
import { Divergence, Throttled } from './judge.ts';
import { initialModel, SETTINGS_POOL } from './model.ts';
import { World } from './world.ts';

export interface ExploreOptions {
  budgetMs: number;
  seed: number;
  lanes: number;
  strict: boolean;
  /** The capabilities the check declared (the only ones its commands call). */
  declared: readonly Capability[];
  clauses: readonly string[];
  signal: AbortSignal;
}

/** How long shrinking a divergent sequence may take: minimal steps are worth the wait. */
export const SHRINK_LIMIT_MS = 120_000;
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
  budgetMs: number;
  seed: number;
  lanes: number;
  signal: AbortSignal;
}

/**
 * Draws cases lane by lane until the budget is spent, the check is abandoned, or a case
 * ends the search (`once` answers true: a divergence found, or no verdict possible). Case
 * `index` of lane `lane` always gets the same seed: a run is replayed by its seed.
 */
export async function search(
  options: SearchOptions,
  once: (seed: number, lane: number, index: number) => Promise<boolean>,
): Promise<number> {
  const deadline = Date.now() + options.budgetMs;
  let stopped = false;
  let cases = 0;
  const lane = async (laneIndex: number) => {
    for (let index = 0; !stopped && Date.now() < deadline && !options.signal.aborted; index++) {
      const ends = await once(sequenceSeed(options.seed, laneIndex, index), laneIndex, index);
      cases += 1;
      if (ends) stopped = true;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.lanes) }, (_, i) => lane(i)));
  return cases;
}

/** fast-check's settings for one case: its own seed, and time to shrink it when it fails. */
export const caseParameters = (seed: number) => ({
  seed,
  numRuns: 1,
  interruptAfterTimeLimit: SHRINK_LIMIT_MS,
  markInterruptAsFailure: false,
});

export async function explore(run: RunContext, options: ExploreOptions): Promise<Explored> {
  const started = Date.now();
  const arbitraries = commandArbitraries(run.capabilities);
  const state: Explored = { sequences: 0, throttled: 0, commands: 0, durationMs: 0 };
  const hooksUsable = run.preflight?.ok === true;

  const pools = new Map<number, Map<string, Org>>();
  state.sequences = await search(options, async (seed, laneIndex, index) => {
    const pool = pools.get(laneIndex) ?? new Map<string, Org>();
    pools.set(laneIndex, pool);
    let lastFailure: { error: unknown; world: World } | undefined;
    let made = 0;
    let noVerdict = false;
    const property = fc.asyncProperty(
      fc.constantFrom(...SETTINGS_POOL),
      fc.commands(arbitraries, { maxCommands: MAX_COMMANDS, size: 'max' }),
      async (settingsB, commands) => {
        made += 1;
        const world = new World(
          run,
          options.signal,
          `l${laneIndex}s${index}r${made}`,
          options.declared,
          options.clauses,
        );
        try {
          const live = await world.setup(settingsB, pool);
          const model = initialModel(settingsB, live, options.strict);
          model.hooksRefused = !hooksUsable;
          await fc.asyncModelRun(() => ({ model, real: world }), commands);
        } catch (error) {
          if (error instanceof Throttled) {
            if (made === 1) state.throttled += 1;
            return;
          }
          if (error instanceof AdapterError || error instanceof CheckSkipped) {
            // Not the target's doing: no verdict, and nothing to shrink.
            state.setupProblem ??= error;
            noVerdict = true;
            return;
          }
          lastFailure = { error, world };
          throw error;
        } finally {
          if (made === 1) state.commands += Math.max(0, world.steps.length - 1);
        }
      },
    );
    const details = await fc.check(property, caseParameters(seed));
    if (details.failed && lastFailure && !state.found) {
      state.found = { ...lastFailure, lane: laneIndex, sequence: index, fcSeed: seed, shrinks: details.numShrinks };
    }
    return noVerdict || state.found !== undefined;
  });
  state.durationMs = Date.now() - started;
  return state;
}

/** The clauses a failure breaks, and its message, whatever was thrown. */
export function describeFound(found: Found): { message: string; clauses: readonly string[] } {
  const { error } = found;
  if (error instanceof Divergence) return { message: error.message, clauses: error.clauses };
  if (error instanceof CheckFailure) return { message: error.message, clauses: [] };
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return { message: `The sequence could not complete: ${message}`, clauses: [] };
}

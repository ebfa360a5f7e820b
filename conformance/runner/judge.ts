/**
 * One judge for every mode: a check's run becomes a result here, whether it ran against a
 * target (`run`), a merchant's receiver (`receiver`) or a client (`client`). A check ends
 * passed, failed (a verdict, with evidence), differs (an assumption check's failure: a
 * rule of ours, not the document's), skipped (what it needs is missing, named) or error
 * (no verdict either way: an adapter call failed, the suite was too late, the setup
 * failed). What differs between the modes (the context a check gets, the capabilities on
 * offer, its time limit, run's delivery preflight) comes in as a `Judging`.
 */
import { AdapterError, CAPABILITIES, type Capability } from '../core/adapter.ts';
import type { Exchange } from '../core/exchange.ts';
import { evidenceOf } from '../core/http.ts';
import { pool } from '../core/pool.ts';
import type { Redactor } from '../core/redact.ts';
import type { RegisteredCheck } from './check-definition.ts';
import { CheckFailure, CheckSkipped, NoVerdict, type Result, resultMaker, SetupError } from '../core/outcome.ts';

/** How a mode has its checks judged. */
export interface Judging<Ctx> {
  /** The context one check runs against; `signal` is aborted when the check's time runs out. */
  contextFor(check: RegisteredCheck<Ctx>, signal: AbortSignal): Ctx;
  /** Runs the check on its context (by default `check.run(ctx)`): a mode may wrap it in a scope of its own. */
  runIn?(check: RegisteredCheck<Ctx>, ctx: Ctx): Promise<void>;
  /**
   * Whether the target's adapter offers a capability; undefined when no adapter is in play
   * (the receiver's made-up events), and then no check is skipped for want of one.
   */
  offers: ((capability: Capability) => boolean) | undefined;
  /** Reasons and evidence go through it: no secret reaches a report. */
  redactor: Redactor;
  /** --strict-assumptions: an assumption check's failure is `failed`, not `differs`. */
  strictAssumptions: boolean;
  /** Longest the check may take; undefined: no limit (its own bounds are enough). */
  timeLimitMs(check: RegisteredCheck<Ctx>): number | undefined;
  /** Why the check cannot be judged at all, known before it starts (run: no delivery reached the receiver). */
  blocked?(check: RegisteredCheck<Ctx>): { status: 'skipped' | 'error'; reason: string } | undefined;
  /** What a passed check says of its run (how much it explored, from which seed). */
  note?(ctx: Ctx): string;
  /** The exchanges the check made: the last one is the evidence of a failure that names none. */
  exchanges?(ctx: Ctx): readonly Exchange[];
}

/** The capabilities a check needs that the adapter does not offer, in report order. */
export function missingFor(check: Pick<RegisteredCheck<unknown>, 'requires'>, offers: (c: Capability) => boolean) {
  return CAPABILITIES.filter((c) => check.requires?.includes(c) && !offers(c));
}

export function skipReason(missing: Capability[]): string {
  return `needs ${missing.join(', ')} (the adapter does not offer ${missing.length === 1 ? 'it' : 'them'})`;
}

/**
 * A check's time limit: a minute of its own, plus what it may spend waiting. The webhook
 * checks wait up to `deliveryWaitMs` after each clock step (up to five attempts, four steps
 * each, plus the waits for the first attempt), and a payment may take `settleTimeoutMs` to
 * settle and its delivery as long again to arrive, so the limit grows with both.
 */
export function defaultCheckTimeoutMs(deliveryWaitMs: number, settleTimeoutMs = 0): number {
  return 60_000 + 30 * deliveryWaitMs + 2 * settleTimeoutMs;
}

/** Runs one check and judges how it ended. */
export async function judge<Ctx>(check: RegisteredCheck<Ctx>, judging: Judging<Ctx>): Promise<Result> {
  const { redactor } = judging;
  const finish = resultMaker(check, CAPABILITIES, (text) => redactor.text(text), judging.strictAssumptions);
  const missing = judging.offers ? missingFor(check, judging.offers) : [];
  if (missing.length > 0) return finish('skipped', skipReason(missing), { missing });
  const blocked = judging.blocked?.(check);
  if (blocked) return finish(blocked.status, blocked.reason, { cause: 'setup' });
  const abort = new AbortController();
  const ctx = judging.contextFor(check, abort.signal);
  const timeLimitMs = judging.timeLimitMs(check);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      judging.runIn ? judging.runIn(check, ctx) : check.run(ctx),
      new Promise((_, reject) => {
        if (timeLimitMs === undefined) return;
        timer = setTimeout(() => {
          const failure = new CheckFailure(`The check did not finish within ${timeLimitMs / 1000} s.`);
          reject(failure);
          // Stop what the abandoned check is still doing (requests, waits).
          abort.abort(failure);
        }, timeLimitMs);
      }),
    ]);
    return finish('passed', judging.note?.(ctx) ?? '');
  } catch (error) {
    if (error instanceof CheckSkipped) return finish('skipped', error.message, { missing: error.missing });
    if (error instanceof AdapterError) return finish('error', error.message, { cause: 'adapter' });
    if (error instanceof NoVerdict) return finish('error', error.message, { cause: 'no-verdict' });
    if (error instanceof SetupError) return finish('error', error.message, { cause: 'setup' });
    const last = judging.exchanges?.(ctx).at(-1);
    const fallback = last ? evidenceOf(last, redactor) : undefined;
    if (error instanceof CheckFailure) {
      const subject = error.subject;
      const evidence =
        subject === undefined
          ? fallback
          : 'exchange' in subject
            ? evidenceOf(subject.exchange, redactor)
            : {
                request: redactor.text(subject.evidence.request),
                response: redactor.text(subject.evidence.response),
                curl: subject.evidence.curl,
              };
      return finish('failed', error.message, {
        ...(evidence ? { evidence } : {}),
        ...(error.clauses && error.clauses.length > 0 ? { clauses: error.clauses } : {}),
      });
    }
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return finish('failed', `The check could not complete: ${message}`, fallback ? { evidence: fallback } : {});
  } finally {
    clearTimeout(timer);
  }
}

export interface JudgeAllOptions<Ctx> {
  /** Checks at once. */
  concurrency: number;
  onStart?(check: RegisteredCheck<Ctx>): void;
  onResult?(result: Result): void;
}

/**
 * Judges the checks a few at a time: the `main` ones, slow ones first so that their waits
 * overlap the rest, then the `after` ones, which read what the main ones saw. Results come
 * back in the order the checks were given (the registry's: the report's order).
 */
export async function judgeAll<Ctx>(
  checks: RegisteredCheck<Ctx>[],
  judging: Judging<Ctx>,
  options: JudgeAllOptions<Ctx>,
): Promise<Result[]> {
  const worker = async (check: RegisteredCheck<Ctx>) => {
    options.onStart?.(check);
    const result = await judge(check, judging);
    options.onResult?.(result);
    return result;
  };
  const main = checks
    .filter((c) => (c.phase ?? 'main') === 'main')
    .sort((a, b) => Number(b.slow ?? false) - Number(a.slow ?? false));
  const mainResults = await pool(main, options.concurrency, worker);
  const afterResults = await pool(
    checks.filter((c) => c.phase === 'after'),
    options.concurrency,
    worker,
  );
  const byId = new Map([...mainResults, ...afterResults].map((r) => [r.id, r]));
  return checks.map((c) => byId.get(c.id)!);
}

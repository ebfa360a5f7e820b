/**
 * How `run` has its checks judged: each `main` check on organisations of its own (so that
 * they cannot disturb each other), then the `after` checks that judge everything the main
 * ones saw; before the first webhook check, the delivery preflight, whose failure is every
 * webhook check's setup error; a time limit that grows with the run's waits and the
 * exploration's budget.
 */
import { CAPABILITIES } from '../../core/adapter.ts';
import { SHRINK_LIMIT_MS } from './explore/explorer.ts';
import { defaultCheckTimeoutMs, type JudgeAllOptions, type Judging, judgeAll, missingFor } from '../../runner/judge.ts';
import type { Result } from '../../core/outcome.ts';
import { CheckContext, type RegisteredRunCheck as Check } from './context/check-context.ts';
import { exploring, type Preflight, type RunContext } from './context/run-context.ts';
import { deliveryPreflight } from './delivery-preflight.ts';

export interface RunnerOptions extends JudgeAllOptions<CheckContext> {
  /** Longest a single check may take. */
  checkTimeoutMs?: number;
  /** The delivery preflight's outcome; run before the first webhook check when not given. */
  preflight?: Preflight;
}

export async function runChecks(run: RunContext, checks: Check[], options: RunnerOptions): Promise<Result[]> {
  // Only when a webhook check will run: a manual adapter's person makes each payment.
  const wantsDeliveries = (c: Check) =>
    (c.webhooks || (c.usesWebhooks && run.has('attempt') && exploring(run.settings.explore.budget))) &&
    missingFor(c, (capability) => run.has(capability)).length === 0;
  const preflight = options.preflight ?? (checks.some(wantsDeliveries) ? await deliveryPreflight(run) : undefined);
  run.preflight = preflight;
  return judgeAll(checks, runJudging(run, options.checkTimeoutMs, preflight), options);
}

function runJudging(
  run: RunContext,
  checkTimeoutMs: number | undefined,
  preflight: Preflight | undefined,
): Judging<CheckContext> {
  const { budget } = run.settings.explore;
  return {
    contextFor: (check, signal) =>
      new CheckContext(
        run,
        check.id,
        [...CAPABILITIES.filter((c) => check.requires?.includes(c)), ...(check.uses ?? [])],
        signal,
        check.clauses,
      ),
    offers: (capability) => run.has(capability),
    redactor: run.redactor,
    strictAssumptions: run.settings.strictAssumptions,
    // Under a budget of cases an exploring check has no time limit: its cases bound it
    // whatever the machine's speed, and each of its requests has a time limit of its own.
    timeLimitMs: (check) =>
      check.explores && 'cases' in budget
        ? undefined
        : (checkTimeoutMs ?? defaultCheckTimeoutMs(run.settings.deliveryWaitMs, run.settings.settleTimeoutMs)) +
          (check.explores && 'ms' in budget ? budget.ms + SHRINK_LIMIT_MS : 0),
    blocked: (check) => (check.webhooks && preflight && !preflight.ok ? preflight : undefined),
    note: (ctx) => ctx.note,
    exchanges: (ctx) => ctx.exchanges,
  };
}

/**
 * Runs the selected checks: `main` checks concurrently (each on organisations of its own,
 * so that they cannot disturb each other), then the `after` checks that judge everything
 * the main ones saw. A check ends passed, failed (a verdict on the target, with evidence),
 * differs (an assumption check's failure: a rule of ours, not the document's), skipped
 * (what it needs is missing, named) or error (an adapter call failed: no verdict).
 */
import { AdapterError, CAPABILITIES, type Capability } from '../adapter.ts';
import type { RegisteredCheck as Check } from './check-definition.ts';
import { pool } from '../pool.ts';
import { deliveryPreflight } from '../modes/run/delivery-preflight.ts';
import { CheckContext } from '../modes/run/context/check-context.ts';
import { exploring, type Preflight, type RunContext } from '../modes/run/context/run-context.ts';
import { SHRINK_LIMIT_MS } from '../explore/explorer.ts';
import { evidenceOf } from '../http.ts';
import { CheckFailure, CheckSkipped, NoVerdict, type Result, resultMaker } from './outcome.ts';

export interface RunnerOptions {
  concurrency: number;
  /** Longest a single check may take. */
  checkTimeoutMs?: number;
  onStart?(check: Check): void;
  onResult?(result: Result): void;
  /** The delivery preflight's outcome; run before the first webhook check when not given. */
  preflight?: Preflight;
}

/** The capabilities a check needs that the run's adapter does not offer, in report order. */
export function missingFor(check: Check, run: RunContext): Capability[] {
  return CAPABILITIES.filter((c) => check.requires?.includes(c) && !run.has(c));
}

export function skipReason(missing: Capability[]): string {
  return `needs ${missing.join(', ')} (the adapter does not offer ${missing.length === 1 ? 'it' : 'them'})`;
}

async function runOne(run: RunContext, check: Check, options: RunnerOptions): Promise<Result> {
  const { redactor } = run;
  const finish = resultMaker(check, CAPABILITIES, (text) => redactor.text(text), run.settings.strictAssumptions);
  const requires = CAPABILITIES.filter((c) => check.requires?.includes(c));
  const missing = missingFor(check, run);
  if (missing.length > 0) return finish('skipped', skipReason(missing), { missing });
  if (check.webhooks && options.preflight && !options.preflight.ok)
    return finish(options.preflight.status, options.preflight.reason, { cause: 'setup' });
  const abort = new AbortController();
  const ctx = new CheckContext(run, check.id, [...requires, ...(check.uses ?? [])], abort.signal, check.clauses);
  const { budget } = run.settings.explore;
  // Under a budget of cases an exploring check has no time limit: its cases bound it
  // whatever the machine's speed, and each of its requests has a time limit of its own.
  const timeoutMs =
    check.explores && 'cases' in budget
      ? undefined
      : (options.checkTimeoutMs ?? defaultCheckTimeoutMs(run.settings.deliveryWaitMs, run.settings.settleTimeoutMs)) +
        (check.explores && 'ms' in budget ? budget.ms + SHRINK_LIMIT_MS : 0);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check.run(ctx),
      new Promise((_, reject) => {
        if (timeoutMs === undefined) return;
        timer = setTimeout(() => {
          const failure = new CheckFailure(`The check did not finish within ${timeoutMs / 1000} s.`);
          reject(failure);
          // Stop what the abandoned check is still doing (requests, waits).
          abort.abort(failure);
        }, timeoutMs);
      }),
    ]);
    return finish('passed', ctx.note);
  } catch (error) {
    if (error instanceof CheckSkipped) return finish('skipped', error.message, { missing: error.missing });
    if (error instanceof AdapterError) return finish('error', error.message, { cause: 'adapter' });
    if (error instanceof NoVerdict) return finish('error', error.message, { cause: 'no-verdict' });
    const last = ctx.exchanges.at(-1);
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

/**
 * Longest a check may take: the webhook checks wait up to `deliveryWaitMs` after each
 * clock step (up to five attempts, four steps each, plus the waits for the first attempt),
 * so the limit grows with it.
 */
export function defaultCheckTimeoutMs(deliveryWaitMs: number, settleTimeoutMs = 0): number {
  return 60_000 + 30 * deliveryWaitMs + 2 * settleTimeoutMs;
}

export async function runChecks(run: RunContext, checks: Check[], options: RunnerOptions): Promise<Result[]> {
  const worker = async (check: Check) => {
    options.onStart?.(check);
    const result = await runOne(run, check, options);
    options.onResult?.(result);
    return result;
  };
  // Slow checks (those that wait for a webhook answer limit) start first so they overlap the rest.
  const main = checks.filter((c) => (c.phase ?? 'main') === 'main');
  // Only when a webhook check will run: a manual adapter's person makes each payment.
  const wantsDeliveries = (c: Check) =>
    (c.webhooks || (c.usesWebhooks && run.has('attempt') && exploring(run.settings.explore.budget))) &&
    missingFor(c, run).length === 0;
  if (options.preflight === undefined && checks.some(wantsDeliveries))
    options = { ...options, preflight: await deliveryPreflight(run) };
  run.preflight = options.preflight;
  const ordered = [...main].sort((a, b) => Number(b.slow ?? false) - Number(a.slow ?? false));
  const mainResults = await pool(ordered, options.concurrency, worker);
  const afterResults = await pool(
    checks.filter((c) => c.phase === 'after'),
    options.concurrency,
    worker,
  );
  const byId = new Map([...mainResults, ...afterResults].map((r) => [r.id, r]));
  return checks.map((c) => byId.get(c.id)!);
}

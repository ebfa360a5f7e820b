/**
 * Runs the selected checks: `main` checks concurrently (each on organisations of its own,
 * so they cannot disturb each other), then the `after` checks that judge everything the
 * main ones saw. Each check ends passed, failed (with a reason and evidence) or skipped.
 */
import { CheckContext, type RunContext } from './context.ts';
import { evidenceOf, redact } from './http.ts';
import { CheckFailure, CheckSkipped, type Check, type Result } from './types.ts';

export interface RunnerOptions {
  concurrency: number;
  /** Longest a single check may take. */
  checkTimeoutMs?: number;
  onStart?(check: Check): void;
  onResult?(result: Result): void;
}

async function runOne(run: RunContext, check: Check, options: RunnerOptions): Promise<Result> {
  const started = Date.now();
  const base = { id: check.id, rule: check.rule, level: check.level, title: check.title, section: check.section };
  // Secrets never reach a report: reasons and evidence are scrubbed once more here.
  const finish = (status: Result['status'], reason: string, evidence?: Result['evidence']): Result => ({
    ...base,
    status,
    reason: redact(reason),
    ...(evidence
      ? {
          evidence: {
            request: redact(evidence.request),
            response: redact(evidence.response),
            curl: redact(evidence.curl),
          },
        }
      : {}),
    durationMs: Date.now() - started,
  });
  const missing = run.missing(check);
  if (missing) return finish('skipped', missing);
  const abort = new AbortController();
  const ctx = new CheckContext(run, check, abort.signal);
  const timeoutMs = options.checkTimeoutMs ?? defaultCheckTimeoutMs(run.settings.settleMs);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check.run(ctx),
      new Promise((_, reject) => {
        timer = setTimeout(() => {
          const failure = new CheckFailure(`The check did not finish within ${timeoutMs / 1000} s.`);
          reject(failure);
          // Stop what the abandoned check is still doing (requests, waits).
          abort.abort(failure);
        }, timeoutMs);
      }),
    ]);
    return finish('passed', '');
  } catch (error) {
    if (error instanceof CheckSkipped) return finish('skipped', error.message);
    const last = ctx.exchanges.at(-1);
    const fallback = last ? evidenceOf(last) : undefined;
    if (error instanceof CheckFailure) return finish('failed', error.message, error.evidence ?? fallback);
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return finish('failed', `The check could not complete: ${message}`, fallback);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Longest a check may take: the webhook checks wait up to `deliveryWaitMs` after each
 * clock step (up to five attempts, four steps each, plus the waits for the first attempt),
 * so the limit grows with it.
 */
export function defaultCheckTimeoutMs(deliveryWaitMs: number): number {
  return 60_000 + 30 * deliveryWaitMs;
}

/** Runs `items` through `worker` with at most `limit` at once, keeping their order in the output. */
async function pool<T, R>(items: T[], limit: number, worker: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) {
      const index = next++;
      out[index] = await worker(items[index]!);
    }
  });
  await Promise.all(lanes);
  return out;
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

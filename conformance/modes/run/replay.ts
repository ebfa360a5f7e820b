/**
 * `payment-conformance replay <report.json>`: runs the checks that failed in a JSON report
 * of `run` again, against the target given now (a fixed build), with the report's seed,
 * exploration budget and concurrency (the exploration's lanes follow it), so that each
 * draws the cases it drew then. Says of each check FIXED (passed), STILL FAILING (failed)
 * or NOT JUDGED (skipped, in error, or no longer a check of this version).
 *
 * Only failed checks are replayed: a check that ended in error was never a verdict on the
 * target (an adapter call or the setup failed), so there is nothing to be fixed (`run
 * --only` runs it again), and one that `differs` broke a rule of our modelling, not of the
 * document. Every failed check is replayed, whatever its level: the question is whether
 * each is fixed, not whether the run would fail. Exit status: 0 every replayed check is
 * fixed (or nothing failed), 1 one still fails, 2 none still fails but one could not be
 * judged, or a usage or setup error (a report that cannot be read).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pc from 'picocolors';
import { createRegistry } from './checks/index.ts';
import type { Invocation } from '../../core/invocation.ts';
import { isObject } from '../../core/json.ts';
import { type Result, SetupError, type Output } from '../../core/outcome.ts';
import { reportersOf } from '../../runner/flags.ts';
import { execute, type RunOptions } from './command.ts';
import { TOOL_VERSION } from '../../core/version.ts';

/** The target's flags, given again: a report keeps none of them (they hold secrets, or belong to a machine). */
export type ReplayOptions = Pick<
  RunOptions,
  | 'baseUrl'
  | 'sandboxToken'
  | 'adapter'
  | 'config'
  | 'requireCapabilities'
  | 'manualTimeoutMs'
  | 'reporter'
  | 'out'
  | 'receiverHost'
  | 'receiverPort'
  | 'receiverPublicUrl'
  | 'receiverTls'
  | 'settleTimeoutS'
> & {
  /** The JSON report (`run --reporter json`) whose failed checks are replayed. */
  report: string;
};

/** What a replayed check came to. */
export type Replayed = 'FIXED' | 'STILL FAILING' | 'NOT JUDGED';

interface ReportRead {
  version: string | undefined;
  invocation: Invocation | undefined;
  results: Array<{ id: string; title: string; status: string }>;
}

/** The parts of a JSON report a replay needs; a usage error when it is not one. */
export function readReport(file: string): ReportRead {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new SetupError(`replay: cannot read ${file} as JSON (${(error as Error).message}).`);
  }
  const results = isObject(parsed) ? parsed.results : undefined;
  const tool = isObject(parsed) && isObject(parsed.tool) ? parsed.tool : undefined;
  if (
    !Array.isArray(results) ||
    !results.every((r) => isObject(r) && typeof r.id === 'string' && typeof r.status === 'string') ||
    tool?.name !== 'payment-conformance'
  )
    throw new SetupError(
      `replay: ${file} is not a JSON report of payment-conformance (run --reporter json writes one).`,
    );
  const invocation = isObject(parsed) ? invocationOf(parsed.invocation) : undefined;
  return {
    version: typeof tool.version === 'string' ? tool.version : undefined,
    invocation,
    results: results.map((r) => ({ id: r.id, title: typeof r.title === 'string' ? r.title : '', status: r.status })),
  };
}

/** A report's `invocation`, each field taken only when it has its type (a hand-edited report may not). */
function invocationOf(value: unknown): Invocation | undefined {
  if (!isObject(value) || !['run', 'receiver', 'client', 'traffic'].includes(String(value.command))) return undefined;
  const whole = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined);
  const explore = isObject(value.explore) ? value.explore : {};
  const cases = whole(explore.cases);
  const seconds = whole(explore.seconds);
  const picked: Invocation = {
    command: value.command as Invocation['command'],
    ...(typeof value.only === 'string' ? { only: value.only } : {}),
    ...(whole(value.seed) !== undefined ? { seed: whole(value.seed) } : {}),
    ...(cases !== undefined ? { explore: { cases } } : seconds !== undefined ? { explore: { seconds } } : {}),
    ...(whole(value.concurrency) ? { concurrency: whole(value.concurrency) } : {}),
    ...(typeof value.settleTimeoutS === 'number' ? { settleTimeoutS: value.settleTimeoutS } : {}),
    ...(typeof value.strictAssumptions === 'boolean' ? { strictAssumptions: value.strictAssumptions } : {}),
    ...(typeof value.targetFlags === 'string' ? { targetFlags: value.targetFlags } : {}),
    ...(value.legacy === 'accept' || value.legacy === 'reject' ? { legacy: value.legacy } : {}),
  };
  return picked;
}

/** The flags that draw the same cases, as a person would type them. */
function flagsOf(invocation: Invocation): string {
  const parts = [];
  if (invocation.seed !== undefined) parts.push(`--seed ${invocation.seed}`);
  if (invocation.explore && 'cases' in invocation.explore) parts.push(`--explore-cases ${invocation.explore.cases}`);
  else if (invocation.explore) parts.push(`--explore ${invocation.explore.seconds}`);
  if (invocation.concurrency !== undefined) parts.push(`--concurrency ${invocation.concurrency}`);
  if (invocation.strictAssumptions) parts.push('--strict-assumptions');
  return parts.join(' ');
}

const firstLine = (text: string) => text.split('\n')[0]!.slice(0, 200);

function verdictOf(result: Result | undefined): { word: Replayed; why: string } {
  if (result === undefined) return { word: 'NOT JUDGED', why: `no such check in payment-conformance ${TOOL_VERSION}` };
  if (result.status === 'passed') return { word: 'FIXED', why: '' };
  if (result.status === 'failed') return { word: 'STILL FAILING', why: firstLine(result.reason) };
  return { word: 'NOT JUDGED', why: `${result.status}: ${firstLine(result.reason)}` };
}

const COLOUR: Record<Replayed, (text: string) => string> = {
  FIXED: pc.green,
  'STILL FAILING': pc.red,
  'NOT JUDGED': pc.magenta,
};

export async function replayCommand(options: ReplayOptions, out: Output): Promise<number> {
  if (
    reportersOf(options.reporter).includes('json') &&
    path.resolve(options.out, 'conformance.json') === path.resolve(options.report)
  )
    throw new SetupError(
      `replay: --out ${options.out} would write the replay's JSON report over ${options.report}: give another --out.`,
    );
  const report = readReport(options.report);
  const invocation = report.invocation;
  if (invocation !== undefined && invocation.command !== 'run') {
    const again = invocation.command === 'receiver' ? 'receiver --url ... --secret ...' : 'client ... --driver ...';
    const failed = report.results.filter((r) => r.status === 'failed').map((r) => r.id);
    throw new SetupError(
      `replay: ${options.report} is a report of ${invocation.command}; replay runs the checks of run reports again. Run payment-conformance ${again} --only "${failed.join(',')}"${invocation.seed !== undefined ? ` --seed ${invocation.seed}` : ''} instead.`,
    );
  }
  const failed = report.results.filter((r) => r.status === 'failed');
  const errors = report.results.filter((r) => r.status === 'error').map((r) => r.id);
  const notReplayed =
    errors.length > 0
      ? `${errors.length} check${errors.length === 1 ? '' : 's'} in error, not replayed (no verdict on the target to fix; run --only "${errors.join(',')}" runs ${errors.length === 1 ? 'it' : 'them'} again)\n`
      : '';
  if (failed.length === 0) {
    out.write(`Nothing to replay: ${options.report} has no failed check.\n${notReplayed}`);
    return 0;
  }
  if (report.version !== TOOL_VERSION)
    out.write(
      `note: ${options.report} is a report of payment-conformance ${report.version ?? '(unknown version)'}, this is ${TOOL_VERSION}: a check may judge differently, and the exploration may draw other cases from the same seed.\n`,
    );
  if (invocation === undefined)
    out.write(
      `note: ${options.report} does not say how its run was asked for (no "invocation"): the checks run with the defaults and a new seed.\n`,
    );

  // A check judging the traffic of the others (the `after` phase: RESP-*) is only as good as
  // that traffic: it is replayed with the whole selection of the report, not alone.
  const registry = new Map(
    createRegistry()
      .all()
      .map((c) => [c.id, c]),
  );
  const known = failed.filter((r) => registry.has(r.id)).map((r) => r.id);
  const whole = known.some((id) => registry.get(id)?.phase === 'after');
  const only = whole ? invocation?.only : known.join(',');
  const flags = invocation ? flagsOf(invocation) : '';
  out.write(
    `replay: ${failed.length} failed check${failed.length === 1 ? '' : 's'} of ${options.report} against ${options.baseUrl}${flags ? ` (${flags})` : ''}${whole ? `, with the report's whole selection (${invocation?.only ?? 'every check'}): a check of the traffic judges the other checks' exchanges` : ''}\n`,
  );

  let results: Result[] = [];
  if (known.length > 0) {
    const explore = invocation?.explore;
    const { report: _file, ...target } = options;
    const outcome = await execute(
      {
        ...target,
        ...(only !== undefined ? { only } : {}),
        ...(invocation?.seed !== undefined ? { seed: invocation.seed } : {}),
        ...(explore && 'cases' in explore ? { exploreCases: explore.cases } : {}),
        ...(explore && 'seconds' in explore ? { exploreS: explore.seconds } : {}),
        settleTimeoutS: options.settleTimeoutS ?? invocation?.settleTimeoutS,
        strictAssumptions: invocation?.strictAssumptions ?? false,
        concurrency: invocation?.concurrency ?? 8,
      },
      out,
    );
    results = outcome.report.results;
  }
  const now = new Map(results.map((r) => [r.id, r]));
  const counts: Record<Replayed, number> = { FIXED: 0, 'STILL FAILING': 0, 'NOT JUDGED': 0 };
  const width = Math.max(...failed.map((r) => r.id.length));
  out.write('\n');
  for (const r of failed) {
    const { word, why } = verdictOf(now.get(r.id));
    counts[word] += 1;
    out.write(
      `${COLOUR[word](pc.bold(word.padEnd(13)))}  ${r.id.padEnd(width)}  ${r.title}${why ? pc.dim(`: ${why}`) : ''}\n`,
    );
  }
  out.write(notReplayed);
  out.write(
    `Replay: ${counts.FIXED} fixed, ${counts['STILL FAILING']} still failing, ${counts['NOT JUDGED']} not judged, of ${failed.length} failed check${failed.length === 1 ? '' : 's'}\n`,
  );
  return counts['STILL FAILING'] > 0 ? 1 : counts['NOT JUDGED'] > 0 ? 2 : 0;
}

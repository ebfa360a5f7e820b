/**
 * `payment-conformance repro <report.json> <CHECK-ID>`: reproduces one check of a JSON
 * report, of any mode. It runs that check again through the same mode, adapter and target
 * flags (given again: a report keeps no secret), with the report's seed, budget and
 * choices, so that it provisions what the check needs afresh (an organisation of its own,
 * a scenario, a delivery) and draws the same cases; then prints the verdict then and now,
 * and each exchange made now beside the one recorded then (from the report's traffic file,
 * conformance.ndjson or conformance.har beside it, or else the failure's evidence).
 *
 * Exit status: 1 the check fails again (reproduced), 0 it passes now, 2 not judged now, or
 * a usage or setup error.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Option } from 'commander';
import pc from 'picocolors';
import type { Invocation } from './core/invocation.ts';
import { isObject } from './core/json.ts';
import { type Output, SetupError } from './core/outcome.ts';
import { MODES } from './modes/index.ts';
import { readReport } from './modes/run/replay.ts';
import { FLAGS } from './runner/flags.ts';
import { type CommandRecord, type Flag, type Mode, RUN_SHAPE_FLAGS } from './runner/mode.ts';

const nameOf = (flag: Flag) => new Option(flag.flags).attributeName();

/**
 * Every target flag of every mode once, named by the modes that take it (the report's mode
 * says which it needs): none required, none defaulted (the mode's own defaults apply).
 */
function targetFlags(): Flag[] {
  const byName = new Map<string, { flag: Flag; modes: string[] }>();
  for (const mode of MODES)
    for (const flag of mode.flags) {
      const name = nameOf(flag);
      if (RUN_SHAPE_FLAGS.has(name)) continue;
      const known = byName.get(name);
      if (known) known.modes.push(mode.name);
      else byName.set(name, { flag, modes: [mode.name] });
    }
  return [...byName.values()].map(({ flag: { required: _required, default: _default, ...rest }, modes }) => ({
    ...rest,
    description: `${modes.join(', ')}: ${rest.description}`,
  }));
}

/** One exchange as the comparison shows it. */
interface Shown {
  line: string;
  /** What "same" compares, each with what each run draws anew blanked. */
  request: string;
  status: string;
  /** A JSON body's fields and their types; another body's text. */
  shape: string;
}

const BODY_CUT = 120;
/** A path or text with what each run draws anew blanked: resource ids, and a scripted service's path of its own. */
const withoutIds = (text: string) =>
  text
    .replace(/\b([a-z]{2,4}(?:_test|_live)?)_[A-Za-z0-9]{6,}\b/g, '$1_…')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '…')
    // The scripted service of a client scenario serves the API under a path of its own.
    .replace(/^\/[^/]+(?=\/api\/)/, '/…');

/** A JSON value's fields and their types, in order of name: two answers alike but for their values have one shape. */
function shapeOf(value: unknown): string {
  if (Array.isArray(value)) return `[${[...new Set(value.map(shapeOf))].sort().join('|')}]`;
  if (isObject(value))
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${key}:${shapeOf(value[key])}`)
      .join(',')}}`;
  return value === null ? 'null' : typeof value;
}

function bodyShape(body: string): string {
  try {
    return shapeOf(JSON.parse(body));
  } catch {
    return withoutIds(body);
  }
}

function shown(method: string, url: string, status: number | string, body: string): Shown {
  let where = url;
  try {
    const parsed = new URL(url);
    where = `${parsed.pathname}${parsed.search}`;
  } catch {
    // Kept as recorded: an evidence's request line is already a path.
  }
  const cut = body.length > BODY_CUT ? `${body.slice(0, BODY_CUT)}…` : body;
  return {
    line: `${method} ${where} → ${status}${cut ? `  ${cut.replace(/\s*\n\s*/g, ' ')}` : ''}`,
    request: `${method} ${withoutIds(where)}`,
    status: String(status),
    shape: bodyShape(body),
  };
}

/** "same", or what differs between an exchange then and now. */
function compared(a: Shown, b: Shown): string {
  const differ = [
    a.request !== b.request ? 'request' : '',
    a.status !== b.status ? 'status' : '',
    a.status === b.status && a.shape !== b.shape ? 'body’s fields' : '',
  ].filter(Boolean);
  return differ.length === 0 ? pc.green('same') : pc.yellow(`differs: ${differ.join(', ')}`);
}

/** The exchanges of one check in a traffic report (NDJSON, or HAR), as recorded. */
function exchangesIn(dir: string, id: string): Shown[] | undefined {
  const ndjson = path.join(dir, 'conformance.ndjson');
  const har = path.join(dir, 'conformance.har');
  let entries: unknown[];
  if (existsSync(ndjson))
    entries = readFileSync(ndjson, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as unknown);
  else if (existsSync(har)) {
    const log = (JSON.parse(readFileSync(har, 'utf8')) as { log?: { entries?: unknown[] } }).log;
    entries = log?.entries ?? [];
  } else return undefined;
  return entries.flatMap((e) => {
    if (!isObject(e) || e._checkId !== id || !isObject(e.request)) return [];
    const response = isObject(e.response) ? e.response : {};
    const content = isObject(response.content) ? response.content : {};
    const status = typeof response.status === 'number' && response.status > 0 ? response.status : 'no answer';
    return [
      shown(
        String(e.request.method),
        String(e.request.url),
        status,
        typeof content.text === 'string' ? content.text : '',
      ),
    ];
  });
}

/** The one exchange a failure's evidence holds, when it holds an HTTP request and answer. */
function exchangeOfEvidence(evidence: unknown): Shown[] {
  if (!isObject(evidence) || typeof evidence.request !== 'string' || typeof evidence.response !== 'string') return [];
  const request = /^(\S+) (\S+) HTTP/.exec(evidence.request);
  const status = /^HTTP\/\S+ (\d+)/.exec(evidence.response);
  if (!request || !status) return [];
  const blank = evidence.response.indexOf('\n\n');
  return [shown(request[1]!, request[2]!, Number(status[1]), blank < 0 ? '' : evidence.response.slice(blank + 2))];
}

interface Then {
  id: string;
  title: string;
  status: string;
  reason: string;
  evidence: unknown;
}

function resultIn(file: string, id: string): Then | undefined {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as { results?: unknown[] };
  const found = (parsed.results ?? []).find((r) => isObject(r) && r.id === id);
  if (!isObject(found)) return undefined;
  return {
    id,
    title: String(found.title ?? ''),
    status: String(found.status),
    reason: String(found.reason ?? ''),
    evidence: found.evidence,
  };
}

/** The values a mode's command runs with: the flags given now, the report's choices, the mode's defaults. */
function valuesFor(
  mode: Mode,
  given: Record<string, unknown>,
  invocation: Invocation | undefined,
  only: string,
  out: string,
): { values: Record<string, unknown>; exploreGiven: boolean } {
  const values: Record<string, unknown> = {};
  for (const flag of mode.flags) {
    const name = nameOf(flag);
    values[name] = given[name] ?? flag.default;
  }
  const shape: Record<string, unknown> = {
    only,
    reporter: 'json,ndjson',
    out,
    verbose: false,
    seed: invocation?.seed,
    concurrency: invocation?.concurrency ?? values.concurrency,
    strictAssumptions: invocation?.strictAssumptions ?? false,
    legacy: invocation?.legacy,
    settleTimeout: given.settleTimeout ?? invocation?.settleTimeoutS ?? values.settleTimeout,
  };
  const explore = invocation?.explore;
  if (explore && 'cases' in explore) shape.exploreCases = explore.cases;
  else if (explore) shape.explore = explore.seconds;
  for (const [name, value] of Object.entries(shape)) if (name in values || name === 'only') values[name] = value;
  for (const flag of mode.flags) {
    const name = nameOf(flag);
    if (flag.required && values[name] === undefined)
      throw new SetupError(
        `repro: the report is of ${mode.name}, whose target needs ${flag.flags.split(' ')[0]} (given again: a report keeps no secret and no machine's path).`,
      );
  }
  return { values, exploreGiven: explore !== undefined && 'seconds' in explore };
}

async function repro(
  o: Record<string, unknown> & { out: string },
  reportFile: string,
  id: string,
  out: Output,
  targetFlagsNow: string,
): Promise<number> {
  const report = readReport(reportFile);
  const then = resultIn(reportFile, id);
  if (!then)
    throw new SetupError(
      `repro: ${reportFile} has no check ${id} (it has ${report.results.map((r) => r.id).join(', ') || 'none'}).`,
    );
  const invocation = report.invocation;
  const mode = MODES.find((m) => m.name === (invocation?.command ?? 'run'))!;
  const check = mode.checks().find((c) => c.id === id);
  if (!check)
    throw new SetupError(`repro: ${id} is not a check of ${mode.name} in this version of payment-conformance.`);
  const dir = path.resolve(o.out);
  if (path.resolve(path.dirname(reportFile)) === dir)
    throw new SetupError(`repro: --out ${o.out} would write over the report reproduced: give another --out.`);
  // A check judging the traffic of the others (RESP-*) is only as good as that traffic: it
  // runs with the report's whole selection, as replay does.
  const only = check.phase === 'after' ? (invocation?.only ?? '*') : id;
  const { values, exploreGiven } = valuesFor(mode, o, invocation, only, o.out);

  const shape = [
    invocation?.seed !== undefined ? `seed ${invocation.seed}` : '',
    invocation?.explore
      ? `exploration ${'cases' in invocation.explore ? `${invocation.explore.cases} cases a lane` : `${invocation.explore.seconds} s`}`
      : '',
    only !== id ? `with the report's selection ${only}` : '',
  ].filter(Boolean);
  out.write(
    `repro ${pc.bold(id)} of ${reportFile}: ${mode.name} again${shape.length > 0 ? ` (${shape.join(', ')})` : ''}\n${pc.bold(id)} ${then.title}\n`,
  );
  // The mode's own console is not asked for: its reports are read back, and shown beside the report's.
  const quiet: Output = { write: () => undefined };
  const exit = await mode.run(values as never, {
    args: [],
    isDefault: (name) => name === 'explore' && !exploreGiven,
    out: quiet,
    targetFlags: targetFlagsNow,
  });
  const nowFile = path.join(dir, 'conformance.json');
  const now = existsSync(nowFile) ? resultIn(nowFile, id) : undefined;
  const reason = (text: string) => text.split('\n')[0]!.slice(0, 300);
  out.write(`  then: ${then.status}${then.reason ? `: ${reason(then.reason)}` : ''}\n`);
  out.write(
    `  now:  ${now ? `${now.status}${now.reason ? `: ${reason(now.reason)}` : ''}` : `no result (exit ${exit})`}\n`,
  );

  // A check of the traffic makes no exchange of its own: its evidence is the exchange it judged.
  const own = check.phase !== 'after';
  const recorded = own ? exchangesIn(path.dirname(reportFile), id) : undefined;
  const before = recorded ?? exchangeOfEvidence(then.evidence);
  const after = (own ? exchangesIn(dir, id) : undefined) ?? exchangeOfEvidence(now?.evidence);
  const source = recorded
    ? 'the report’s traffic file'
    : own
      ? 'the failure’s evidence (the report has no traffic file beside it: --reporter ndjson writes one)'
      : 'the exchange its failure names: it judges the other checks’ traffic';
  out.write(`\nExchanges of ${id}: ${before.length} recorded then (${source}), ${after.length} made now\n`);
  const width = String(Math.max(before.length, after.length)).length;
  for (let i = 0; i < Math.max(before.length, after.length); i += 1) {
    const a = before[i];
    const b = after[i];
    const mark = a && b ? compared(a, b) : '';
    out.write(`${String(i + 1).padStart(width + 2)} then ${a ? a.line : pc.dim('(none)')}\n`);
    out.write(`${' '.repeat(width + 2)} now  ${b ? b.line : pc.dim('(none)')}${mark ? `  ${mark}` : ''}\n`);
  }
  out.write(`\nreports of now: ${nowFile}, ${path.join(dir, 'conformance.ndjson')}\n`);
  if (now?.status === 'failed' || now?.status === 'differs') {
    out.write(`${pc.red(pc.bold('REPRODUCED'))}: ${id} ${now.status === 'failed' ? 'fails' : 'differs'} again\n`);
    return 1;
  }
  if (now?.status === 'passed') {
    out.write(`${pc.green(pc.bold('NOT REPRODUCED'))}: ${id} passes now\n`);
    return 0;
  }
  out.write(`${pc.magenta(pc.bold('NOT JUDGED'))}: ${id} ${now ? `${now.status} now` : 'has no result now'}\n`);
  return 2;
}

export const reproCommand: CommandRecord<Record<string, unknown> & { out: string }> = {
  name: 'repro',
  description:
    'run one check of a JSON report again (any mode), provisioning afresh with the report’s seed, and print each exchange beside the recorded one',
  arguments: [
    { name: 'report', description: 'the JSON report (conformance.json) of run, receiver or client' },
    { name: 'check', description: 'the check id, e.g. TOKEN-001' },
  ],
  flags: [...targetFlags(), FLAGS.out('repro', 'directory for the reports of the reproduction')],
  run: (o, { args, out, targetFlags: flags }) => repro(o, args[0]!, args[1]!, out, flags),
};

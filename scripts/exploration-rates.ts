/**
 * The exploration's self-test (npm run explore:rates): every mutant of the project (the
 * named ones, one per checkable clause, and the combinations of test/support/
 * exploration-mutants.ts) is run three ways against the reference server: exploration
 * alone (EXPL-*), the hand-written checks alone (the selection its own test makes), and
 * both. A mutant is killed when the run fails a must check (exit 1). Prints the kill
 * rates and the mutants exploration alone misses, and, when every mutant ran (no --only),
 * writes them to test/measured/exploration-rates.md with the date, the suite's version and
 * the machine: the test documentation links that file rather than copying figures by hand.
 *
 * Options: --explore <s> (default 10, the suite's default), --seed <n> (default 1),
 * --parallel <n> mutants at once (default 3), --only <substring of a mutant's name>.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CLAUSE_REGISTER_VERSION } from '../conformance/core/clauses.ts';
import { TOOL_VERSION } from '../conformance/core/version.ts';
import { BASELINE, clauseMutants, selectionFor } from '../test/support/clause-mutants.ts';
import { runVariant, type Variant } from '../test/support/conformance-variants.ts';
import { explorationMutants } from '../test/support/exploration-mutants.ts';
import { mutants } from '../test/support/mutants.ts';
import { startTestServer } from '../test/support/server.ts';

const { values } = parseArgs({
  options: {
    explore: { type: 'string', default: '10' },
    seed: { type: 'string', default: '1' },
    parallel: { type: 'string', default: '3' },
    only: { type: 'string' },
  },
});

interface Subject {
  family: 'named' | 'clause' | 'combination';
  variant: Variant;
  /** The hand-written checks its own test selects. */
  checks: string;
}

const subjects: Subject[] = [
  ...mutants.map((m) => ({
    family: 'named' as const,
    variant: m,
    checks: m.only ?? '!EXPL-*',
  })),
  ...clauseMutants.map((m) => ({
    family: 'clause' as const,
    variant: {
      name: `${m.clauses.join(', ')}: ${m.name}`,
      ...(m.api ? { api: m.api } : {}),
      ...(m.hook ? { hook: m.hook } : {}),
    },
    checks: selectionFor(m),
  })),
  ...explorationMutants.map((m) => ({
    family: 'combination' as const,
    variant: { name: m.name, api: m.api },
    checks: '!EXPL-*',
  })),
].filter((s) => !values.only || s.variant.name.includes(values.only));

const exploring = ['--explore', values.explore!, '--seed', values.seed!];
type Way = 'exploration' | 'checks' | 'both';
const killed = new Map<Subject, Record<Way, boolean>>();

async function judge(subject: Subject): Promise<void> {
  const { variant } = subject;
  // One way after the other, each on a server of its own: the reference throttles an
  // address's refused key pairs per server, and one run's refusals must not judge another's.
  const run = async (only: string | undefined, args: string[]) => {
    const { only: _own, ...rest } = variant;
    const selected = only === undefined ? rest : { ...rest, only };
    const server = await startTestServer({ webhookPollIntervalMs: 25 });
    try {
      return (await runVariant(server.url, { ...selected, args: [...(variant.args ?? []), ...args] })).code === 1;
    } finally {
      await server.close();
    }
  };
  // Every hand-written check, or the selection its test makes, with the exploration beside it.
  const both = subject.checks === '!EXPL-*' ? undefined : `${subject.checks},EXPL-*`;
  const result = {
    exploration: await run('EXPL-*', exploring),
    checks: await run(subject.checks, []),
    both: await run(both, exploring),
  };
  killed.set(subject, result);
  process.stderr.write(
    `${result.exploration ? 'E' : '-'}${result.checks ? 'C' : '-'}${result.both ? 'B' : '-'} ${subject.family}: ${variant.name}\n`,
  );
}

const startedAt = new Date();
// The machine's load when the runs start: the rates are only as good as the machine was quiet.
const loadAtStart = os.loadavg()[0]!;
let next = 0;
await Promise.all(
  Array.from({ length: Number(values.parallel) }, async () => {
    while (next < subjects.length) await judge(subjects[next++]!);
  }),
);

const percent = (n: number, of: number) => `${n}/${of} (${((100 * n) / Math.max(1, of)).toFixed(0)} %)`;
const lines = ['| mutants | exploration alone | checks alone | both |', '| --- | --- | --- | --- |'];
for (const family of ['named', 'clause', 'combination', 'all'] as const) {
  const rows = [...killed].filter(([s]) => family === 'all' || s.family === family).map(([, r]) => r);
  const count = (way: Way) => percent(rows.filter((r) => r[way]).length, rows.length);
  lines.push(`| ${family} | ${count('exploration')} | ${count('checks')} | ${count('both')} |`);
}
const heading = `Kill rates (--explore ${values.explore} --seed ${values.seed}; baseline of the clause runs: ${BASELINE.join(', ')})`;
console.log(`${heading}\n`);
console.log(lines.join('\n'));
const missed = [...killed].filter(([, r]) => !r.exploration).map(([s]) => `- ${s.family}: ${s.variant.name}`);
console.log(`\nNot caught by exploration alone (${missed.length}):\n${missed.join('\n')}`);

if (!values.only) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const cpus = os.cpus();
  const text = [
    '<!-- Written by `npm run explore:rates` (scripts/exploration-rates.ts). Do not edit: run it again. -->',
    '',
    '# What the exploration adds: kill rates',
    '',
    `Measured ${startedAt.toISOString().slice(0, 10)} with payment-conformance ${TOOL_VERSION} (clause register ${CLAUSE_REGISTER_VERSION}) on Node ${process.version}, ${cpus.length} CPUs (${cpus[0]?.model.trim() ?? 'unknown'}, load average ${loadAtStart.toFixed(1)} at the start), ${values.parallel} mutants at a time, each run on a fresh reference server: \`--explore ${values.explore} --seed ${values.seed}\`. A mutant is killed when the run fails a must check. "checks alone" is the selection each mutant's own test makes (for the clause mutants, the checks citing its clauses and a baseline: ${BASELINE.join(', ')}).`,
    '',
    lines.join('\n'),
    '',
    `Not caught by exploration alone (${missed.length}):`,
    '',
    missed.join('\n'),
    '',
  ].join('\n');
  const file = path.join(root, 'test/measured/exploration-rates.md');
  mkdirSync(path.dirname(file), { recursive: true });
  // Laid out as the formatter `npm test` holds every file to lays out the table.
  const formatted = execFileSync(path.join(root, 'node_modules/.bin/biome'), ['format', `--stdin-file-path=${file}`], {
    input: text,
    encoding: 'utf8',
  });
  writeFileSync(file, formatted);
}

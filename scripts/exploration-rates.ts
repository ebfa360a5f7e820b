/**
 * The exploration's self-test (npm run explore:rates): every mutant of the project (the
 * named ones, one per checkable clause, and the combinations of test/support/
 * exploration-mutants.ts) is run three ways against the reference server: exploration
 * alone (EXPL-*), the hand-written checks alone (the selection its own test makes), and
 * both. A mutant is killed when the run fails a must check (exit 1). Prints the kill
 * rates and the mutants exploration alone misses.
 *
 * Options: --explore <s> (default 10, the suite's default), --seed <n> (default 1),
 * --parallel <n> mutants at once (default 3), --only <substring of a mutant's name>.
 */
import { parseArgs } from 'node:util';
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
console.log(
  `Kill rates (--explore ${values.explore} --seed ${values.seed}; baseline of the clause runs: ${BASELINE.join(', ')})\n`,
);
console.log(lines.join('\n'));
const missed = [...killed].filter(([, r]) => !r.exploration).map(([s]) => `- ${s.family}: ${s.variant.name}`);
console.log(`\nNot caught by exploration alone (${missed.length}):\n${missed.join('\n')}`);

/**
 * One broken variant (at least) per checkable clause of the service document, each
 * designed from the clause's own words rather than from a check: a mutating proxy between
 * the suite and the reference server (or between the server and the suite's receiver)
 * makes the server break that clause. Each run selects the checks that cite the clauses it
 * breaks, so a mutant is caught only by a check that says it judges those clauses. A mutant is killed when a must check fails
 * (exit 1); a setup error (exit 2) would put the target's defect on the adapter, so it
 * does not count. The kill rate is printed by section.
 *
 * @tags long
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAUSES, clause } from '../../conformance/core/clauses.ts';
import { type ClauseMutant, clauseMutants, selectionFor } from '../support/clause-mutants.ts';
import { explain } from '../support/conformance-cli.ts';
import { runVariant } from '../support/conformance-variants.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { paced } from '../support/pace.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
});

const outcomes = new Map<ClauseMutant, number | null>();

afterAll(async () => {
  await t?.close();
  const bySection = new Map<string, { killed: number; total: number }>();
  for (const [mutant, code] of outcomes) {
    const section = clause(mutant.clauses[0]!).section;
    const row = bySection.get(section) ?? { killed: 0, total: 0 };
    row.total += 1;
    if (code === 1) row.killed += 1;
    bySection.set(section, row);
  }
  const lines = [...bySection].map(
    ([section, { killed, total }]) => `  ${`${killed}/${total}`.padStart(7)}  ${section}`,
  );
  const codes = [...outcomes.values()];
  const killed = codes.filter((c) => c === 1).length;
  const unjudged = codes.filter((c) => c === 2).length;
  console.log(
    `clause mutants killed, by section:\n${lines.join('\n')}\n  ${`${killed}/${outcomes.size}`.padStart(7)}  all (${unjudged} more ended in a setup error, not counted)`,
  );
});

describe('clause mutants', () => {
  it('give every checkable clause of the service at least one mutant', () => {
    const covered = new Set(clauseMutants.flatMap((m) => m.clauses));
    const missing = CLAUSES.filter((c) => c.subject === 'service' && !c.notCheckable && !covered.has(c.id)).map(
      (c) => c.id,
    );
    expect(missing).toEqual([]);
    for (const m of clauseMutants) for (const id of m.clauses) expect(clause(id).notCheckable, id).toBeUndefined();
  });

  describe.concurrent('each is caught: the run does not pass', () => {
    for (const mutant of clauseMutants) {
      it(
        `${mutant.clauses.join(', ')}: ${mutant.name}`,
        async () => {
          const run = await runVariant(t.url, { ...mutant, only: selectionFor(mutant) });
          outcomes.set(mutant, run.code);
          // A kill is a failed must check: a setup error (exit 2) would blame the adapter for the target's defect.
          expect(run.code, explain(run)).toBe(1);
        },
        paced(240_000),
      );
    }
  });
});

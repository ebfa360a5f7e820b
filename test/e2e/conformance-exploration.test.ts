/**
 * The exploration (EXPL-001, EXPL-002) against real targets, as a user runs it: it finds
 * each defect of test/support/exploration-mutants.ts (combinations across organisations,
 * time, repeated values and payments), which the hand-written checks pass but for the few
 * each mutant names; it reports the finding shrunk to a few numbered curl lines, with the
 * clause broken and the seed; the seed replays it step for step; and against the reference
 * server it finds nothing.
 * (Its kill rates over every mutant of the project: npm run explore:rates.)
 *
 * @tags long
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explain, runSuite, type CliRun } from '../support/conformance-cli.ts';
import { runVariant } from '../support/conformance-variants.ts';
import { explorationMutants } from '../support/exploration-mutants.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';
import { paced } from '../support/pace.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
});
afterAll(async () => {
  await t?.close();
});

/** The steps of a finding, without what differs from run to run (names of sequences, ids, ports). */
const stepsOf = (run: CliRun) =>
  (run.result('EXPL-001').evidence?.curl ?? '').split('\n').filter((line) => /^\d+\. # /.test(line));

// A budget of cases, not seconds: from seed 1 the rarest of them is the 57th case of a lane,
// on any machine, however busy; a search stops at its first finding.
const EXPLORE = ['--explore-cases', '200', '--seed', '1'];

describe('exploration finds what no hand-written check tries', () => {
  for (const mutant of explorationMutants) {
    it(
      mutant.name,
      async () => {
        // Servers of their own: the reference throttles an address's refused key pairs (per
        // minute and server), and the two runs together refuse more than one run would.
        const one = await startTestServer({ webhookPollIntervalMs: 25 });
        const two = await startTestServer({ webhookPollIntervalMs: 25 });
        // Side by side: the hand-written checks spend their time waiting on webhook answers,
        // so they take little from the search running beside them.
        const runs = Promise.all([
          runVariant(one.url, { name: mutant.name, api: mutant.api, only: 'EXPL-001', args: EXPLORE }),
          runVariant(two.url, { name: mutant.name, api: mutant.api, only: '!EXPL-*' }, 'pass'),
        ]);
        const [explored, byHand] = await runs.finally(() => Promise.all([one.close(), two.close()]));
        expect(byHand.code, explain(byHand)).toBe(mutant.caughtByHand ? 1 : 0);
        const caught = byHand.report!.results.filter((r) => r.status === 'failed').map((r) => r.id);
        expect(caught, `the hand-written checks that catch this mutant\n${explain(byHand)}`).toEqual(
          mutant.caughtByHand ?? [],
        );
        expect(explored.code, explain(explored)).toBe(1);
        const found = explored.result('EXPL-001');
        expect(
          found.clauses.filter((id) => mutant.clauses.includes(id)),
          found.reason,
        ).not.toEqual([]);
        // Shrunk: the organisations, then a few steps, each with the requests it sent.
        const steps = stepsOf(explored);
        expect(steps[0]).toMatch(/^0\. # organisations A \(.*\) and B \(/);
        expect(steps.length, found.evidence?.curl).toBeLessThanOrEqual(6);
        expect(found.evidence?.curl).toMatch(/^ {3}curl -sS -i -X (GET|POST) '/m);
        expect(found.reason).toMatch(/After \d+ steps? \(shrunk \d+ times?; .*replay: --explore-cases 200 --seed 1\)/);
        // No secret in the report: tokens and keys are shell variables.
        expect(found.evidence?.curl).not.toMatch(/Bearer (?!\$)/);
      },
      paced(450_000),
    );
  }
});

describe('exploration replays and holds its peace', () => {
  it(
    'the same seed finds the same minimal steps again',
    async () => {
      // Any mutant shows it: this one is among those found within seconds.
      const mutant = explorationMutants.find((m) => m.name.startsWith('a session is read back only with the key'))!;
      const first = await runVariant(t.url, { name: mutant.name, api: mutant.api, only: 'EXPL-001', args: EXPLORE });
      const again = await runVariant(t.url, { name: mutant.name, api: mutant.api, only: 'EXPL-001', args: EXPLORE });
      expect(first.code, explain(first)).toBe(1);
      expect(stepsOf(again)).toEqual(stepsOf(first));
    },
    paced(300_000),
  );

  it(
    'finds nothing against the reference server: each check says what it explored and from which seed',
    async () => {
      const run = await runSuite([
        '--base-url',
        t.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--only',
        'EXPL-*',
        '--explore',
        '8',
        '--seed',
        '20261126',
      ]);
      expect(run.code, explain(run)).toBe(0);
      expect(run.result('EXPL-001').reason).toMatch(
        /^\d+ sequences.*, \d+ steps in [\d.]+ s \(\d+ steps\/s\), seed 20261126: every answer kept to the model$/,
      );
      expect(run.result('EXPL-002').reason).toMatch(
        /^\d+ values alone and \d+ combinations in [\d.]+ s, seed 20261126: every answer as the document says$/,
      );
    },
    paced(120_000),
  );

  it(
    '--explore-cases gives the budget in cases: each lane draws that many, however long they take',
    async () => {
      const run = await runSuite([
        '--base-url',
        t.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--only',
        'EXPL-*',
        '--explore-cases',
        '3',
        '--concurrency',
        '2',
        '--seed',
        '7',
      ]);
      expect(run.code, explain(run)).toBe(0);
      // Two lanes of three cases each, for the sequences and for the combinations alike (a
      // sequence the server throttled counts, said apart).
      expect(run.result('EXPL-001').reason).toMatch(
        /^6 sequences( \(\d+ cut short [^)]*\))?, \d+ steps in [\d.]+ s .*, seed 7: every answer/,
      );
      expect(run.result('EXPL-002').reason).toMatch(/^\d+ values alone and 6 combinations in [\d.]+ s, seed 7: every/);
    },
    paced(120_000),
  );

  it(
    '--explore 0 leaves the exploration out, and bad values of --explore and --seed are usage errors',
    async () => {
      const off = await runSuite(['--base-url', t.url, '--sandbox-token', SANDBOX_TOKEN, '--only', 'EXPL-*,TOKEN-001']);
      expect(off.code, explain(off)).toBe(0);
      expect(off.report!.results.map((r) => r.id)).toEqual(['TOKEN-001']);
      for (const flags of [
        ['--explore', '-1'],
        ['--explore', '5000'],
        ['--seed', '4294967296'],
        ['--explore-cases', '0'],
        ['--explore', '5', '--explore-cases', '10'],
      ]) {
        const bad = await runSuite(['--base-url', t.url, '--sandbox-token', SANDBOX_TOKEN, ...flags]);
        expect(bad.code, `${flags.join(' ')}\n${bad.stderr}`).toBe(2);
      }
    },
    paced(60_000),
  );
});

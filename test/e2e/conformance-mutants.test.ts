/**
 * Broken variants of the reference server, made by mutating proxies between the suite
 * and the server and between the server and the suite's receiver: each violation of the
 * service document must be caught by the check meant for it (that check fails, and the
 * run exits 1); and the run's HAR, judged by `traffic` as a recording made anywhere, fails
 * the TRAFFIC checks of that rule where traffic can show it, and none where it cannot.
 *
 * @tags long
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judgeTraffic } from '../../conformance/modes/traffic/command.ts';
import { readHar } from '../../conformance/modes/traffic/read.ts';
import { explain } from '../support/conformance-cli.ts';
import { runVariant } from '../support/conformance-variants.ts';
import { mutants } from '../support/mutants.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { paced } from '../support/pace.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
});
afterAll(async () => {
  await t?.close();
});

describe.concurrent('broken variants are caught by the check meant for each', () => {
  it('has at least 15 different violations across every group', () => {
    expect(mutants.length).toBeGreaterThanOrEqual(15);
    const groups = new Set(mutants.flatMap((m) => m.caughtBy.map((id) => id.split('-')[0])));
    for (const group of ['TOKEN', 'AUTH', 'VAL', 'CFG', 'IDEM', 'READ', 'LIFE', 'HOOK', 'RESP'])
      expect(groups).toContain(group);
  });

  for (const mutant of mutants) {
    it(
      `${mutant.name}: ${mutant.caughtBy.join(', ')} fails`,
      async () => {
        const run = await runVariant(t.url, { ...mutant, args: [...(mutant.args ?? []), '--reporter', 'json,har'] });
        expect(run.code, explain(run)).toBe(1);
        for (const id of mutant.caughtBy) expect(run.result(id).status, `${id}\n${explain(run)}`).toBe('failed');
        for (const id of mutant.stillPass ?? [])
          expect(run.result(id).status, `${id} should be untouched by this mutant\n${explain(run)}`).toBe('passed');
        // A failure comes with its evidence.
        const failed = run.result(mutant.caughtBy[0]!);
        expect(failed.reason.length).toBeGreaterThan(10);

        const har = path.join(run.dir, 'conformance.har');
        const judged = await judgeTraffic(
          readHar(har),
          { source: har, reporter: '', strictAssumptions: true },
          { write: () => undefined },
        );
        const why = judged.report.results.map((r) => `${r.id} ${r.status}: ${r.reason}`).join('\n');
        expect(
          judged.report.results.filter((r) => r.status === 'failed').map((r) => r.id),
          why,
        ).toEqual('caughtBy' in mutant.traffic ? mutant.traffic.caughtBy : []);
      },
      paced(120_000),
    );
  }
});

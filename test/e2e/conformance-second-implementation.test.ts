/**
 * The suite's false-alarm guard: a second, independent implementation of the service
 * (test/support/second-implementation), written from SERVICE.md alone and choosing
 * differently wherever the document is silent, must pass the whole suite with every `must`
 * check judged (--require-capabilities all) and no error. It delivers webhooks over real
 * TLS to the suite's receiver, trusting the receiver's CA. It refuses the request shapes
 * the suite modelled for payment links and legacy transactions, as the document lets it;
 * its adapter makes them in its own shapes (paymentLinks, legacyTransactions). The traffic
 * of that run, judged by `traffic`, fails no rule either.
 *
 * @tags long
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { receiverTls } from '../../conformance/modes/run/tls.ts';
import { judgeTraffic } from '../../conformance/modes/traffic/command.ts';
import { readHar } from '../../conformance/modes/traffic/read.ts';
import { type CliRun, explain, expectPassed, runSuite } from '../support/conformance-cli.ts';
import { startSecondImplementation } from '../support/second-implementation/server.ts';
import { paced } from '../support/pace.ts';

/**
 * The checks that reach a payment link or a legacy transaction: skipped while the suite
 * had only its modelled requests, which this implementation refuses; judged through the
 * adapter's own shapes.
 */
const THROUGH_THE_ADAPTER = ['READ-008', 'READ-010', 'HOOK-023', 'HOOK-022', 'HOOK-025', 'AUTH-009'];

let dir: string;
let impl: { url: string; close(): Promise<void> };
const controlToken = randomBytes(24).toString('hex');

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'conformance-second-'));
  // The receiver's CA, made before the implementation starts so it can be told to trust it.
  await receiverTls(dir, ['127.0.0.1']);
  impl = await startSecondImplementation({
    trustCaFile: path.join(dir, 'receiver-ca.pem'),
    testHosts: ['127.0.0.1'],
    controlToken,
  });
});

afterAll(async () => {
  await impl?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it(
  'the whole suite passes the second implementation: every must check judged, no failure of a must check, no error',
  async () => {
    const run: CliRun = await runSuite(
      [
        '--base-url',
        impl.url,
        '--adapter',
        'test/support/second-implementation/adapter.ts',
        '--receiver-tls',
        '--require-capabilities',
        'all',
        '--reporter',
        'json,har',
        // The exploration too, for a few seconds: its model is the document's, not ours.
        '--explore',
        '5',
        '--seed',
        '20261126',
      ],
      { SECOND_IMPL_CONTROL_TOKEN: controlToken },
      { nodeArgs: ['--import', 'tsx'], out: dir },
    );
    const why = explain(run);
    expect(run.report, why).toBeDefined();
    expectPassed(run);
    expect(
      run.report!.results.filter((r) => r.status === 'skipped').map((r) => r.id),
      why,
    ).toEqual([]);
    for (const id of THROUGH_THE_ADAPTER) expect(run.result(id).status, why).toBe('passed');
    // Its link reads are in its own shape, not ours: only a check of our modelling may say so.
    const failed = run.report!.results.filter((r) => r.status === 'failed');
    expect(
      failed.map((r) => `${r.id} ${r.level}`),
      why,
    ).toEqual(failed.map((r) => `${r.id} assumption`));

    // Its traffic, read back as `traffic --har` reads a recording made anywhere: no rule of
    // the document fails it either (our modelling of link reads may differ).
    const har = path.join(dir, 'conformance.har');
    const judged = await judgeTraffic(readHar(har), { source: har, reporter: '' }, { write: () => undefined });
    const trafficWhy = judged.report.results.map((r) => `${r.id} ${r.status}: ${r.reason}`).join('\n');
    expect(
      judged.report.results.filter((r) => r.status === 'failed').map((r) => r.id),
      trafficWhy,
    ).toEqual([]);
    for (const id of ['TRAFFIC-003', 'TRAFFIC-009', 'TRAFFIC-010', 'TRAFFIC-011', 'TRAFFIC-012', 'TRAFFIC-013'])
      expect(judged.report.results.find((r) => r.id === id)?.status, trafficWhy).toBe('passed');
  },
  paced(300_000),
);

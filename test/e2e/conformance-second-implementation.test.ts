/**
 * The suite's false-alarm guard: a second, independent implementation of the service
 * (test/support/second-implementation), written from SERVICE.md alone and choosing
 * differently wherever the document is silent, must pass the whole suite with no failure
 * and no error. It delivers webhooks over real TLS to the suite's receiver, trusting the
 * receiver's CA. The only skips are the checks reached through request shapes the suite
 * modelled (payment links, legacy transactions), which this implementation refuses, as the
 * document lets it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { receiverTls } from '../../conformance/tls.ts';
import { type CliRun, explain, expectPassed, runSuite } from '../support/conformance-cli.ts';
import { startSecondImplementation } from '../support/second-implementation/server.ts';
import { paced } from '../support/pace.ts';

/**
 * Checks skipped, each with what its reason must say: the suite's modelled request was
 * refused (400), so no payment link or legacy transaction could be made. Nothing else may
 * be skipped: the adapter offers every capability.
 */
const LINK_REFUSED = /^POST \/api\/payment-links refused the modelled request \(status 400\)/;
const LEGACY_REFUSED = /^POST \/api\/transaction did not accept the modelled request\b.*\(status 400\)/;
const EXPECTED_SKIPS: Record<string, RegExp> = {
  'READ-008': LINK_REFUSED, // GET /api/transaction/{link id} while payable and once settled
  'READ-010': LINK_REFUSED, // another organisation's payment link
  'HOOK-023': LINK_REFUSED, // a paid payment link's event
  'HOOK-022': LEGACY_REFUSED, // the legacy two-field body
  'HOOK-025': LEGACY_REFUSED, // the legacy body names the transaction created
  // Links and legacy transactions without a token: none could be made to send.
  'AUTH-009': /^the target refused the modelled requests of payment links and legacy transactions/,
};

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
  'the whole suite passes the second implementation: no failure, no error, skips only for refused modelled shapes',
  async () => {
    const run: CliRun = await runSuite(
      [
        '--base-url',
        impl.url,
        '--adapter',
        'test/support/second-implementation/adapter.ts',
        '--receiver-tls',
        '--reporter',
        'json',
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
    expect(run.report!.summary.failed, why).toBe(0);
    expectPassed(run);
    const skipped = run.report!.results.filter((r) => r.status === 'skipped');
    expect(skipped.map((r) => r.id).sort(), why).toEqual(Object.keys(EXPECTED_SKIPS).sort());
    for (const r of skipped) expect(r.reason, `${r.id}: ${r.reason}`).toMatch(EXPECTED_SKIPS[r.id]!);
  },
  paced(300_000),
);

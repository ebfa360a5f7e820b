/**
 * `payment-conformance client` against API clients, through their drivers, in front of the
 * reference server: this project's SDK (the driver the package ships) passes every check;
 * a Python client of the standard library, correct in ways of its own (another key format,
 * another backoff, its token renewed a minute early, Retry-After honoured), passes every
 * check through a command driver, so the protocol is the language's own business; a naive
 * client fails the rules it breaks and no others; each client mutant (the SDK with one rule
 * broken) is caught by the checks of that rule, and its HAR by the TRAFFIC checks of that
 * rule where traffic can show it (judged clean where it cannot); and a driver that breaks
 * the protocol is told so.
 *
 * @tags long
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totalsOf } from '../../conformance/modes/client/checks/index.ts';
import { executeClient } from '../../conformance/modes/client/command.ts';
import { judgeTraffic } from '../../conformance/modes/traffic/command.ts';
import { readHar } from '../../conformance/modes/traffic/read.ts';
import { clientMutants } from '../support/client-mutants.ts';
import { cli, explain, runClientMode } from '../support/conformance-cli.ts';
import { paced } from '../support/pace.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const target = () => ['--base-url', t.url, '--sandbox-token', SANDBOX_TOKEN];
const ids = (run: Awaited<ReturnType<typeof runClientMode>>, status: string) =>
  run.report!.results.filter((r) => r.status === status).map((r) => r.id);

describe.concurrent('clients through their drivers', () => {
  it(
    'the SDK, through the driver the package ships, passes every check',
    async () => {
      const run = await runClientMode([...target(), '--driver-module', '@payment-service/conformance/drivers/sdk']);
      expect(run.code, explain(run)).toBe(0);
      expect(run.report!.summary, explain(run)).toMatchObject({ failed: 0, skipped: 0, error: 0 });
      expect(run.report!.summary.passed).toBeGreaterThanOrEqual(21);
      // Secrets stay out of the report: the curl lines name them as shell variables.
      const text = readFileSync(`${run.dir}/conformance.json`, 'utf8');
      expect(text).not.toMatch(/sk_[A-Za-z0-9]{8,}|whsec_[A-Za-z0-9]{8,}/);
    },
    paced(90_000),
  );

  it(
    'a Python client of the standard library, correct in ways of its own, passes every check through a command',
    async () => {
      const run = await runClientMode([...target(), '--driver', 'python3 examples/clients/python/driver.py']);
      expect(run.code, explain(run)).toBe(0);
      expect(run.report!.summary, explain(run)).toMatchObject({ failed: 0, skipped: 0, error: 0 });
    },
    paced(90_000),
  );

  it(
    'a naive client (plain fetch, a token per call, no key, no retry) fails the rules it breaks and no others',
    async () => {
      const run = await runClientMode([...target(), '--driver', 'node test/support/client-drivers/naive.mjs']);
      expect(run.code, explain(run)).toBe(1);
      // Without a key it is right not to retry a 500 (a retry may make a second payment): the
      // missing key is what CLIENT-004 judges.
      expect(ids(run, 'failed'), explain(run)).toEqual(['CLIENT-003', 'CLIENT-004', 'CLIENT-006']);
      // It verifies no webhooks: those checks are skipped, naming the operation.
      expect(ids(run, 'skipped')).toEqual(['CLIENT-018', 'CLIENT-019', 'CLIENT-020']);
      expect(run.result('CLIENT-018').reason).toBe('the driver does not offer verifyWebhook');
      // A failure shows the traffic: numbered curl lines, each with what the client got.
      const evidence = run.result('CLIENT-006').evidence!;
      expect(evidence.curl).toMatch(/^1\. \(\+\d+ ms\) curl -sS -i -X POST '.*\/api\/token'/m);
      expect(evidence.curl).toMatch(/# 401 token_expired from the suite/);
      expect(evidence.curl).toContain('$CLIENT_SECRET');
    },
    paced(90_000),
  );

  it(
    'a driver that breaks the protocol is told so, check by check',
    async () => {
      const run = await runClientMode([
        ...target(),
        '--driver',
        `node -e "process.stdin.on('data', () => console.log('hello'))"`,
        '--only',
        'CLIENT-00[1-2],CLIENT-018',
      ]);
      expect(run.code, explain(run)).toBe(1);
      expect(run.result('CLIENT-018').reason).toMatch(/the driver wrote "hello" on standard output, which is not JSON/);
    },
    paced(60_000),
  );
});

describe.concurrent('each client mutant is caught by the checks of the rule it breaks', () => {
  for (const mutant of clientMutants) {
    it(
      `${mutant.clause}: ${mutant.name}`,
      async () => {
        const out = mkdtempSync(path.join(tmpdir(), 'client-mutant-'));
        const quiet = { write: () => undefined };
        const { report } = await executeClient(
          {
            baseUrl: t.url,
            sandboxToken: SANDBOX_TOKEN,
            driverModule: mutant.driver,
            only: mutant.caughtBy.join(','),
            reporter: 'har',
            out,
            // A check of our modelling catches its mutant as a failure only when held strictly.
            strictAssumptions: true,
          },
          quiet,
        );
        const failedOf = (results: typeof report.results) =>
          results.filter((r) => r.status === 'failed').map((r) => r.id);
        const why = report.results.map((r) => `${r.id} ${r.status}: ${r.reason}`).join('\n');
        expect(failedOf(report.results), why).toEqual(mutant.caughtBy);

        // The same traffic, read back as `traffic --har` reads a recording made anywhere.
        const har = path.join(out, 'conformance.har');
        const judged = await judgeTraffic(readHar(har), { source: har, reporter: '', strictAssumptions: true }, quiet);
        const trafficWhy = judged.report.results.map((r) => `${r.id} ${r.status}: ${r.reason}`).join('\n');
        expect(failedOf(judged.report.results), trafficWhy).toEqual(
          'caughtBy' in mutant.traffic ? mutant.traffic.caughtBy : [],
        );
      },
      paced(90_000),
    );
  }
});

describe('the seed', () => {
  it('draws the same amounts again, each in range with at most two decimals, and others from another seed', () => {
    expect(totalsOf(7)).toEqual(totalsOf(7));
    expect(totalsOf(7)).not.toEqual(totalsOf(8));
    for (const total of [...totalsOf(7), ...totalsOf(20261127)]) {
      expect(total).toBeGreaterThan(0);
      expect(total).toBeLessThanOrEqual(10000);
      expect(Math.round(total * 100) / 100).toBe(total);
    }
  });
});

describe('usage', () => {
  it('needs a driver, one of the two kinds, and a way to the target', async () => {
    for (const args of [
      [...target()],
      [...target(), '--driver', 'true', '--driver-module', 'x.mjs'],
      ['--base-url', t.url, '--driver', 'true'],
      [...target(), '--driver-module', 'no/such/driver.mjs'],
      [...target(), '--driver', 'true', '--seed', '4294967296'],
    ]) {
      const run = await cli(['client', ...args]);
      expect(run.code, `${args.join(' ')}\n${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(/^payment-conformance: /);
    }
  });
});

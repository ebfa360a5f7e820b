/**
 * The suite through target adapters (conformance/docs/adapter-reference.md), as a user runs it: a
 * team's own adapter module (payments made by a browser on the hosted page) covers as
 * much as the built-in sandbox adapter; an adapter that only makes organisations gives
 * skips that name what is missing; a throwing adapter, or one whose call has no effect,
 * is a setup error and never a verdict; --config profiles on the server with its sandbox
 * off skip exactly what such an adapter skips; --require-capabilities; payment links and
 * legacy transactions in a target's own shapes, with and without the adapter's
 * paymentLinks and legacyTransactions; `adapter init`; and --adapter manual with a person
 * (here, a script) paying on the hosted page.
 *
 * @tags long
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAPABILITIES, MODELLED_STAND_INS } from '../../conformance/core/adapter.ts';
import { everySettings } from '../../conformance/rules/configuration.ts';
import { type CliRun, cli, explain, expectPassed, runSuite } from '../support/conformance-cli.ts';
import { repoRoot } from '../support/description.ts';
import type { MutatingProxy } from '../support/mutating-proxy.ts';
import { startOwnShapesProxy } from '../support/own-shapes-proxy.ts';
import { type Org, SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';
import { paced } from '../support/pace.ts';

const run = promisify(execFile);
const TS = { nodeArgs: ['--import', 'tsx'] };
const ADAPTER_ENV = { ADAPTER_SANDBOX_TOKEN: SANDBOX_TOKEN };
const adapter = (name: string) => path.join('test/support/adapters', `${name}.ts`);
const scratch = mkdtempSync(path.join(tmpdir(), 'conformance-adapters-'));

let t: TestServer;
let total: number;

beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
  const list = await cli(['list']);
  // The run's checks: list also names the receiver's (RCV-*), the client's (CLIENT-*) and
  // the traffic's (TRAFFIC-*), and these runs leave the exploration out (runSuite's --explore 0).
  total = list.stdout
    .trim()
    .split('\n')
    .filter((line) => !/^(RCV|CLIENT|TRAFFIC|EXPL)-/.test(line)).length;
}, paced(60_000));
afterAll(async () => {
  await t?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const byStatus = (r: CliRun, status: string) => r.report!.results.filter((x) => x.status === status);

describe('a team’s adapter module', () => {
  it(
    'paying on the hosted page in a browser, covers every check the sandbox adapter covers: all passed',
    async () => {
      const browser = await runSuite(
        // Four checks at a time, not eight: the adapter drives its pages from the suite's own
        // process, beside the receiver whose held answers HOOK-028 and HOOK-029 time.
        ['--base-url', t.url, '--adapter', adapter('browser'), '--reporter', 'json', '--concurrency', '4'],
        ADAPTER_ENV,
        TS,
      );
      const late = expectPassed(browser).length;
      expect(browser.report!.summary).toEqual({ passed: total - late, failed: 0, differs: 0, skipped: 0, error: late });
      // Written before paymentLinks and legacyTransactions: the server takes the modelled requests.
      expect(browser.report!.adapter).toEqual({
        name: adapter('browser'),
        capabilities: CAPABILITIES.filter((c) => !MODELLED_STAND_INS.includes(c)),
      });
      expect(browser.report!.coverage).toMatchObject({ judged: total, total, skippedOther: 0 });
    },
    paced(300_000),
  );

  it(
    'that only makes organisations: every skip names a capability, nothing fails, exit 0',
    async () => {
      const only = await runSuite(
        ['--base-url', t.url, '--adapter', adapter('organisations-only'), '--reporter', 'console,json'],
        ADAPTER_ENV,
        TS,
      );
      const late = expectPassed(only);
      expect(byStatus(only, 'failed'), explain(only)).toEqual([]);
      expect(byStatus(only, 'error'), explain(only)).toEqual(late);
      const skipped = byStatus(only, 'skipped');
      expect(skipped.length).toBeGreaterThan(20);
      const others = CAPABILITIES.filter((c) => c !== 'createOrganisation').join('|');
      for (const r of skipped) {
        expect(r.reason, r.id).toMatch(new RegExp(`^needs (${others})(, (${others}))* \\(the adapter does not offer`));
        expect(r.requires.length, r.id).toBeGreaterThan(0);
      }
      const coverage = only.report!.coverage;
      expect(coverage.skippedOther).toBe(0);
      expect(coverage.judged + skipped.length).toBe(total);
      expect(coverage.skippedFor.attempt).toBe(skipped.filter((r) => r.requires.includes('attempt')).length);
      expect(only.stdout).toContain(`Coverage: ${coverage.judged} of ${total} checks judged; skipped for `);
      expect(only.stdout).toMatch(/skipped for [^\n]*advanceClock: \d+ checks/);
    },
    paced(180_000),
  );

  it(
    'that throws: the checks needing it end in error with its message, none fails, exit 2',
    async () => {
      const down = await runSuite(['--base-url', t.url, '--adapter', adapter('throwing')], {}, TS);
      expect(down.code, explain(down)).toBe(2);
      expect(byStatus(down, 'failed'), explain(down)).toEqual([]);
      const errors = byStatus(down, 'error');
      expect(errors.length).toBeGreaterThan(10);
      for (const r of errors)
        expect(r.reason).toMatch(/^createOrganisation\(.*\) failed: the test environment is down$/);
    },
    paced(120_000),
  );

  it(
    'whose clock control has no effect: the suite notices (error), it does not blame the target',
    async () => {
      const stuck = await runSuite(
        ['--base-url', t.url, '--adapter', adapter('stuck-clock'), '--only', 'AUTH-006,READ-006,IDEM-004'],
        ADAPTER_ENV,
        TS,
      );
      expect(stuck.code, explain(stuck)).toBe(2);
      for (const id of ['AUTH-006', 'READ-006', 'IDEM-004']) {
        expect(stuck.result(id).status, explain(stuck)).toBe('error');
        expect(stuck.result(id).reason).toMatch(
          /^advanceClock\(org_\w+, \d+\) did not take effect: a session created after the move reads createdAt 0 s after one created before it$/,
        );
      }
    },
    paced(120_000),
  );

  it('a module that is not an adapter, or declares what it lacks, is a setup error', async () => {
    const bad = path.join(scratch, 'bad.mjs');
    writeFileSync(bad, "export default { capabilities: ['attempt', 'teleport'] };\n");
    const refused = await cli(['run', '--base-url', t.url, '--adapter', bad]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/unknown capabilities teleport/);
    writeFileSync(bad, "export default { capabilities: ['attempt'] };\n");
    const methodless = await cli(['run', '--base-url', t.url, '--adapter', bad]);
    expect(methodless.code).toBe(2);
    expect(methodless.stderr).toMatch(/declares attempt without a method of that name/);
    writeFileSync(bad, "export default { capabilities: ['paymentLinks'], async createPaymentLink() {} };\n");
    const half = await cli(['run', '--base-url', t.url, '--adapter', bad]);
    expect(half.code).toBe(2);
    expect(half.stderr).toMatch(/declares paymentLinks \(readPaymentLink\) without a method of that name/);
    const both = await cli(['run', '--base-url', t.url, '--adapter', bad, '--sandbox-token', SANDBOX_TOKEN]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--adapter and --sandbox-token/);
  });
});

describe('--require-capabilities', () => {
  it(
    'is a setup error when the adapter lacks one, and passes when it offers them all',
    async () => {
      const lacking = await cli(
        [
          'run',
          '--base-url',
          t.url,
          '--adapter',
          adapter('organisations-only'),
          '--require-capabilities',
          'advanceClock,attempt',
        ],
        ADAPTER_ENV,
        TS,
      );
      expect(lacking.code).toBe(2);
      expect(lacking.stderr).toMatch(/does not offer advanceClock, attempt/);
      const unknown = await cli([
        'run',
        '--base-url',
        t.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--require-capabilities',
        'time',
      ]);
      expect(unknown.code).toBe(2);
      const all = await runSuite([
        '--base-url',
        t.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--require-capabilities',
        'all',
        '--only',
        'TOKEN-001',
      ]);
      expect(all.code, explain(all)).toBe(0);
    },
    paced(60_000),
  );
});

describe('payment links and legacy transactions in a target’s own shapes', () => {
  // The checks that make a payment link or a legacy transaction, and what each is made with.
  const LINKS = ['AUTH-009', 'READ-008', 'READ-010', 'HOOK-023'];
  const LEGACY = ['HOOK-022', 'HOOK-025'];
  const only = ['--only', [...LINKS, ...LEGACY].join(',')];
  let own: MutatingProxy;
  beforeAll(async () => {
    own = await startOwnShapesProxy(t.url);
  });
  afterAll(async () => {
    await own?.close();
  });

  it(
    'an adapter of the earlier interface keeps working unchanged where the modelled requests are taken',
    async () => {
      const earlier = await runSuite(
        ['--base-url', t.url, '--adapter', adapter('earlier-interface'), ...only, '--require-capabilities', 'all'],
        ADAPTER_ENV,
        TS,
      );
      expectPassed(earlier);
      for (const id of [...LINKS, ...LEGACY]) expect(earlier.result(id).status, explain(earlier)).toBe('passed');
    },
    paced(120_000),
  );

  it(
    'without paymentLinks and legacyTransactions, a target refusing the modelled requests leaves their checks skipped, naming them; under --require-capabilities all, in error',
    async () => {
      const args = ['--base-url', own.url, '--adapter', adapter('earlier-interface'), ...only];
      const skipped = await runSuite(args, ADAPTER_ENV, TS);
      expectPassed(skipped);
      for (const id of LINKS) {
        expect(skipped.result(id).status, explain(skipped)).toBe('skipped');
        expect(skipped.result(id).reason).toMatch(/an adapter offering paymentLinks/);
      }
      for (const id of LEGACY) {
        expect(skipped.result(id).status, explain(skipped)).toBe('skipped');
        expect(skipped.result(id).reason).toMatch(/an adapter offering legacyTransactions/);
      }
      expect(skipped.report!.coverage.skippedFor).toEqual({
        paymentLinks: LINKS.length,
        legacyTransactions: LEGACY.length,
      });
      const all = await runSuite([...args, '--require-capabilities', 'all'], ADAPTER_ENV, TS);
      expect(all.code, explain(all)).toBe(2);
      for (const id of [...LINKS, ...LEGACY]) {
        expect(all.result(id).status).toBe('error');
        expect(all.result(id).reason).toMatch(/^--require-capabilities all: not judged: /);
      }
    },
    paced(120_000),
  );

  it(
    'with them, the same target has those checks judged through the adapter, and --require-capabilities all holds',
    async () => {
      const judged = await runSuite(
        ['--base-url', own.url, '--adapter', adapter('own-shapes'), ...only, '--require-capabilities', 'all'],
        ADAPTER_ENV,
        TS,
      );
      expectPassed(judged);
      for (const id of [...LINKS, ...LEGACY]) expect(judged.result(id).status, explain(judged)).toBe('passed');
      expect(judged.report!.adapter.capabilities).toEqual([...CAPABILITIES]);
    },
    paced(120_000),
  );

  it(
    'an adapter whose link payment has no effect, or whose legacy create throws: errors, never failures',
    async () => {
      const broken = await runSuite(
        ['--base-url', own.url, '--adapter', adapter('own-shapes'), ...only, '--settle-timeout', '2'],
        { ...ADAPTER_ENV, ADAPTER_BROKEN: 'links' },
        TS,
      );
      expect(broken.code, explain(broken)).toBe(2);
      for (const id of ['READ-008', 'HOOK-023']) {
        expect(broken.result(id).status, explain(broken)).toBe('error');
        expect(broken.result(id).reason).toMatch(
          /^attempt\(payment-link [0-9a-f-]{36}, card, succeeded\) did not take effect: readPaymentLink still says "created" after 2 s/,
        );
      }
      for (const id of LEGACY) {
        expect(broken.result(id).status, explain(broken)).toBe('error');
        expect(broken.result(id).reason).toMatch(
          /^createLegacyTransaction\(.*\) failed: the legacy transaction service is down$/,
        );
      }
      // The checks that do not pay a link are judged as before.
      for (const id of ['AUTH-009', 'READ-010']) expect(broken.result(id).status, explain(broken)).toBe('passed');
    },
    paced(120_000),
  );
});

/** One --config profile per organisation the checks may ask for, made through the sandbox. */
async function profilesOf(server: TestServer) {
  // A second organisation with the defaults, and one for each row of the configuration table.
  const settings = [{}, ...everySettings()];
  const profile = (org: Org, declared: object) => ({
    ...org.apiKeys.test,
    liveClientId: org.apiKeys.live.clientId,
    liveClientSecret: org.apiKeys.live.clientSecret,
    webhookSigningSecret: org.webhookSigningSecret,
    ...declared,
  });
  return Promise.all(settings.map(async (s) => profile(await server.organisation(s), s)));
}

describe('--config profiles on a server with its sandbox off', () => {
  it(
    'skip exactly the checks an adapter that only makes organisations skips',
    async () => {
      const db = path.join(scratch, 'no-sandbox.sqlite');
      const provisioning = await startTestServer({ db });
      const profiles = await profilesOf(provisioning);
      await provisioning.close();
      const closed = await startTestServer({ db, sandboxToken: false });
      try {
        const file = path.join(scratch, 'profiles.json');
        writeFileSync(file, JSON.stringify({ profiles }));
        const [config, organisations] = await Promise.all([
          runSuite(['--base-url', closed.url, '--config', file]),
          runSuite(['--base-url', t.url, '--adapter', adapter('organisations-only')], ADAPTER_ENV, TS),
        ]);
        for (const r of [config, organisations]) {
          const late = expectPassed(r);
          expect(byStatus(r, 'failed'), explain(r)).toEqual([]);
          expect(byStatus(r, 'error'), explain(r)).toEqual(late);
        }
        expect(config.report!.adapter).toEqual({ name: 'config', capabilities: [] });
        const ids = (r: CliRun, status: string) => byStatus(r, status).map((x) => x.id);
        expect(ids(config, 'skipped')).toEqual(ids(organisations, 'skipped'));
        expect(ids(config, 'passed')).toEqual(ids(organisations, 'passed'));
      } finally {
        await closed.close();
      }
    },
    paced(240_000),
  );
});

describe('payment-conformance adapter init', () => {
  const dir = path.join(repoRoot, 'test-results/adapter-init');
  const file = path.join(dir, 'payment-adapter.mjs');

  it(
    'writes a starter that checks against the suite’s types under a strict compiler, and will not overwrite it unasked',
    async () => {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      const init = await cli(['adapter', 'init', '--out', file]);
      expect(init.code, init.stderr).toBe(0);
      expect(existsSync(file)).toBe(true);
      expect(init.stdout).toContain(`wrote ${file}`);
      const again = await cli(['adapter', 'init', '--out', file]);
      expect(again.code).toBe(2);
      expect(again.stderr).toMatch(/exists; pass --force/);
      const tsc = path.join(repoRoot, 'node_modules/typescript/bin/tsc');
      const checked = await run(process.execPath, [
        tsc,
        '--noEmit',
        '--strict',
        '--allowJs',
        '--checkJs',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        '--types',
        'node',
        file,
      ]).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
      expect(checked.stdout).toBe('');
    },
    paced(60_000),
  );

  it(
    'loads in plain Node as written and, unfilled, ends every check that uses it in error, saying what is not implemented yet',
    async () => {
      // No loader: the starter is JavaScript that Node runs as it is.
      const run = await runSuite(['--base-url', t.url, '--adapter', file, '--only', 'TOKEN-001,AUTH-006']);
      expect(run.code, explain(run)).toBe(2);
      for (const id of ['TOKEN-001', 'AUTH-006']) {
        expect(run.result(id).status).toBe('error');
        expect(run.result(id).reason).toMatch(/createOrganisation is not implemented in this adapter yet/);
      }
    },
    paced(60_000),
  );
});

describe('--adapter manual', () => {
  it(
    'prints the hosted page and what to do, waits until the payment reads back so, and judges the check',
    async () => {
      const org = await t.organisation();
      const file = path.join(scratch, 'manual.json');
      writeFileSync(
        file,
        JSON.stringify({
          profiles: [{ ...org.apiKeys.test, webhookSigningSecret: org.webhookSigningSecret }],
        }),
      );
      // The person: opens each page printed and does what the line after it says.
      let page = '';
      const person = (line: string) => {
        const open = /^>> Action \d+: open (\S+)$/.exec(line);
        if (open) page = open[1]!;
        const what =
          /^ {3}and (pay by card, so that the payment succeeds|make a card payment that is declined)\.$/.exec(line);
        if (what)
          void fetch(`${page}/attempts`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: `rail=card&outcome=${what[1]!.startsWith('pay') ? 'succeeded' : 'declined'}`,
            redirect: 'manual',
          });
      };
      const manual = await runSuite(
        [
          '--base-url',
          t.url,
          '--adapter',
          'manual',
          '--config',
          file,
          '--only',
          'LIFE-002,LIFE-003,HOOK-010',
          '--manual-timeout',
          '20',
          '--reporter',
          'console,json',
        ],
        {},
        { onLine: person },
      );
      expect(manual.code, explain(manual)).toBe(0);
      expect(manual.result('LIFE-002').status, explain(manual)).toBe('passed');
      // The checks run side by side, so which of them asks first is not fixed: only the wording is.
      expect(manual.stdout).toMatch(
        />> Action \d+: open http:\/\/127\.0\.0\.1:\d+\/pay\/cs_\S+\n {3}and make a card payment that is declined\.\n/,
      );
      expect(manual.stdout).toContain('done: it reads failed');
      expect(manual.stdout).toContain('done: it reads completed');
      // Where the payer's browser went is not known: the redirect check is skipped, saying so.
      expect(manual.result('LIFE-003').status).toBe('skipped');
      expect(manual.result('LIFE-003').reason).toMatch(/does not say where the payer was sent/);
      expect(manual.result('HOOK-010').reason).toMatch(/^needs createOrganisation, advanceClock/);
      expect(manual.report!.adapter).toEqual({ name: 'manual', capabilities: ['attempt'] });
    },
    paced(120_000),
  );

  it(
    'gives up after --manual-timeout: the check ends in error, not failed',
    async () => {
      const org = await t.organisation();
      const file = path.join(scratch, 'manual-timeout.json');
      writeFileSync(file, JSON.stringify({ profiles: [{ ...org.apiKeys.test }] }));
      const waited = await runSuite([
        '--base-url',
        t.url,
        '--adapter',
        'manual',
        '--config',
        file,
        '--only',
        'LIFE-002',
        '--manual-timeout',
        '1',
      ]);
      expect(waited.code, explain(waited)).toBe(2);
      expect(waited.result('LIFE-002').status).toBe('error');
      expect(waited.result('LIFE-002').reason).toMatch(/did not read failed within 1 s/);
    },
    paced(60_000),
  );
});

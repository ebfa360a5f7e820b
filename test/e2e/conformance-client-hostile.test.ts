/**
 * `payment-conformance client` against drivers broken on purpose, as a CI team's driver
 * sometimes is (test/support/client-drivers/hostile.mjs): no check passes on traffic it did
 * not see, a driver that supports nothing can be refused, no secret reaches a report even
 * where a text is cut, the suite's memory stays bounded whatever the driver sends or writes,
 * and the driver gets nothing of the suite's but what it needs, nor outlives it.
 *
 * @tags long
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeClient } from '../../conformance/modes/client/command.ts';
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
const hostile = (mode: string) => ['--driver', `node test/support/client-drivers/hostile.mjs ${mode}`];
const PLAIN = ['CLIENT-001', 'CLIENT-002', 'CLIENT-003', 'CLIENT-004', 'CLIENT-005'];
const statusOf = (run: Awaited<ReturnType<typeof runClientMode>>) =>
  Object.fromEntries(run.report!.results.map((r) => [r.id, r.status]));

/** The peak resident memory the command's process reached, as test/support/max-rss.mjs prints it. */
const peakMb = (stderr: string) => Number(/max-rss-kb (\d+)/.exec(stderr)?.[1]) / 1024;
const MEMORY_BOUND_MB = 300;

describe.concurrent('no verdict without evidence', () => {
  it(
    'a driver that ends in the middle of the plain traffic fails every check of it, saying where',
    async () => {
      const run = await runClientMode([...target(), ...hostile('crash-over-1000')]);
      expect(run.code, explain(run)).toBe(1);
      for (const id of PLAIN) {
        expect(run.result(id).status, id).toBe('failed');
        expect(run.result(id).reason).toMatch(
          /The plain traffic did not run to its end: operation \d+ of the plain traffic \(createSession\) gave no outcome: the driver ended \(exit 3\)/,
        );
      }
    },
    paced(60_000),
  );

  for (const mode of ['exit', 'garbage']) {
    it(
      `a driver that ${mode === 'exit' ? 'ends at once' : 'writes what is not an outcome'} passes no check`,
      async () => {
        const run = await runClientMode([...target(), ...hostile(mode)]);
        expect(run.code, explain(run)).toBe(1);
        expect(run.report!.summary.passed, explain(run)).toBe(0);
      },
      paced(60_000),
    );
  }

  it(
    'a driver that offers nothing is skipped, and refused with --require-capabilities, all or by name',
    async () => {
      const plain = await runClientMode([...target(), ...hostile('unsupported')]);
      expect(plain.code, explain(plain)).toBe(0);
      expect(plain.report!.summary).toMatchObject({ passed: 0, failed: 0, error: 0 });
      expect(plain.report!.coverage.must.judged).toBe(0);
      expect(plain.report!.coverage.skippedFor.createSession).toBeGreaterThan(0);

      const all = await runClientMode([...target(), ...hostile('unsupported'), '--require-capabilities', 'all']);
      expect(all.code, explain(all)).toBe(2);
      expect(Object.values(statusOf(all)).every((s) => s === 'error')).toBe(true);
      expect(all.result('CLIENT-018').reason).toMatch(
        /^--require-capabilities all: not judged: the driver does not offer verifyWebhook$/,
      );

      const named = await runClientMode([
        ...target(),
        ...hostile('unsupported'),
        '--require-capabilities',
        'verifyWebhook',
      ]);
      expect(named.code, explain(named)).toBe(2);
      expect(named.result('CLIENT-018').status).toBe('error');
      // Only what was named is required: a check for want of another operation stays skipped.
      expect(named.result('CLIENT-001').status).toBe('skipped');

      const unknown = await cli(['client', ...target(), ...hostile('unsupported'), '--require-capabilities', 'x']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/--require-capabilities: expected all or a list of token, createSession/);
    },
    paced(90_000),
  );
});

describe.concurrent('bounds', () => {
  const measured = async (mode: string, extra: string[] = [], env: Record<string, string> = {}) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'client-bounds-'));
    const run = await cli(
      [
        'client',
        ...target(),
        ...hostile(mode),
        ...extra,
        '--reporter',
        'console,json,junit,html,har,ndjson',
        '--out',
        dir,
      ],
      env,
      { nodeArgs: ['--import', './test/support/max-rss.mjs'] },
    );
    return { ...run, dir, peak: peakMb(run.stderr) };
  };

  it(
    'six 50 MB request bodies: each refused past the limit, its start and size kept, memory bounded',
    async () => {
      const run = await measured('big-bodies', ['--only', 'CLIENT-00[1-5]']);
      expect(run.peak, run.stderr).toBeLessThan(MEMORY_BOUND_MB);
      const har = JSON.parse(readFileSync(path.join(run.dir, 'conformance.har'), 'utf8'));
      const big = har.log.entries.filter((e: any) => e.request.bodySize > 50 * 1024 * 1024);
      expect(big.length).toBe(6);
      for (const e of big) {
        expect(e.response.status).toBe(413);
        expect(e.request.postData.text.length).toBeLessThan(2 * 1024 * 1024);
      }
    },
    paced(60_000),
  );

  it(
    'a 50 MB outcome line: the driver is told so and ended, memory bounded',
    async () => {
      const run = await measured('big-line', ['--only', 'CLIENT-001']);
      expect(run.peak, run.stderr).toBeLessThan(MEMORY_BOUND_MB);
      expect(run.stdout).toMatch(/wrote a line of more than 1048576 characters/);
    },
    paced(60_000),
  );

  it(
    'more requests in one scenario than the suite keeps: not judged, memory bounded',
    async () => {
      // 1200 reads for each of the plain traffic's nine: 10,800, past the 10,000 kept.
      const run = await measured('many', ['--only', 'CLIENT-00[1-5]', '--driver-env', 'MANY'], { MANY: '1200' });
      expect(run.peak, run.stderr).toBeLessThan(MEMORY_BOUND_MB);
      const report = JSON.parse(readFileSync(path.join(run.dir, 'conformance.json'), 'utf8'));
      for (const r of report.results) {
        expect(r.status, r.id).toBe('error');
        expect(r.reason).toMatch(/more than the 10000 the suite keeps/);
      }
    },
    paced(120_000),
  );

  it(
    'a module driver in a busy loop is stopped at its operation’s deadline, and the run goes on',
    async () => {
      const { report } = await executeClient(
        {
          baseUrl: t.url,
          sandboxToken: SANDBOX_TOKEN,
          driverModule: 'test/support/client-drivers/busy.mjs',
          only: 'CLIENT-018,CLIENT-019',
          reporter: '',
          operationTimeoutMs: 2000,
        },
        { write: () => undefined },
      );
      for (const r of report.results) {
        expect(r.status, r.id).toBe('failed');
        expect(r.reason).toMatch(/the client gave no outcome \(the driver gave no outcome within 2 s\)/);
      }
    },
    paced(60_000),
  );
});

describe('secrets', () => {
  it(
    'none reaches a report, even in the texts a report cuts: no run of them past their first four characters',
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'client-secrets-'));
      const side = path.join(dir, 'secrets.txt');
      const run = await cli(
        [
          'client',
          ...target(),
          ...hostile('secrets'),
          '--driver-env',
          'SIDE_FILE',
          '--reporter',
          'console,json,junit,html,har,ndjson',
          '--out',
          dir,
        ],
        { SIDE_FILE: side },
      );
      expect(run.code).toBe(1);
      const secrets = [
        ...new Set(
          readFileSync(side, 'utf8')
            .split('\n')
            .filter((s) => s.length >= 12),
        ),
      ];
      // Tokens (over 300 characters), client secrets and webhook secrets.
      expect(secrets.some((s) => s.length > 300)).toBe(true);
      const reports = [
        ['console', run.stdout + run.stderr],
        ...readdirSync(dir)
          .filter((f) => f.startsWith('conformance.'))
          .map((f) => [f, readFileSync(path.join(dir, f), 'utf8')]),
      ];
      expect(reports.map(([name]) => name).sort()).toEqual([
        'conformance.har',
        'conformance.html',
        'conformance.json',
        'conformance.junit.xml',
        'conformance.ndjson',
        'console',
      ]);
      const leaks = reports.flatMap(([name, text]) =>
        secrets.flatMap((secret) => {
          const windows = [];
          for (let i = 4; i + 8 <= secret.length; i++) if (text!.includes(secret.slice(i, i + 8))) windows.push(i);
          const start = text!.includes(secret.slice(0, 5));
          return windows.length > 0 || start ? [`${name}: ${secret.slice(0, 4)}… (${windows.length} runs)`] : [];
        }),
      );
      expect(leaks).toEqual([]);
    },
    paced(60_000),
  );
});

describe.concurrent('isolation', () => {
  it(
    'requests to the service’s port outside PAYMENT_BASE_URL change no verdict',
    async () => {
      const run = await runClientMode([...target(), ...hostile('strays')]);
      expect(run.code, explain(run)).toBe(0);
      expect(run.report!.summary).toMatchObject({ failed: 0, error: 0 });
    },
    paced(60_000),
  );

  it(
    'the driver gets the protocol’s variables and the allowed ones, not the rest of the suite’s environment',
    async () => {
      const side = path.join(mkdtempSync(path.join(tmpdir(), 'client-env-')), 'env.txt');
      await runClientMode([...target(), ...hostile('env'), '--only', 'CLIENT-018', '--driver-env', 'SIDE_FILE'], {
        SIDE_FILE: side,
        CI_JOB_SECRET: 'do-not-pass',
        SANDBOX_TOKEN,
      });
      const names = readFileSync(side, 'utf8').split('\n');
      expect(names).toEqual(expect.arrayContaining(['PAYMENT_BASE_URL', 'PAYMENT_CLIENT_SECRET', 'PATH', 'SIDE_FILE']));
      expect(names).not.toContain('CI_JOB_SECRET');
      expect(names).not.toContain('SANDBOX_TOKEN');
    },
    paced(60_000),
  );

  it(
    'a process the driver starts in a session of its own ends with it',
    async () => {
      const side = path.join(mkdtempSync(path.join(tmpdir(), 'client-daemon-')), 'pids.txt');
      await runClientMode([...target(), ...hostile('daemon'), '--only', 'CLIENT-018', '--driver-env', 'SIDE_FILE'], {
        SIDE_FILE: side,
      });
      const pids = readFileSync(side, 'utf8').split('\n').filter(Boolean).map(Number);
      expect(pids.length).toBeGreaterThan(0);
      // Ended: gone, or a zombie its new parent has not reaped yet.
      const alive = (pid: number) =>
        existsSync(`/proc/${pid}/stat`) && !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      for (const pid of pids) expect(alive(pid), `process ${pid}`).toBe(false);
    },
    paced(60_000),
  );
});

describe('levels', () => {
  it('reads "Clients reuse a token until it expires" as a must: CLIENT-003 fails a run', async () => {
    const listed = await cli(['list', '--json']);
    const checks = JSON.parse(listed.stdout).checks as Array<{ id: string; level: string }>;
    expect(checks.find((c) => c.id === 'CLIENT-003')?.level).toBe('must');
  });
});

/**
 * What a person does right after a failure, in each mode, through the CLI as a user runs
 * it against the in-process reference server: the console leads each failure with its
 * reason and what was received, the reproduction line runs as printed (in a shell, with
 * only the shell variables a user has) and reproduces the failure, or says it no longer
 * does once the defect is gone; a transcript several checks judge is printed once; a hint
 * appears only where the evidence supports it; the banner says how many must checks were
 * judged.
 *
 * @tags long
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import { createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, explain, runSuite, writeProfiles } from '../support/conformance-cli.ts';
import { repoRoot } from '../support/description.ts';
import { editJson, startMutatingProxy } from '../support/mutating-proxy.ts';
import { paced } from '../support/pace.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
const scratch = mkdtempSync(path.join(tmpdir(), 'conformance-repro-'));

beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
});
afterAll(async () => {
  await t?.close();
});

/** A line of the console, run in a shell as a user pastes it: only the variables given, from the repository. */
function shell(line: string, variables: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NO_COLOR: '1', ...variables };
    const child = spawn('bash', ['-c', line], { cwd: repoRoot, env });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

/** The console's block of one failure: from its id to the next blank line. */
function block(stdout: string, id: string): string {
  const at = stdout.indexOf(`\n${id} `, stdout.indexOf('\nFailures\n'));
  expect(at, stdout).toBeGreaterThan(0);
  const end = stdout.indexOf('\n\n', at + 1);
  return stdout.slice(at + 1, end < 0 ? undefined : end);
}

const reproduceLine = (text: string) => /^ {2}reproduce: (.+)$/m.exec(text)?.[1];

describe('run: a failure reads from its reason, and its reproduction runs as printed', () => {
  it(
    'leads with the reason and the body received; repro reproduces it, then says when it no longer does',
    async () => {
      let broken = true;
      const proxy = await startMutatingProxy(t.url, {
        response: (m, r) =>
          broken && m.url === '/api/token' && r.status === 200
            ? editJson(r, ({ tokenType, ...rest }) => ({ ...rest, token_type: tokenType }))
            : r,
      });
      try {
        const run = await runSuite([
          '--base-url',
          proxy.url,
          '--sandbox-token',
          SANDBOX_TOKEN,
          '--only',
          'TOKEN-001',
          '--reporter',
          'console,json,ndjson',
        ]);
        expect(run.code, explain(run)).toBe(1);
        const failure = block(run.stdout, 'TOKEN-001');
        const lines = failure.split('\n');
        // The title, then the reason, then what was received, its body included.
        expect(lines[1]).toBe('  tokenType must be "Bearer", received undefined.');
        expect(lines[2]).toBe('  received: HTTP/1.1 200, body (secrets replaced):');
        expect(lines[3]).toContain('"token_type":"Bearer"');
        expect(lines[3]).toContain('$ACCESS_TOKEN');
        expect(failure).not.toMatch(/Endpoints: POST \/api\/token/);
        expect(lines.at(-1)).toMatch(/^ {2}clauses: token\.ok, .* \(their words: --verbose, or the HTML report\)$/);
        const again = reproduceLine(failure);
        expect(again).toBe(
          `npx --no -- payment-conformance repro ${path.join(run.dir, 'conformance.json')} TOKEN-001 --base-url ${proxy.url} --sandbox-token "$SANDBOX_TOKEN"`,
        );
        expect(run.stdout).not.toContain(SANDBOX_TOKEN);

        const out = path.join(scratch, 'repro-run');
        const reproduced = await shell(`${again} --out ${out}`, { SANDBOX_TOKEN });
        expect(reproduced.code, reproduced.out).toBe(1);
        expect(reproduced.out).toMatch(/^ {2}then: failed: tokenType must be "Bearer", received undefined\.$/m);
        expect(reproduced.out).toMatch(/^ {2}now: {2}failed: tokenType must be "Bearer", received undefined\.$/m);
        expect(reproduced.out).toMatch(/recorded then \(the report’s traffic file\)/);
        expect(reproduced.out).toMatch(
          /then POST \/api\/token → 200 {2}\{"accessToken":"\$ACCESS_TOKEN",.*"token_type"/,
        );
        expect(reproduced.out).toMatch(/now {2}POST \/api\/token → 200 .* {2}same$/m);
        expect(reproduced.out).toContain('REPRODUCED: TOKEN-001 fails again');
        expect(reproduced.out).not.toContain(SANDBOX_TOKEN);

        // With --verbose, the clauses come with their words.
        const verbose = await runSuite([
          '--base-url',
          proxy.url,
          '--sandbox-token',
          SANDBOX_TOKEN,
          '--only',
          'TOKEN-001',
          '--verbose',
          '--reporter',
          'console',
        ]);
        expect(block(verbose.stdout, 'TOKEN-001')).toMatch(
          /^ {2}token\.ok \(Endpoints: POST \/api\/token\): Response 200/m,
        );

        broken = false;
        const fixed = await shell(`${again} --out ${out}`, { SANDBOX_TOKEN });
        expect(fixed.code, fixed.out).toBe(0);
        expect(fixed.out).toMatch(/^ {2}now: {2}passed$/m);
        expect(fixed.out).toMatch(/now {2}POST \/api\/token → 200 .*"tokenType".* {2}differs: body’s fields$/m);
        expect(fixed.out).toContain('NOT REPRODUCED: TOKEN-001 passes now');
      } finally {
        await proxy.close();
      }
    },
    paced(120_000),
  );

  it('repro refuses what it cannot reproduce, with a usage error', async () => {
    const run = await runSuite(['--base-url', t.url, '--sandbox-token', SANDBOX_TOKEN, '--only', 'TOKEN-001']);
    const report = path.join(run.dir, 'conformance.json');
    const missing = await cli(['repro', report, 'NOPE-001', '--base-url', t.url]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/has no check NOPE-001 \(it has TOKEN-001\)/);
    const noTarget = await cli(['repro', report, 'TOKEN-001']);
    expect(noTarget.code).toBe(2);
    expect(noTarget.stderr).toMatch(/the report is of run, whose target needs --base-url/);
  });
});

describe('the banner', () => {
  it(
    'says PASSED alone only when every must check was judged, and why the others were not',
    async () => {
      const file = writeProfiles(path.join(scratch, 'profiles.json'), [await t.organisation(), await t.organisation()]);
      const run = await runSuite(['--base-url', t.url, '--config', file, '--reporter', 'console,json']);
      expect(run.code, explain(run)).toBe(0);
      const { judged, total } = run.report!.coverage.must;
      expect(judged).toBeLessThan(total);
      const banner = run.stdout.split('\n').find((line) => line.startsWith('PASSED'));
      expect(banner).toMatch(
        new RegExp(
          `^PASSED \\(${judged} of ${total} must checks judged\\): no must check failed; not judged: \\d+ need createOrganisation, \\d+ need attempt`,
        ),
      );
      const full = await runSuite([
        '--base-url',
        t.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--only',
        'TOKEN-*',
        '--reporter',
        'console',
      ]);
      expect(full.stdout).toContain('\nPASSED: no must check failed\n');
    },
    paced(180_000),
  );
});

describe('receiver: the hint follows the evidence', () => {
  it(
    'a refused header form is named as such (the plain header was accepted), and its repro reproduces',
    async () => {
      const secret = 'whsec_repro_strict_parser_0123456789ab';
      // A receiver whose parser takes only "t=...,v1=..." in that order.
      const receiver = http.createServer(async (req, res) => {
        let raw = '';
        for await (const chunk of req) raw += chunk;
        const parts = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(req.headers['service-signature'] ?? ''));
        if (!parts) return res.writeHead(400).end('{"error":"malformed signature header"}');
        const expected = createHmac('sha256', secret).update(`${parts[1]}.${raw}`).digest('hex');
        res.writeHead(expected === parts[2] ? 200 : 401).end();
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
      try {
        const dir = mkdtempSync(path.join(tmpdir(), 'receiver-repro-'));
        const run = await cli([
          'receiver',
          '--url',
          url,
          '--secret',
          secret,
          '--only',
          'RCV-001,RCV-007,RCV-008',
          '--reporter',
          'console,json,ndjson',
          '--out',
          dir,
        ]);
        expect(run.code, run.stdout + run.stderr).toBe(1);
        const failure = block(run.stdout, 'RCV-007');
        expect(failure).toContain('The same body with a plain header (t=...,v1=...) was accepted (200 in');
        expect(failure).not.toMatch(/made-up payment/);
        expect(failure).toContain('{"error":"malformed signature header"}');
        expect(run.stdout).not.toContain(secret);
        const again = reproduceLine(failure)!;
        expect(again).toContain(`--url ${url} --secret "$WEBHOOK_SECRET"`);
        const reproduced = await shell(`${again} --out ${path.join(scratch, 'repro-receiver')}`, {
          WEBHOOK_SECRET: secret,
        });
        expect(reproduced.code, reproduced.out).toBe(1);
        expect(reproduced.out).toMatch(/then POST \/hooks → 400 {2}\{"error":"malformed signature header"\}/);
        expect(reproduced.out).toMatch(/now {2}POST \/hooks → 400 .* {2}same$/m);
        expect(reproduced.out).toContain('REPRODUCED: RCV-007 fails again');
      } finally {
        receiver.close();
      }
    },
    paced(60_000),
  );
});

describe('client: a scenario named, its transcript printed once, its repro replaying it', () => {
  it(
    'CLIENT-003 and CLIENT-004 share one transcript; the scenario is named; repro plays it again',
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'client-repro-'));
      const driver = `node ${path.join('test', 'support', 'client-drivers', 'naive.mjs')}`;
      const run = await cli([
        'client',
        '--base-url',
        t.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--driver',
        driver,
        '--only',
        'CLIENT-003,CLIENT-004',
        '--seed',
        '7',
        '--reporter',
        'console,json,ndjson',
        '--out',
        dir,
      ]);
      expect(run.code, run.stdout + run.stderr).toBe(1);
      const first = block(run.stdout, 'CLIENT-003');
      const second = block(run.stdout, 'CLIENT-004');
      expect(first).toMatch(/^ {2}scenario: traffic \(shared by the checks that judge it\), seed 7: /m);
      expect(first).toMatch(/^ {4}1\. \(\+\d+ ms\) curl /m);
      expect(second).toContain('  sent: the requests shown under CLIENT-003');
      expect(second).not.toMatch(/curl /);
      const again = reproduceLine(first)!;
      expect(again).toContain(`--driver '${driver}'`);
      const reproduced = await shell(`${again} --out ${path.join(scratch, 'repro-client')}`, { SANDBOX_TOKEN });
      expect(reproduced.code, reproduced.out).toBe(1);
      expect(reproduced.out).toContain('client again (seed 7)');
      expect(reproduced.out).toMatch(/now {2}POST \/\S+\/api\/token → 200 .* {2}same$/m);
      expect(reproduced.out).not.toMatch(/ {2}differs: /);
      expect(reproduced.out).toContain('REPRODUCED: CLIENT-003 fails again');
    },
    paced(120_000),
  );
});

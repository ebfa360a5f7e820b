/**
 * The conformance suite against the in-process reference server, through its CLI: the
 * whole suite passes with no skips; `list`; the JSON, JUnit and HTML reports; exit
 * statuses for usage and setup errors; and a target without a sandbox API (checks that
 * need it are skipped with the reason, the rest run from --config profiles). How it reports
 * what goes wrong is conformance-failures.test.ts.
 *
 * @tags long
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, explain, expectPassed, runSuite, type CliRun, writeProfiles } from '../support/conformance-cli.ts';
import { freePort } from '../support/mutating-proxy.ts';
import type { Check } from '../../conformance/runner/check-definition.ts';
import { CLAUSE_REGISTER_VERSION } from '../../conformance/core/clauses.ts';
import { Registry } from '../../conformance/runner/registry.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';
import { paced } from '../support/pace.ts';

let t: TestServer;
let full: CliRun;
/** What `list` prints of the run's checks, and of every check (the receiver's and the client's included). */
let listed: { id: string; level: string; rule: string; title: string }[];
let listedAll: typeof listed;

beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
  const list = await cli(['list']);
  expect(list.code).toBe(0);
  listedAll = list.stdout
    .trim()
    .split('\n')
    .map((line) => {
      const [id, level, ...rest] = line.split(/\s{2,}/);
      return { id: id!, level: level!, rule: rest[0]!, title: rest.slice(1).join('  ') };
    });
  listed = listedAll.filter((c) => !/^(RCV|CLIENT|TRAFFIC)-/.test(c.id));
  full = await runSuite([
    '--base-url',
    t.url,
    '--sandbox-token',
    SANDBOX_TOKEN,
    '--reporter',
    'console,json,junit,html',
    // The whole suite: exploration too, for a few seconds (its own tests give it longer).
    '--explore',
    '5',
  ]);
}, paced(120_000));
afterAll(async () => {
  await t?.close();
});

describe('the whole suite against the reference server', () => {
  it('passes every check, with no skips, and exits 0', () => {
    expectPassed(full);
    expect(full.report!.summary.failed, explain(full)).toBe(0);
    expect(full.report!.summary.skipped, explain(full)).toBe(0);
    expect(full.report!.summary.passed).toBe(listed.length);
  });

  it('reports every listed check once, in the JSON format the README documents', () => {
    const report = full.report!;
    expect(Object.keys(report).sort()).toEqual(
      [
        'adapter',
        'coverage',
        'descriptionCoverage',
        'durationMs',
        'inputCoverage',
        'invocation',
        'results',
        'startedAt',
        'summary',
        'target',
        'tool',
      ].sort(),
    );
    expect(report.tool).toEqual({
      name: 'payment-conformance',
      version: JSON.parse(readFileSync(path.resolve('conformance/package.json'), 'utf8')).version,
      clauseRegisterVersion: CLAUSE_REGISTER_VERSION,
    });
    expect(report.adapter).toEqual({
      name: 'sandbox',
      capabilities: expect.arrayContaining(['attempt', 'advanceClock']),
    });
    expect(report.summary).toEqual({ passed: listed.length, failed: 0, differs: 0, skipped: 0, error: 0 });
    const must = listed.filter((c) => c.level === 'must').length;
    expect(report.coverage).toEqual({
      judged: listed.length,
      total: listed.length,
      skippedFor: {},
      skippedOther: 0,
      must: { judged: must, total: must },
    });
    // A whole run against the reference server asks every question the document allows.
    expect(report.inputCoverage).toMatchObject({ percent: 100, cells: { exercised: 144, total: 144 } });
    expect(report.inputCoverage!.exercised).toBe(report.inputCoverage!.total);
    expect(report.target).toBe(t.url);
    expect(Number.isNaN(Date.parse(report.startedAt))).toBe(false);
    expect(report.results.map((r) => r.id)).toEqual(listed.map((c) => c.id));
    for (const r of report.results) {
      expect(
        Object.keys(r)
          .filter((k) => k !== 'evidence')
          .sort(),
      ).toEqual(
        ['clauses', 'id', 'level', 'reason', 'requires', 'rule', 'status', 'title', 'assumption']
          // An assumption check names the rule of ours it holds the target to.
          .filter((k) => k !== 'assumption' || r.level === 'assumption')
          .sort(),
      );
      expect(r.clauses.length, r.id).toBeGreaterThan(0);
      expect(['must', 'should', 'assumption']).toContain(r.level);
    }
  });

  it('covers every group: token, bearer, validation, configuration, organisations, inputs, idempotency, reads, webhooks, responses, exploration', () => {
    const prefixes = new Set(listed.map((c) => c.id.split('-')[0]));
    expect([...prefixes].sort()).toEqual([
      'AUTH',
      'CFG',
      'EXPL',
      'HOOK',
      'IDEM',
      'INP',
      'LIFE',
      'ORG',
      'READ',
      'RESP',
      'TOKEN',
      'VAL',
    ]);
  });

  it('prints live progress and a summary grouped by document section', () => {
    expect(full.stdout).toMatch(/\[\s*1\/\d+\] ✓ /);
    expect(full.stdout).toContain('By section of the service document');
    expect(full.stdout).toMatch(/\d+ passed\s+0 failed\s+0 skipped\s+Events/);
    expect(full.stdout).toContain('PASSED: no must check failed');
    expect(full.stdout).toContain(`Coverage: ${listed.length} of ${listed.length} checks judged; none skipped`);
    expect(full.stdout).not.toContain('\u001b['); // NO_COLOR: no escape sequence
    const must = listed.filter((c) => c.level === 'must').length;
    expect(full.stdout.trim().split('\n').at(-1)).toBe(`${must} of ${must} must checks judged`);
  });

  it('writes a JUnit XML report with one testcase per check and no failure', () => {
    const xml = readFileSync(path.join(full.dir, 'conformance.junit.xml'), 'utf8');
    expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true);
    expect(xml.match(/<testcase /g)).toHaveLength(listed.length);
    // Each testcase names the clauses it enforces; the coverage suite the register's version.
    expect(xml.match(/<property name="clauses" value="[a-z0-9.,-]+"\/>/g)).toHaveLength(listed.length);
    expect(xml).toContain('<property name="clause-register.version"');
    expect(xml).toMatch(/<testsuites [^>]*failures="0"/);
    expect(xml).not.toContain('<failure');
  });

  it('writes one self-contained HTML report: results by section with anchors, no external resources', () => {
    const html = readFileSync(path.join(full.dir, 'conformance.html'), 'utf8');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('>Events</a>');
    for (const c of listed) expect(html).toContain(`<tr id="${c.id}"`);
    // Each check shows its clause ids, the clause's words on hover.
    expect(html).toMatch(/<abbr class="clause" title="[^"]+">idem\.conflict<\/abbr>/);
    // The tool's version and the clause register's, as in the JSON and JUnit reports.
    expect(html).toContain(
      `payment-conformance ${full.report!.tool.version}, clause register ${CLAUSE_REGISTER_VERSION}`,
    );
    expect(html).not.toMatch(/<(link|img|iframe|object|embed)\b|\bsrc=|@import|url\(/i);
    // Every link is an anchor inside the report.
    for (const [, href] of html.matchAll(/\bhref="([^"]*)"/g)) expect(href).toMatch(/^#/);
  });
});

describe('payment-conformance list', () => {
  it('prints id, level, rule reference and title of every check, ids unique', () => {
    expect(listed.length).toBeGreaterThan(90);
    expect(new Set(listed.map((c) => c.id)).size).toBe(listed.length);
    for (const c of listed) {
      expect(c.id).toMatch(/^[A-Z]+-\d{3}$/);
      expect(['must', 'should', 'assumption']).toContain(c.level);
      expect(c.rule.length).toBeGreaterThan(3);
      expect(c.title.length).toBeGreaterThan(10);
    }
  });

  it('prints the same checks as JSON with --json, with their clauses and the versions', async () => {
    const json = await cli(['list', '--json']);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as {
      tool: { name: string; version: string; clauseRegisterVersion: string };
      checks: { id: string; command: string; level: string; clauses: string[]; section: string; requires: string[] }[];
    };
    expect(parsed.tool.clauseRegisterVersion).toBe(CLAUSE_REGISTER_VERSION);
    expect(parsed.checks.map((c) => [c.id, c.level])).toEqual(listedAll.map((c) => [c.id, c.level]));
    for (const c of parsed.checks) expect(c.clauses.join(', '), c.id).toBe(listedAll.find((l) => l.id === c.id)!.rule);
    // The receiver's, the client's and the traffic's checks are listed too, each saying which command runs it.
    const commands = new Map(parsed.checks.map((c) => [c.id, c.command]));
    expect(listedAll.filter((c) => c.id.startsWith('RCV-')).length).toBeGreaterThan(10);
    expect(listedAll.filter((c) => c.id.startsWith('CLIENT-')).length).toBeGreaterThan(10);
    expect(listedAll.filter((c) => c.id.startsWith('TRAFFIC-')).length).toBeGreaterThan(10);
    const commandOf = (id: string) =>
      id.startsWith('RCV-')
        ? 'receiver'
        : id.startsWith('CLIENT-')
          ? 'client'
          : id.startsWith('TRAFFIC-')
            ? 'traffic'
            : 'run';
    for (const [id, command] of commands) expect([id, command]).toEqual([id, commandOf(id)]);
    const version = await cli(['--version']);
    expect(version.stdout.trim()).toBe(parsed.tool.version);
    expect(version.code).toBe(0);
  });
});

describe('the registry', () => {
  const check = (id: string): Check<unknown> => ({
    id,
    clauses: ['limit.total'],
    section: 'Limits',
    title: `check ${id}`,
    run: async () => undefined,
  });
  it('refuses a duplicate id and an id not of the form ABC-123', () => {
    expect(() => new Registry().register(check('ABC-001'), check('ABC-001'))).toThrow(/registered twice/);
    expect(() => new Registry().register(check('abc-1'))).toThrow(/not of the form/);
  });
  it('selects by comma-separated globs, in registration order', () => {
    const registry = new Registry().register(check('ABC-001'), check('ABC-002'), check('XYZ-010'), check('XYZ-011'));
    expect(registry.select('XYZ-01?,ABC-002').map((c) => c.id)).toEqual(['ABC-002', 'XYZ-010', 'XYZ-011']);
    expect(registry.select('abc-*').map((c) => c.id)).toEqual(['ABC-001', 'ABC-002']);
    expect(registry.select('XYZ-01[0]').map((c) => c.id)).toEqual(['XYZ-010']);
    expect(registry.select(undefined)).toHaveLength(4);
    // Exclusions, mixed with inclusions or alone.
    expect(registry.select('XYZ-*,!XYZ-011').map((c) => c.id)).toEqual(['XYZ-010']);
    expect(registry.select('!ABC-*').map((c) => c.id)).toEqual(['XYZ-010', 'XYZ-011']);
  });
});

describe('selection, exit statuses and targets without a sandbox', () => {
  it('--only selects checks by glob', async () => {
    const run = await runSuite(['--base-url', t.url, '--sandbox-token', SANDBOX_TOKEN, '--only', 'TOKEN-00?,IDEM-002']);
    expect(run.code, explain(run)).toBe(0);
    expect(run.report!.results.map((r) => r.id)).toEqual([
      'TOKEN-001',
      'TOKEN-002',
      'TOKEN-003',
      'TOKEN-004',
      'TOKEN-005',
      'IDEM-002',
    ]);
  });

  it('exits 2 for an unreachable target, bad flags, an unknown reporter and a selection matching nothing', async () => {
    const closed = await cli(['run', '--base-url', 'http://127.0.0.1:9']);
    expect(closed.code).toBe(2);
    expect(closed.stderr).toMatch(/unreachable/);
    expect((await cli(['run'])).code).toBe(2); // --base-url is required
    expect((await cli(['run', '--base-url', t.url, '--bogus'])).code).toBe(2);
    expect((await cli(['run', '--base-url', t.url, '--reporter', 'yaml'])).code).toBe(2);
    expect((await cli(['run', '--base-url', t.url, '--only', 'NOPE-*'])).code).toBe(2);
    expect((await cli(['run', '--base-url', t.url, '--concurrency', 'many'])).code).toBe(2);
    const badToken = await cli(['run', '--base-url', t.url, '--sandbox-token', 'wrong']);
    expect(badToken.code).toBe(2);
    expect(badToken.stderr).toMatch(/sandbox/i);
  });

  it('a target that cannot reach the receiver: every webhook check is a setup error quoting the target’s own record', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const run = await runSuite([
      '--base-url',
      t.url,
      '--sandbox-token',
      SANDBOX_TOKEN,
      '--receiver-public-url',
      nobody,
      '--settle-timeout',
      '3',
      '--only',
      'TOKEN-001,HOOK-001,HOOK-002',
    ]);
    expect(run.code, explain(run)).toBe(2);
    expect(run.result('TOKEN-001').status).toBe('passed');
    for (const id of ['HOOK-001', 'HOOK-002']) {
      expect(run.result(id).status, id).toBe('error');
      expect(run.result(id).reason).toMatch(
        /^no webhook reached the suite's receiver \(http:\/\/127\.0\.0\.1:\d+\) within 3 s of a payment completing; the target's own record: attempt 1 to http:\/\/127\.0\.0\.1:\d+\/hooks\/PREFLIGHT\/delivery-\d+ at \S+: no answer \(.+\)/,
      );
    }
  });

  it('without a way to organisations (no sandbox token, adapter or profiles) is a setup error, exit 2', async () => {
    const run = await cli(['run', '--base-url', t.url, '--only', 'TOKEN-001,AUTH-006,READ-003']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/Nothing to check with: give --sandbox-token, an --adapter .* or --config profiles/);
  });

  it('with --config profiles, runs what the profiles allow and skips what needs the sandbox', async () => {
    const file = writeProfiles(path.join(full.dir, 'profiles.json'), [await t.organisation(), await t.organisation()]);
    const run = await runSuite([
      '--base-url',
      t.url,
      '--config',
      file,
      '--only',
      'TOKEN-*,AUTH-*,VAL-00?,IDEM-001,IDEM-002,IDEM-003,READ-*,CFG-001,HOOK-001,RESP-*',
    ]);
    expect(run.code, explain(run)).toBe(0);
    const status = (id: string) => run.result(id).status;
    for (const id of ['TOKEN-001', 'TOKEN-005', 'AUTH-003', 'VAL-003', 'IDEM-001', 'READ-003', 'RESP-003'])
      expect(status(id), explain(run)).toBe('passed');
    for (const [id, needs] of [
      ['AUTH-006', /^needs createOrganisation, advanceClock \(/],
      ['AUTH-008', /^needs createOrganisation, createApiKey, deleteApiKey \(/],
      ['READ-006', /^needs createOrganisation, advanceClock \(/],
      [
        'CFG-001',
        /^needs an organisation with \{"cardEnabled":false\}.*: createOrganisation, or such a --config profile/,
      ],
      ['HOOK-001', /^needs attempt \(the adapter does not offer it\)$/],
    ] as const) {
      expect(status(id)).toBe('skipped');
      expect(run.result(id).reason).toMatch(needs);
    }
  });
});

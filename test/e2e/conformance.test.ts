/**
 * The conformance suite against the in-process reference server, through its CLI: the
 * whole suite passes with no skips; `list`; the JSON, JUnit and HTML reports; exit
 * statuses for usage and setup errors; and a target without a sandbox API (checks that
 * need it are skipped with the reason, the rest run from --config profiles).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, explain, runSuite, type CliRun } from '../support/conformance-cli.ts';
import { runVariant } from '../support/conformance-variants.ts';
import { Registry } from '../../conformance/registry.ts';
import type { Check } from '../../conformance/types.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
let full: CliRun;
let listed: { id: string; level: string; rule: string; title: string }[];

beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
  const list = await cli(['list']);
  expect(list.code).toBe(0);
  listed = list.stdout
    .trim()
    .split('\n')
    .map((line) => {
      const [id, level, ...rest] = line.split(/\s{2,}/);
      return { id: id!, level: level!, rule: rest[0]!, title: rest.slice(1).join('  ') };
    });
  full = await runSuite(['--base-url', t.url, '--sandbox-token', SANDBOX_TOKEN, '--reporter', 'console,json,junit,html']);
}, 120_000);
afterAll(async () => {
  await t?.close();
});

describe('the whole suite against the reference server', () => {
  it('passes every check, with no skips, and exits 0', () => {
    expect(full.code, explain(full)).toBe(0);
    expect(full.report!.summary.failed, explain(full)).toBe(0);
    expect(full.report!.summary.skipped, explain(full)).toBe(0);
    expect(full.report!.summary.passed).toBe(listed.length);
  });

  it('reports every listed check once, in the JSON format of the design', () => {
    const report = full.report!;
    expect(Object.keys(report).sort()).toEqual(['durationMs', 'results', 'startedAt', 'summary', 'target'].sort());
    expect(report.target).toBe(t.url);
    expect(Number.isNaN(Date.parse(report.startedAt))).toBe(false);
    expect(report.results.map((r) => r.id)).toEqual(listed.map((c) => c.id));
    for (const r of report.results) {
      expect(Object.keys(r).filter((k) => k !== 'evidence').sort()).toEqual(['id', 'level', 'reason', 'rule', 'status', 'title']);
      expect(['must', 'should', 'assumption']).toContain(r.level);
    }
  });

  it('covers every group: token, bearer, validation, configuration, idempotency, reads, webhooks, responses', () => {
    const prefixes = new Set(listed.map((c) => c.id.split('-')[0]));
    expect([...prefixes].sort()).toEqual(['AUTH', 'CFG', 'HOOK', 'IDEM', 'LIFE', 'READ', 'RESP', 'TOKEN', 'VAL']);
  });

  it('prints live progress and a summary grouped by document section', () => {
    expect(full.stdout).toMatch(/\[\s*1\/\d+\] ✓ /);
    expect(full.stdout).toContain('By section of the service document');
    expect(full.stdout).toMatch(/\d+ passed\s+0 failed\s+0 skipped\s+Events/);
    expect(full.stdout).toContain('PASSED: every must check passed');
    expect(full.stdout).not.toMatch(/\x1b\[/); // NO_COLOR
  });

  it('writes a JUnit XML report with one testcase per check and no failure', () => {
    const xml = readFileSync(path.join(full.dir, 'conformance.junit.xml'), 'utf8');
    expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true);
    expect(xml.match(/<testcase /g)).toHaveLength(listed.length);
    expect(xml).toMatch(/<testsuites [^>]*failures="0"/);
    expect(xml).not.toContain('<failure');
  });

  it('writes one self-contained HTML report: results by section, no external resources', () => {
    const html = readFileSync(path.join(full.dir, 'conformance.html'), 'utf8');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<h2>Events');
    for (const c of listed) expect(html).toContain(`id="${c.id}"`);
    expect(html).not.toMatch(/<(script|link|img|iframe)\b|\bsrc=|\bhref=|@import|url\(/i);
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
});

describe('the registry', () => {
  const check = (id: string): Check => ({ id, level: 'must', rule: 'Limits', section: 'Limits', title: `check ${id}`, run: async () => undefined });
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
  });
});

describe('selection, exit statuses and targets without a sandbox', () => {
  it('--only selects checks by glob', async () => {
    const run = await runSuite(['--base-url', t.url, '--sandbox-token', SANDBOX_TOKEN, '--only', 'TOKEN-00?,IDEM-002']);
    expect(run.code, explain(run)).toBe(0);
    expect(run.report!.results.map((r) => r.id)).toEqual(['TOKEN-001', 'TOKEN-002', 'TOKEN-003', 'TOKEN-004', 'TOKEN-005', 'IDEM-002']);
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

  it('without a sandbox token or profiles, skips every check with the reason and exits 0', async () => {
    const run = await runSuite(['--base-url', t.url, '--only', 'TOKEN-001,AUTH-006,READ-003']);
    expect(run.code, explain(run)).toBe(0);
    for (const r of run.report!.results) {
      expect(r.status).toBe('skipped');
      expect(r.reason).toMatch(/--sandbox-token|--config/);
    }
  });

  it('with --config profiles, runs what the profiles allow and skips what needs the sandbox', async () => {
    const a = await t.organisation();
    const b = await t.organisation();
    const file = path.join(full.dir, 'profiles.json');
    writeFileSync(file, JSON.stringify({ profiles: [a, b].map((o, i) => ({ name: `org${i}`, ...o.apiKeys.test, webhookSigningSecret: o.webhookSigningSecret })) }));
    const run = await runSuite(['--base-url', t.url, '--config', file, '--only', 'TOKEN-*,AUTH-*,VAL-00?,IDEM-001,IDEM-002,IDEM-003,READ-*,CFG-001,HOOK-001,RESP-*']);
    expect(run.code, explain(run)).toBe(0);
    const status = (id: string) => run.result(id).status;
    for (const id of ['TOKEN-001', 'TOKEN-005', 'AUTH-003', 'VAL-003', 'IDEM-001', 'READ-003', 'RESP-003']) expect(status(id), explain(run)).toBe('passed');
    for (const id of ['AUTH-006', 'AUTH-008', 'READ-006', 'CFG-001', 'HOOK-001']) {
      expect(status(id)).toBe('skipped');
      expect(run.result(id).reason).toMatch(/sandbox/);
    }
  });
});

describe('reports of a failing run', () => {
  it('show the failing request, the response and a curl line; HTML escapes everything; JUnit has the failure; exit 1', async () => {
    // A broken variant: another organisation's session is answered 403 with markup in the body.
    const run = await runVariant(t.url, {
      name: '403 with markup',
      only: 'READ-003,CFG-009',
      args: ['--reporter', 'json,junit,html,console'],
      api: {
        response: (m, r) =>
          m.method === 'GET' && r.status === 404 && m.url.startsWith('/api/checkout-sessions/cs_') && !m.url.includes('conformance')
            ? { ...r, status: 403, body: JSON.stringify({ error: { code: 'forbidden', message: '<script>alert("x")</script> & more', param: null, doc_url: 'http://x/errors/#forbidden' } }) }
            : r,
      },
    });
    expect(run.code, explain(run)).toBe(1);
    const failed = run.result('READ-003');
    expect(failed.status).toBe('failed');
    expect(failed.reason).toMatch(/403/);
    expect(failed.evidence!.request).toMatch(/^GET \/api\/checkout-sessions\/cs_/);
    expect(failed.evidence!.response).toMatch(/^HTTP\/1.1 403/);
    expect(failed.evidence!.curl).toMatch(/^curl -sS -i -X GET 'http:\/\/127\.0\.0\.1:\d+\/api\/checkout-sessions\/cs_[^']+' -H 'authorization: Bearer [^']+'$/);
    const html = readFileSync(path.join(run.dir, 'conformance.html'), 'utf8');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(\\&quot;x\\&quot;)&lt;/script&gt; &amp; more'); // JSON-escaped, then HTML-escaped
    expect(html).toContain('curl -sS -i -X GET');
    expect(html).toContain('FAILED: 1 required check failed');
    const xml = readFileSync(path.join(run.dir, 'conformance.junit.xml'), 'utf8');
    expect(xml).toMatch(/<failure message="[^"]*403[^"]*" type="must">/);
    expect(xml).toContain('&lt;script&gt;');
    expect(xml).toMatch(/<testsuites [^>]*failures="1"/);
    expect(run.stdout).toMatch(/✗ READ-003/);
    expect(run.stdout).toContain('reproduce: curl');
  }, 120_000);

  it('a failing assumption check does not fail the run, unless --strict-assumptions', async () => {
    // Configuration checked before validation: our modelled order (CFG-009) is broken, nothing else.
    const mutation = {
      response: (m: { method: string; url: string }, r: { status: number; headers: Record<string, string>; body: string }) =>
        m.method === 'POST' && m.url === '/api/checkout-sessions' && r.body.includes('"validation_failed"') && r.body.includes('amount.total') && !r.body.includes('creditorReference')
          ? { ...r, body: r.body.replace(/"validation_failed"/g, '"card_not_enabled"').replace(/,"details":\[.*\]/, '').replace('#validation_failed', '#card_not_enabled') }
          : r,
    };
    const lenient = await runVariant(t.url, { name: 'order', only: 'CFG-009', api: mutation });
    expect(lenient.result('CFG-009').status, explain(lenient)).toBe('failed');
    expect(lenient.code).toBe(0);
    const strict = await runVariant(t.url, { name: 'order', only: 'CFG-009', api: mutation, args: ['--strict-assumptions'] });
    expect(strict.result('CFG-009').status).toBe('failed');
    expect(strict.code).toBe(1);
  }, 120_000);
});

/**
 * What a run exercised of the description, through the CLI against the in-process
 * reference server: a run of a few checks covers exactly what those checks sent and got,
 * more checks cover more, every report carries it, and --min-coverage turns a figure under
 * it into exit 2 (a failed must check keeps exit 1).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runConformance } from '../../conformance/index.ts';
import { type CliRun, cli, explain, expectPassed, runSuite } from '../support/conformance-cli.ts';
import { editJson, type MutatingProxy, startMutatingProxy } from '../support/mutating-proxy.ts';
import { paced } from '../support/pace.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
let tokens: CliRun;
let more: CliRun;

const target = () => ['--base-url', t.url, '--sandbox-token', SANDBOX_TOKEN];
const exercised = (run: CliRun) => {
  const c = run.report!.descriptionCoverage!;
  return [
    ...c.responses.filter((r) => r.exercised).map((r) => `${r.operation} ${r.status}`),
    ...c.errorCodes.filter((e) => e.exercised).map((e) => `code ${e.code}`),
    ...c.webhookEvents.filter((e) => e.exercised).map((e) => `event ${e.event}`),
    ...c.constraints.filter((k) => k.exercised).map((k) => `${k.field} ${k.keyword}`),
  ];
};

beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
  tokens = await runSuite([...target(), '--only', 'TOKEN-*', '--reporter', 'console,json,junit,html']);
  more = await runSuite([...target(), '--only', 'TOKEN-*,VAL-00?,HOOK-001']);
}, paced(120_000));
afterAll(async () => {
  await t?.close();
});

describe('a run of the token checks', () => {
  it('covers exactly what they sent and got: the token endpoint, the read TOKEN-001 makes, nothing of links', () => {
    expectPassed(tokens);
    expect(exercised(tokens).sort()).toEqual(
      [
        'POST /api/token 200',
        'POST /api/token 400',
        'POST /api/token 401',
        // TOKEN-001 proves its token works by reading a session that does not exist.
        'GET /api/checkout-sessions/{id} 404',
        'code not_found',
        // TOKEN-003 leaves clientId out; TOKEN-004 both fields.
        'clientId required',
        'clientSecret required',
      ].sort(),
    );
    const c = tokens.report!.descriptionCoverage!;
    const cell = (operation: string, status: string) =>
      c.responses.find((r) => r.operation === operation && r.status === status)!;
    expect(cell('POST /api/token', '200').checks).toContain('TOKEN-001');
    expect(cell('POST /api/token', '400').checks).toEqual(['TOKEN-002', 'TOKEN-003', 'TOKEN-004']);
    expect(cell('POST /api/token', '401').checks).toEqual(['TOKEN-005']);
    for (const r of c.responses.filter((x) => x.operation.includes('/api/payment-links')))
      expect(r, `${r.operation} ${r.status}`).toMatchObject({ exercised: false, checks: [] });
    expect(c.undocumented).toEqual({ responses: [], errorCodes: [], webhookEvents: [] });
    expect(c.percent).toBe(Math.floor((c.exercised * 1000) / c.total) / 10);
  });

  it('shows it in every report: the console table, a JUnit testsuite of its own, an HTML section', () => {
    const c = tokens.report!.descriptionCoverage!;
    expect(tokens.stdout).toContain(`Description coverage: ${c.percent}% (${c.exercised} of ${c.total} items of `);
    expect(tokens.stdout).toMatch(/\n {2}POST \/api\/token +3 of 5 {2}exercised 200 400 401 {2}not 429 500\n/);
    expect(tokens.stdout).toMatch(/\n {2}POST \/api\/payment-links +0 of 4 {2}not 200 400 401 500\n/);
    expect(tokens.stdout).toContain(
      `responses 4 of ${c.categories.responses.total}, error codes 1 of ${c.categories.errorCodes.total}`,
    );
    const xml = readFileSync(path.join(tokens.dir, 'conformance.junit.xml'), 'utf8');
    expect(xml).toMatch(/<testsuite name="description-coverage" tests="0"/);
    expect(xml).toContain(`<property name="description-coverage.percent" value="${c.percent}"/>`);
    expect(xml).toContain('<property name="description-coverage.responses" value="4/');
    expect(xml).toContain('not exercised, responses: POST /api/token 429, 500; ');
    // The testcases stay one per check: the description's items are no testcases.
    expect(xml.match(/<testcase /g)).toHaveLength(tokens.report!.results.length);
    const html = readFileSync(path.join(tokens.dir, 'conformance.html'), 'utf8');
    expect(html).toContain('<section id="description-coverage"><h2>Description coverage</h2>');
    expect(html).toContain(`${c.percent}% of ${c.description.title} ${c.description.version} exercised`);
    expect(html).toContain('<td><code>POST /api/payment-links</code></td>');
  });
});

describe('more checks', () => {
  it('cover more: all the token checks did, the amounts tried, a signed completed webhook', () => {
    expectPassed(more);
    const before = new Set(exercised(tokens));
    const after = new Set(exercised(more));
    for (const item of before) expect(after, item).toContain(item);
    expect(more.report!.descriptionCoverage!.percent).toBeGreaterThan(tokens.report!.descriptionCoverage!.percent);
    const c = more.report!.descriptionCoverage!;
    const maximum = c.constraints.find((k) => k.field === 'amount.total' && k.keyword === 'maximum')!;
    // VAL-004 sends 10000 (on the maximum), VAL-005 10000.01 (over it).
    expect(maximum).toMatchObject({ exercised: true, exercisedOn: ['POST /api/checkout-sessions'] });
    expect(maximum.checks).toEqual(expect.arrayContaining(['VAL-004', 'VAL-005']));
    const completed = c.webhookEvents.find((e) => e.event === 'checkout_session.completed')!;
    expect(completed.checks).toContain('HOOK-001');
    expect(completed.signed).toBeGreaterThan(0);
    expect(c.webhookEvents.find((e) => e.event === 'legacyTransaction')).toMatchObject({ exercised: false });
  });
});

describe('--min-coverage', () => {
  it('passes at the figure, and exits 2 just above it, saying the figure and what was missing', async () => {
    const figure = tokens.report!.descriptionCoverage!.percent;
    const at = await runSuite([...target(), '--only', 'TOKEN-*', '--min-coverage', String(figure)]);
    expect(at.code, explain(at)).toBe(0);
    expect(at.report!.descriptionCoverage!.percent).toBe(figure);
    const above = Math.round((figure + 0.1) * 10) / 10;
    const below = await runSuite([...target(), '--only', 'TOKEN-*', '--min-coverage', String(above)]);
    expect(below.code, explain(below)).toBe(2);
    expect(below.report!.summary).toMatchObject({ failed: 0, error: 0 });
    expect(below.stderr).toContain(`--min-coverage ${above}: ${figure}% of the description exercised (`);
    expect(below.stderr).toContain('not exercised: responses: POST /api/token 429, 500; ');
    expect(below.stderr).toContain('error codes: validation_failed, ');
    expect(below.stderr).toContain('webhook events: checkout_session.completed, legacyTransaction');
    expect(below.stderr).toContain('amount.total maximum 10000');
    expect(below.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('leaves exit 1 to a failed must check', async () => {
    const proxy: MutatingProxy = await startMutatingProxy(t.url, {
      response: (m, r) =>
        m.url === '/api/token' && r.status === 200 ? editJson(r, (b) => ({ ...b, tokenType: 'bearer' })) : r,
    });
    try {
      const run = await runSuite([
        '--base-url',
        proxy.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--only',
        'TOKEN-001',
        '--min-coverage',
        '100',
      ]);
      expect(run.code, explain(run)).toBe(1);
      expect(run.result('TOKEN-001').status).toBe('failed');
      expect(run.stderr).toContain('--min-coverage 100: ');
    } finally {
      await proxy.close();
    }
  });

  it.each(['101', '-1', 'abc', '50%', ''])('refuses %j before reaching the target', async (value) => {
    const run = await cli(['run', '--base-url', 'http://127.0.0.1:9', '--sandbox-token', 'x', '--min-coverage', value]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`argument '${value}' is invalid. expected a percentage from 0 to 100`);
  });

  it('is refused out of range from the library too, before reaching the target', async () => {
    await expect(
      runConformance({ baseUrl: 'http://127.0.0.1:9', sandboxToken: 'x', minCoverage: 100.5 }),
    ).rejects.toThrow('--min-coverage must be a percentage from 0 to 100.');
  });
});

describe('--min-input-coverage', () => {
  it('reports what a run exercised of the input space, and exits 2 under the figure asked for', async () => {
    const media = await runSuite([...target(), '--only', 'INP-002', '--min-input-coverage', '50']);
    expect(media.code, explain(media)).toBe(2);
    expect(media.report!.summary).toMatchObject({ passed: 1, failed: 0, error: 0 });
    const c = media.report!.inputCoverage!;
    // The five media-type classes of INP-002, of every class the model holds.
    expect(c.exercised).toBe(5);
    expect(c.total).toBeGreaterThan(400);
    expect(c.cells).toEqual({ exercised: 0, total: 144 });
    expect(media.stderr).toContain(
      `--min-input-coverage 50: the run exercised ${c.percent}% of the input space (5 of ${c.total} classes); short: POST /api/token 2 of 3;`,
    );
    const none = await runSuite([...target(), '--only', 'INP-002', '--min-input-coverage', '0']);
    expect(none.code, explain(none)).toBe(0);
  });
});

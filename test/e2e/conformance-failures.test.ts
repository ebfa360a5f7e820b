/**
 * How the conformance suite reports what goes wrong, through its CLI against the in-process
 * reference server: the reports of a failing run, a failure's curl line, secrets kept out
 * of every output, setup problems and run configuration, and a check that runs out of time.
 *
 * @tags long
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, explain, runSuite } from '../support/conformance-cli.ts';
import { parse, pathOf, recode, runVariant } from '../support/conformance-variants.ts';
import { editJson, type Mutation } from '../support/mutating-proxy.ts';
import type { RegisteredCheck } from '../../conformance/runner/check-definition.ts';
import type { CheckContext } from '../../conformance/modes/run/context/check-context.ts';
import { RunContext } from '../../conformance/modes/run/context/run-context.ts';
import { curlOf, evidenceOf } from '../../conformance/core/http.ts';
import { CaptureReceiver } from '../../conformance/modes/run/capture-receiver.ts';
import { Redactor } from '../../conformance/core/redact.ts';
import { runChecks } from '../../conformance/modes/run/run-checks.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';
import { paced } from '../support/pace.ts';

let t: TestServer;
/** Where the tests write the files they give the command (profiles, adapters, waits). */
const scratch = mkdtempSync(path.join(tmpdir(), 'conformance-failures-'));

beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
});
afterAll(async () => {
  await t?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe('reports of a failing run', () => {
  it(
    'show the failing request, the response and a curl line; HTML escapes everything; JUnit has the failure; exit 1',
    async () => {
      // A broken variant: another organisation's session is answered 403 with markup in the body.
      const run = await runVariant(t.url, {
        name: '403 with markup',
        only: 'READ-003,CFG-009',
        args: ['--reporter', 'json,junit,html,console'],
        api: {
          response: (m, r) =>
            m.method === 'GET' &&
            r.status === 404 &&
            m.url.startsWith('/api/checkout-sessions/cs_') &&
            !m.url.includes('conformance')
              ? {
                  ...r,
                  status: 403,
                  body: JSON.stringify({
                    error: {
                      code: 'forbidden',
                      message: '<script>alert("x")</script> & more',
                      param: null,
                      doc_url: 'http://x/errors/#forbidden',
                    },
                  }),
                }
              : r,
        },
      });
      expect(run.code, explain(run)).toBe(1);
      const failed = run.result('READ-003');
      expect(failed.status).toBe('failed');
      expect(failed.reason).toMatch(/403/);
      expect(failed.evidence!.request).toMatch(/^GET \/api\/checkout-sessions\/cs_/);
      expect(failed.evidence!.response).toMatch(/^HTTP\/1.1 403/);
      // The token is never shown: the curl line takes it from a shell variable.
      expect(failed.evidence!.curl).toMatch(
        /^curl -sS -i -X GET 'http:\/\/127\.0\.0\.1:\d+\/api\/checkout-sessions\/cs_[^']+' -H "authorization: Bearer \$TOKEN"$/,
      );
      const html = readFileSync(path.join(run.dir, 'conformance.html'), 'utf8');
      expect(html).not.toContain('<script>alert');
      expect(html.match(/<script>/g), 'only the report’s own filter script').toHaveLength(1);
      expect(html).toContain('&lt;script&gt;alert(\\&quot;x\\&quot;)&lt;/script&gt; &amp; more'); // JSON-escaped, then HTML-escaped
      expect(html).toContain('curl -sS -i -X GET');
      expect(html).toContain('FAILED: 1 must check failed');
      const xml = readFileSync(path.join(run.dir, 'conformance.junit.xml'), 'utf8');
      expect(xml).toMatch(/<failure message="[^"]*403[^"]*" type="must">/);
      expect(xml).toContain('&lt;script&gt;');
      expect(xml).toMatch(/<testsuites [^>]*failures="1"/);
      expect(run.stdout).toMatch(/✗ READ-003/);
      expect(run.stdout).toContain('sent: curl');
      expect(run.stdout).toMatch(
        /reproduce: npx --no -- payment-conformance repro \S+\/conformance\.json READ-003 --base-url /,
      );
    },
    paced(120_000),
  );

  it(
    'a failing assumption check is reported apart as differs, naming the assumption, and fails the run only with --strict-assumptions',
    async () => {
      // Configuration checked before validation: our modelled order (CFG-009) is broken, nothing else.
      const mutation = {
        response: (
          m: { method: string; url: string },
          r: { status: number; headers: Record<string, string>; body: string },
        ) =>
          m.method === 'POST' &&
          m.url === '/api/checkout-sessions' &&
          r.body.includes('"validation_failed"') &&
          r.body.includes('amount.total') &&
          !r.body.includes('creditorReference')
            ? {
                ...r,
                body: r.body
                  .replace(/"validation_failed"/g, '"card_not_enabled"')
                  .replace(/,"details":\[.*\]/, '')
                  .replace('#validation_failed', '#card_not_enabled'),
              }
            : r,
      };
      const lenient = await runVariant(t.url, {
        name: 'order',
        only: 'CFG-009,TOKEN-001',
        api: mutation,
        args: ['--reporter', 'json,console'],
      });
      const differs = lenient.result('CFG-009');
      expect(differs.status, explain(lenient)).toBe('differs');
      expect(differs.assumption).toMatch(/validation before configuration/);
      expect(lenient.report!.summary).toMatchObject({ passed: 1, failed: 0, differs: 1 });
      expect(lenient.code).toBe(0);
      // The verdict says what differs and whether it counts, in plain words.
      expect(lenient.stdout).toContain(
        'PASSED: no must check failed; 1 check differs from our modelling only (--strict-assumptions fails it)\n',
      );
      expect(lenient.stdout).toMatch(/\n2 checks: 1 passed, 0 failed, 1 differs, 0 skipped in [\d.]+ s\n/);
      expect(lenient.stdout).toContain('Differences from our modelling');
      expect(lenient.stdout).toMatch(/≠ CFG-009 .*differs from our modelling: /);
      const strict = await runVariant(t.url, {
        name: 'order',
        only: 'CFG-009',
        api: mutation,
        args: ['--strict-assumptions', '--reporter', 'json,console'],
      });
      expect(strict.result('CFG-009').status).toBe('failed');
      expect(strict.report!.summary).toMatchObject({ failed: 1, differs: 0 });
      expect(strict.code).toBe(1);
      expect(strict.stdout).toContain('FAILED: 1 must or assumption check failed');
    },
    paced(120_000),
  );
});

describe('a failure’s curl line', () => {
  it(
    'pastes into a shell as it is printed, and reproduces the request (the token request: its secret from $CLIENT_SECRET)',
    async () => {
      let clientSecret = '';
      const run = await runVariant(t.url, {
        name: 'tokenType',
        only: 'TOKEN-001',
        api: {
          response: (m, r) => {
            if (pathOf(m) !== '/api/token' || r.status !== 200) return r;
            clientSecret = new URLSearchParams(m.body).get('clientSecret') ?? '';
            return editJson(r, (b) => ({ ...b, tokenType: 'bearer' }));
          },
        },
      });
      const failed = run.result('TOKEN-001');
      expect(failed.status, explain(run)).toBe('failed');
      const curl = failed.evidence!.curl;
      expect(curl).toMatch(/--data-raw "clientId=ck_test_\w+&clientSecret=\$CLIENT_SECRET"$/);
      expect(curl).not.toContain(clientSecret);
      // The run's proxy is gone: the same request goes to the server itself.
      const line = curl.replace(/http:\/\/127\.0\.0\.1:\d+/, t.url);
      const shell = await new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn('bash', ['-c', line], { env: { ...process.env, CLIENT_SECRET: clientSecret } });
        let out = '';
        child.stdout.on('data', (c: Buffer) => (out += c.toString()));
        child.stderr.on('data', (c: Buffer) => (out += c.toString()));
        child.on('exit', (code) => resolve({ code, out }));
      });
      expect(shell.code, shell.out).toBe(0);
      expect(shell.out).toMatch(/^HTTP\/1\.1 200/);
      expect(shell.out).toContain('"accessToken"');
    },
    paced(60_000),
  );
});

describe('secrets never reach the output', () => {
  it('evidence shows placeholders for every kind of credential, request and response', () => {
    const redactor = new Redactor('sbx_unit_sandbox_token_123');
    type Sent = { method: string; url: string; headers: Record<string, string>; body?: string };
    const request: Sent = {
      method: 'POST',
      url: 'http://127.0.0.1:1/api/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'clientId=ck_1&clientSecret=cs_secret_value_1',
    };
    const org = {
      id: 'org_1',
      webhookSigningSecret: 'whsec_unit_1',
      apiKeys: {
        test: { clientId: 'ck_t', clientSecret: 'sk_test_unit' },
        live: { clientId: 'ck_l', clientSecret: 'sk_live_unit' },
      },
    };
    const exchange = (req: Sent, json: unknown) => ({
      request: req,
      status: 200,
      headers: { 'content-type': 'application/json' },
      text: JSON.stringify(json),
      json,
      checkId: 'X-001',
    });
    const token = evidenceOf(
      exchange(request, { accessToken: 'at_unit_value', tokenType: 'Bearer', expiresIn: '5m' }),
      redactor,
    );
    expect(JSON.stringify(token)).not.toMatch(/cs_secret_value_1|at_unit_value/);
    expect(token.request).toContain('clientSecret=$CLIENT_SECRET');
    expect(token.curl).toContain('--data-raw "clientId=ck_1&clientSecret=$CLIENT_SECRET"');
    expect(token.response).toContain('"accessToken":"$ACCESS_TOKEN"');
    const sandbox = evidenceOf(
      exchange(
        {
          method: 'POST',
          url: 'http://127.0.0.1:1/sandbox/organisations',
          headers: { authorization: 'Bearer sbx_unit_sandbox_token_123' },
          body: '{}',
        },
        org,
      ),
      redactor,
    );
    expect(JSON.stringify(sandbox)).not.toMatch(/sbx_unit_sandbox_token_123|whsec_unit_1|sk_test_unit|sk_live_unit/);
    expect(sandbox.request).toContain('authorization: Bearer $SANDBOX_TOKEN');
    expect(sandbox.response).toContain('"webhookSigningSecret":"$WEBHOOK_SECRET"');
    const json = curlOf(
      {
        method: 'POST',
        url: 'http://127.0.0.1:1/api/token',
        headers: { authorization: 'Basic Y2tfMTpzZWNyZXQ=' },
        body: JSON.stringify({ clientId: 'ck_1', clientSecret: 'json secret' }),
      },
      redactor,
    );
    expect(json).toContain(`-H "authorization: Basic $CREDENTIALS"`);
    expect(json).toContain(`"{\\"clientId\\":\\"ck_1\\",\\"clientSecret\\":\\"$CLIENT_SECRET\\"}"`);
    expect(
      curlOf({ method: 'GET', url: 'http://h/x', headers: { authorization: 'Bearer Bearer at_unit_value' } }, redactor),
    ).toContain('"authorization: Bearer Bearer $TOKEN"');
  });

  it(
    'a failing run’s JSON, JUnit, HTML and console output hold none of the real secrets',
    async () => {
      const secrets = new Set<string>([SANDBOX_TOKEN]);
      const deleted = new Set<string>();
      const keep = (value: unknown) => typeof value === 'string' && value.length > 0 && secrets.add(value);
      const mutation: Mutation = {
        request: (m) => {
          const deletedKey = /^\/sandbox\/api-keys\/([^/]+)$/.exec(pathOf(m));
          if (m.method === 'DELETE' && deletedKey) deleted.add(decodeURIComponent(deletedKey[1]!));
          // The sandbox clock breaks: AUTH-006/007 end in error (an adapter call failed), their reason naming it.
          if (/\/clock$/.test(pathOf(m)))
            return {
              status: 500,
              headers: { 'content-type': 'application/json' },
              body: '{"error":{"code":"internal_error","message":"x","param":null,"doc_url":"http://x/errors/#internal_error"}}',
            };
          return m;
        },
        response: (m, r, k) => {
          const body = parse(r.body);
          if (pathOf(m) === '/sandbox/organisations' && body)
            [body.webhookSigningSecret, body.apiKeys?.test?.clientSecret, body.apiKeys?.live?.clientSecret].forEach(
              keep,
            );
          if (/\/api-keys$/.test(pathOf(m)) && body) keep(body.clientSecret);
          if (pathOf(m) === '/api/token') {
            for (const secret of new URLSearchParams(m.body).getAll('clientSecret')) keep(secret);
            if (body?.accessToken) {
              keep(body.accessToken);
              return editJson(r, (b) => ({ ...b, tokenType: 'bearer' })); // TOKEN-001 fails, its evidence holds the token
            }
            const clientId = new URLSearchParams(m.body).get('clientId') ?? '';
            if (r.status === 401 && deleted.has(clientId))
              return {
                ...r,
                body: JSON.stringify(recode({ error: { doc_url: 'http://x/errors/#x' } }, 'unknown_api_key')),
              }; // AUTH-008
            if (r.status === 401 && !k.orgByClientId.has(clientId))
              return { ...r, body: JSON.stringify({ error: 'Unknown client id' }) }; // TOKEN-005
          }
          if (r.status === 401 && String(m.headers.authorization).startsWith('Basic '))
            return editJson(r, (b) => recode(b, 'invalid_token')); // AUTH-002
          return r;
        },
      };
      const run = await runVariant(t.url, {
        name: 'secrets',
        only: 'TOKEN-*,AUTH-*',
        api: mutation,
        args: ['--reporter', 'json,junit,html,console'],
      });
      expect(run.code, explain(run)).toBe(1);
      for (const id of ['TOKEN-001', 'TOKEN-005', 'AUTH-002', 'AUTH-008'])
        expect(run.result(id).status, `${id}\n${explain(run)}`).toBe('failed');
      expect(run.result('AUTH-006').status).toBe('error');
      expect(run.result('AUTH-006').reason).toMatch(
        /^advanceClock\(org_\w+, 310\) failed: POST \/sandbox\/organisations\/{orgId}\/clock answered 500/,
      );
      expect(secrets.size).toBeGreaterThan(4);
      const outputs = {
        json: readFileSync(path.join(run.dir, 'conformance.json'), 'utf8'),
        junit: readFileSync(path.join(run.dir, 'conformance.junit.xml'), 'utf8'),
        html: readFileSync(path.join(run.dir, 'conformance.html'), 'utf8'),
        console: run.stdout + run.stderr,
      };
      for (const [name, text] of Object.entries(outputs))
        for (const secret of secrets) expect(text.includes(secret), `${name} shows the secret ${secret}`).toBe(false);
      const evidence = JSON.stringify(run.report!.results.map((r) => r.evidence));
      for (const placeholder of ['$CLIENT_SECRET', '$ACCESS_TOKEN', 'Basic $CREDENTIALS'])
        expect(evidence).toContain(placeholder);
    },
    paced(120_000),
  );
});

describe('setup problems and run configuration', () => {
  it(
    'a sandbox API that does not answer is a setup error (exit 2) with a message, not a stack trace',
    async () => {
      // The public API answers at once; the sandbox never does.
      const server = http.createServer((req, res) => {
        if (req.url?.startsWith('/sandbox/')) return; // hangs
        res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const run = await cli(['run', '--base-url', url, '--sandbox-token', 'sbx_x']);
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(
          /^payment-conformance: The sandbox API at .* is not usable: no answer within 10 s\.\n$/,
        );
        expect(run.stderr).not.toMatch(/\n\s+at /);
      } finally {
        server.closeAllConnections();
        server.close();
      }
    },
    paced(30_000),
  );

  it(
    'a receiver answer its own busy machine made late is no verdict on the target (HOOK-028, HOOK-029)',
    async () => {
      // A starved event loop, as the suite's process sees it: its timers of the slow answer
      // (3.5 s, inside the five seconds the service waits) fire 2.5 s late, after the wait.
      const starved = path.join(scratch, 'starved-timers.mjs');
      writeFileSync(
        starved,
        `const setTimeoutOnTime = globalThis.setTimeout;
globalThis.setTimeout = (callback, ms, ...rest) => setTimeoutOnTime(callback, ms === 3500 ? ms + 2500 : ms, ...rest);
`,
      );
      const run = await runSuite(
        ['--base-url', t.url, '--sandbox-token', SANDBOX_TOKEN, '--only', 'HOOK-028,HOOK-029'],
        {},
        {
          nodeArgs: ['--import', pathToFileURL(starved).href],
        },
      );
      for (const id of ['HOOK-028', 'HOOK-029']) {
        expect(run.result(id).status, explain(run)).toBe('error');
        expect(run.result(id).reason).toMatch(
          /^The suite's receiver was to answer 3\.5 s after the delivery arrived, but its machine was too busy: it (had not answered|answered) [\d.]+ s after\. The target's record \(no answer: .*\) cannot be judged\. The suite was too late to judge this\.$/,
        );
      }
      expect(run.code).toBe(2);
    },
    paced(60_000),
  );

  it(
    '--config deliveryWaitMs is accepted with a sandbox, and a bad value is a setup error',
    async () => {
      const good = path.join(scratch, 'wait.json');
      writeFileSync(good, JSON.stringify({ deliveryWaitMs: 1500 }));
      const run = await runSuite([
        '--base-url',
        t.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--config',
        good,
        '--only',
        'HOOK-006,HOOK-015',
      ]);
      expect(run.code, explain(run)).toBe(0);
      expect(run.report!.summary.passed).toBe(2);
      const bad = path.join(scratch, 'bad-wait.json');
      writeFileSync(bad, JSON.stringify({ deliveryWaitMs: 'soon' }));
      const refused = await cli(['run', '--base-url', t.url, '--sandbox-token', SANDBOX_TOKEN, '--config', bad]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/deliveryWaitMs/);
    },
    paced(120_000),
  );

  it(
    'without a sandbox, the shared organisation is the first profile whose declared settings fit the defaults',
    async () => {
      const aud = await t.organisation({ settlementCurrency: 'AUD' });
      const nzd = await t.organisation();
      const other = await t.organisation();
      const file = path.join(scratch, 'profiles-aud-first.json');
      const profile = (o: typeof aud, extra: object) => ({ ...o.apiKeys.test, ...extra });
      writeFileSync(
        file,
        JSON.stringify({
          profiles: [
            profile(aud, { settlementCurrency: 'AUD' }),
            profile(nzd, { settlementCurrency: 'NZD' }),
            profile(other, {}),
          ],
        }),
      );
      const run = await runSuite([
        '--base-url',
        t.url,
        '--config',
        file,
        '--only',
        'READ-001,READ-003,VAL-029,IDEM-006,IDEM-008',
      ]);
      expect(run.code, explain(run)).toBe(0);
      for (const id of ['READ-001', 'READ-003', 'VAL-029', 'IDEM-006', 'IDEM-008'])
        expect(run.result(id).status, explain(run)).toBe('passed');
      // Only a profile that does not fit: the checks are skipped with the reason, not failed.
      const only = path.join(scratch, 'profiles-aud-only.json');
      writeFileSync(only, JSON.stringify({ profiles: [profile(aud, { settlementCurrency: 'AUD' })] }));
      const skipped = await runSuite(['--base-url', t.url, '--config', only, '--only', 'READ-001,VAL-029']);
      expect(skipped.code, explain(skipped)).toBe(0);
      for (const id of ['READ-001', 'VAL-029']) {
        expect(skipped.result(id).status).toBe('skipped');
        expect(skipped.result(id).reason).toMatch(/default settings/);
      }
    },
    paced(120_000),
  );
});

describe('a check that runs out of time', () => {
  it('is failed, and stops: its request in flight is aborted and it makes no further request or wait', async () => {
    const seen: string[] = [];
    let hangingClosed = false;
    const server = http.createServer((req, res) => {
      seen.push(req.url ?? '');
      if (req.url === '/hang') {
        res.on('close', () => (hangingClosed = true));
        return; // never answers
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const run = new RunContext({
        baseUrl,
        adapter: { capabilities: [] },
        adapterName: 'config',
        profiles: [{ clientId: 'c', clientSecret: 's_unit' }],
        receiver: new CaptureReceiver(),
        deliveryWaitMs: 100,
        settleTimeoutMs: 1000,
        explore: { budget: { ms: 0 }, seed: 1 },
        strictAssumptions: false,
        concurrency: 2,
      });
      const check = (id: string, body: (ctx: CheckContext) => Promise<void>): RegisteredCheck<CheckContext> => ({
        id,
        clauses: ['limit.total'],
        level: 'must',
        rule: 'limit.total (Limits)',
        section: 'Limits',
        title: `times out ${id}`,
        run: body,
      });
      const results = await runChecks(
        run,
        [
          check('ABC-001', async (ctx) => {
            await ctx.api.send('GET', '/hang');
            await ctx.api.send('GET', '/after-request');
          }),
          check('ABC-002', async (ctx) => {
            await ctx.hooks.settle(800);
            await ctx.api.send('GET', '/after-wait');
          }),
        ],
        { concurrency: 2, checkTimeoutMs: 300 },
      );
      for (const r of results) {
        expect(r.status).toBe('failed');
        expect(r.reason).toMatch(/did not finish within 0.3 s/);
      }
      // Long enough for the wait of ABC-002 to have ended, had it not been stopped.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(hangingClosed).toBe(true);
      expect(seen).toEqual(['/hang']);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

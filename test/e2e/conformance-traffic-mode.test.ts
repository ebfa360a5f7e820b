/**
 * `payment-conformance traffic`, through the CLI as a user runs it, on traffic it did not
 * make: the NDJSON and HAR that `run` and `client` write against the in-process reference
 * server (clean, then with a defect of the service or of the client, each judged failed on
 * the rule it breaks), a file whose bodies were not recorded (not judged, never passed), and
 * webhook deliveries verified with --webhook-secret.
 *
 * @tags long
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signWebhook } from '../../client/webhooks.ts';
import { cli, type JsonReport, runSuite } from '../support/conformance-cli.ts';
import { editJson, startMutatingProxy } from '../support/mutating-proxy.ts';
import { paced } from '../support/pace.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
const scratch = mkdtempSync(path.join(tmpdir(), 'conformance-traffic-mode-'));

beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
});
afterAll(async () => {
  await t?.close();
});

/** `traffic` on a file, with its JSON report read back: each check's status by id. */
async function judge(args: string[]) {
  const out = mkdtempSync(path.join(tmpdir(), 'traffic-'));
  const ran = await cli(['traffic', ...args, '--reporter', 'console,json', '--out', out]);
  const report = JSON.parse(readFileSync(path.join(out, 'conformance.json'), 'utf8')) as JsonReport;
  const status = Object.fromEntries(report.results.map((r) => [r.id, r.status]));
  const reason = Object.fromEntries(report.results.map((r) => [r.id, r.reason]));
  return { ...ran, report, status, reason, explain: `${ran.stdout}\n${ran.stderr}` };
}

/** `client` with its JSON and NDJSON reports in a fresh directory. */
async function clientRun(args: string[]) {
  const dir = mkdtempSync(path.join(tmpdir(), 'traffic-client-'));
  const ran = await cli(['client', ...args, '--reporter', 'json,ndjson', '--out', dir]);
  return { ...ran, dir };
}

const failedIds = (status: Record<string, string>) =>
  Object.entries(status)
    .filter(([, s]) => s === 'failed')
    .map(([id]) => id);

describe('the traffic of run against the reference server', () => {
  it(
    'is judged clean, its service checks judged and its own probes left to no client rule',
    async () => {
      const run = await runSuite([
        '--base-url',
        t.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--only',
        'TOKEN-*,AUTH-*,IDEM-*,READ-*,HOOK-001,HOOK-002',
        '--reporter',
        'json,ndjson,har',
      ]);
      expect(run.code).toBe(0);
      for (const file of [
        ['--ndjson', 'conformance.ndjson'],
        ['--har', 'conformance.har'],
      ]) {
        const judged = await judge([file[0]!, path.join(run.dir, file[1]!)]);
        expect(judged.code, judged.explain).toBe(0);
        expect(failedIds(judged.status)).toEqual([]);
        for (const id of [
          'TRAFFIC-001',
          'TRAFFIC-003',
          'TRAFFIC-005',
          'TRAFFIC-007',
          'TRAFFIC-009',
          'TRAFFIC-010',
          'TRAFFIC-020',
        ])
          expect(judged.status[id], `${id}: ${judged.reason[id]}`).toBe('passed');
        expect(judged.status['TRAFFIC-030']).toBe('skipped');
        expect(judged.reason['TRAFFIC-030']).toMatch(/this suite's own probes of a target/);
        expect(judged.stdout).toMatch(/webhook deliveries, \d+ other \(pages, sandbox, assets: not judged\)/);
      }
    },
    paced(180_000),
  );

  it(
    'of a service that renames a field, or replays another session, fails the rule it breaks',
    async () => {
      const seen = new Map<string, string>();
      const proxy = await startMutatingProxy(t.url, {
        response: (m, r) => {
          if (m.url === '/api/token' && r.status === 200)
            return editJson(r, ({ tokenType, ...rest }) => ({ ...rest, token_type: tokenType }));
          const key = m.headers['idempotency-key'];
          if (m.method === 'POST' && m.url === '/api/checkout-sessions' && key && r.status === 200) {
            // A replay answered with a session of its own: the key is not honoured.
            if (seen.has(key)) return editJson(r, (b) => ({ ...b, id: `${String(b.id)}x` }));
            seen.set(key, String(JSON.parse(r.body).id));
          }
          return r;
        },
      });
      try {
        const run = await runSuite([
          '--base-url',
          proxy.url,
          '--sandbox-token',
          SANDBOX_TOKEN,
          '--only',
          'TOKEN-001,IDEM-001',
          '--reporter',
          'json,ndjson',
        ]);
        expect(run.code).toBe(1);
        const judged = await judge(['--ndjson', path.join(run.dir, 'conformance.ndjson')]);
        expect(judged.code, judged.explain).toBe(1);
        expect(judged.status['TRAFFIC-003']).toBe('failed');
        expect(judged.reason['TRAFFIC-003']).toMatch(/POST \/api\/token 200: body does not match .*tokenType/);
        expect(judged.status['TRAFFIC-007']).toBe('failed');
        expect(judged.status['TRAFFIC-009']).toBe('failed');
        expect(judged.reason['TRAFFIC-009']).toMatch(
          /the replay differs from #\d+ POST \/api\/checkout-sessions → 200 in id/,
        );
      } finally {
        await proxy.close();
      }
    },
    paced(120_000),
  );

  it('with its bodies left out, judges nothing it cannot see: skipped with the reason, never passed', async () => {
    const run = await runSuite([
      '--base-url',
      t.url,
      '--sandbox-token',
      SANDBOX_TOKEN,
      '--only',
      'TOKEN-001',
      '--reporter',
      'json,har',
    ]);
    const har = JSON.parse(readFileSync(path.join(run.dir, 'conformance.har'), 'utf8'));
    for (const entry of har.log.entries) {
      delete entry.response.content.text;
      delete entry.request.postData;
    }
    const file = path.join(scratch, 'no-bodies.har');
    writeFileSync(file, JSON.stringify(har));
    const judged = await judge(['--har', file]);
    expect(judged.code, judged.explain).toBe(0);
    expect(judged.status['TRAFFIC-001']).toBe('skipped');
    expect(judged.reason['TRAFFIC-001']).toBe('the traffic holds no answer of the API with its body');
    expect(judged.status['TRAFFIC-007']).toBe('skipped');
    // Only a rule that reads statuses alone still judges: no 403 among the reads.
    const passed = Object.entries(judged.status).filter(([, s]) => s === 'passed');
    expect(passed.map(([id]) => id)).toEqual(['TRAFFIC-008']);
    expect(judged.stdout).toMatch(/^PASSED \(1 of \d+ must checks judged\)/m);
  });
});

describe('the traffic of clients', () => {
  it(
    'a naive client replaces a live token and sends creates without a key; the SDK passes',
    async () => {
      const naive = await clientRun([
        '--base-url',
        t.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--driver',
        `node ${path.join('test', 'support', 'client-drivers', 'naive.mjs')}`,
        '--only',
        'CLIENT-00?',
      ]);
      const judgedNaive = await judge(['--ndjson', path.join(naive.dir, 'conformance.ndjson')]);
      expect(judgedNaive.status['TRAFFIC-032'], judgedNaive.explain).toBe('failed');
      expect(judgedNaive.reason['TRAFFIC-032']).toMatch(/asked for a new token \d+ s after the last/);
      expect(judgedNaive.status['TRAFFIC-036']).toBe('failed');
      expect(judgedNaive.code).toBe(1);

      const sdk = await clientRun([
        '--base-url',
        t.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--driver-module',
        `./${path.join('conformance', 'dist', 'modes', 'client', 'drivers', 'sdk.js')}`,
      ]);
      expect(sdk.code).toBe(0);
      const judgedSdk = await judge(['--ndjson', path.join(sdk.dir, 'conformance.ndjson')]);
      expect(failedIds(judgedSdk.status), judgedSdk.explain).toEqual([]);
      for (const id of [
        'TRAFFIC-030',
        'TRAFFIC-031',
        'TRAFFIC-032',
        'TRAFFIC-033',
        'TRAFFIC-034',
        'TRAFFIC-036',
        'TRAFFIC-038',
      ])
        expect(judgedSdk.status[id], `${id}: ${judgedSdk.reason[id]}`).toBe('passed');
      // Answers the client mode's scripted service gave in the target's place are no verdict on it.
      expect(judgedSdk.status['TRAFFIC-001']).toBe('passed');
    },
    paced(240_000),
  );
});

describe('a refused request sent again', () => {
  /** A HAR of one client: each step a token request (its answer naming `token`) or an API call with one. */
  const harOf = (steps: Array<{ token: string } | { with: string; status: number; code: string }>) => ({
    log: {
      version: '1.2',
      entries: steps.map((step, i) => {
        const at = new Date(Date.UTC(2026, 10, 28, 12, 0, i)).toISOString();
        const answer = (status: number, json: unknown) => ({
          status,
          headers: [{ name: 'Content-Type', value: 'application/json' }],
          content: { size: 0, mimeType: 'application/json', text: JSON.stringify(json) },
        });
        if ('token' in step)
          return {
            startedDateTime: at,
            time: 2,
            request: {
              method: 'POST',
              url: 'https://pay.example/api/token',
              headers: [{ name: 'Content-Type', value: 'application/x-www-form-urlencoded' }],
              postData: {
                mimeType: 'application/x-www-form-urlencoded',
                text: 'clientId=ck_test_1&clientSecret=cs_secret_1',
              },
            },
            response: answer(200, { accessToken: step.token, tokenType: 'Bearer', expiresIn: '5m' }),
          };
        return {
          startedDateTime: at,
          time: 2,
          request: {
            method: 'GET',
            url: 'https://pay.example/api/checkout-sessions/cs_missing',
            headers: [{ name: 'Authorization', value: `Bearer ${step.with}` }],
          },
          response: answer(step.status, {
            error: {
              code: step.code,
              message: step.code,
              param: null,
              doc_url: `https://pay.example/docs/errors/#${step.code}`,
            },
          }),
        };
      }),
    },
  });
  const judged = async (name: string, steps: Parameters<typeof harOf>[0]) => {
    const file = path.join(scratch, `${name}.har`);
    writeFileSync(file, JSON.stringify(harOf(steps)));
    return judge(['--har', file]);
  };

  it('after a 404, with a new token fetched on the way, is still a retry; after invalid_token, a new token is the fix', async () => {
    const notFound = await judged('repeat-404', [
      { token: 'tok_first_0123456789' },
      { with: 'tok_first_0123456789', status: 404, code: 'not_found' },
      { token: 'tok_second_0123456789' },
      { with: 'tok_second_0123456789', status: 404, code: 'not_found' },
    ]);
    expect(notFound.status['TRAFFIC-034'], notFound.explain).toBe('failed');
    expect(notFound.reason['TRAFFIC-034']).toMatch(
      /#4 GET \/api\/checkout-sessions\/cs_missing → 404: sent again as it was after #2/,
    );

    const invalid = await judged('repeat-401', [
      { token: 'tok_first_0123456789' },
      { with: 'tok_first_0123456789', status: 401, code: 'invalid_token' },
      { token: 'tok_second_0123456789' },
      { with: 'tok_second_0123456789', status: 404, code: 'not_found' },
    ]);
    expect(invalid.status['TRAFFIC-034'], invalid.explain).toBe('passed');
  });
});

describe('webhook deliveries', () => {
  it('are verified with --webhook-secret, and not judged without it', async () => {
    const secret = 'whsec_traffic_mode_receiver_0123456789';
    const body = JSON.stringify({
      event: 'checkout_session.completed',
      createdAt: new Date().toISOString(),
      checkoutSessionId: 'cs_0VcI7P8SsfmkabvHsGYbxAAw',
      transactionId: '01a22348-9942-74fb-90e6-550b81924b96',
      foreignTransactionId: null,
    });
    const entry = (signature: string) => ({
      startedDateTime: new Date().toISOString(),
      time: 3,
      request: {
        method: 'POST',
        url: 'https://shop.example/webhooks',
        headers: [
          { name: 'Content-Type', value: 'application/json' },
          { name: 'Service-Signature', value: signature },
        ],
        postData: { mimeType: 'application/json', text: body },
      },
      response: { status: 200, headers: [], content: { size: 2, mimeType: 'text/plain', text: 'ok' } },
    });
    const file = path.join(scratch, 'deliveries.har');
    writeFileSync(file, JSON.stringify({ log: { version: '1.2', entries: [entry(signWebhook(body, secret))] } }));
    const right = await judge(['--har', file, '--webhook-secret', secret]);
    expect(right.status['TRAFFIC-021'], right.explain).toBe('passed');
    expect(right.status['TRAFFIC-022']).toBe('passed');
    expect(right.stdout).not.toContain(secret);
    const wrong = await judge(['--har', file, '--webhook-secret', 'whsec_another_secret_0123456789abcd']);
    expect(wrong.status['TRAFFIC-022']).toBe('failed');
    const none = await judge(['--har', file]);
    expect(none.status['TRAFFIC-022']).toBe('skipped');
    expect(none.reason['TRAFFIC-022']).toMatch(/needs --webhook-secret/);
  });

  it('refuses what it cannot read, with a usage error', async () => {
    const bad = path.join(scratch, 'bad.har');
    writeFileSync(bad, '{"not":"a har"}');
    const ran = await cli(['traffic', '--har', bad]);
    expect(ran.code).toBe(2);
    expect(ran.stderr).toMatch(/not a HAR file \(no log.entries\)/);
    const both = await cli(['traffic', '--har', bad, '--ndjson', bad]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--har FILE or as --ndjson FILE \(one of them\)/);
  });
});

/**
 * `payment-conformance proxy` between real clients and the reference server, run as a user
 * runs it: a child process that records until a signal or --duration, then judges. The
 * project's SDK passes; a naive client is caught as its traffic passes and in the verdict;
 * SIGINT writes the reports and exits with the judged status; deliveries under /webhooks/
 * reach the merchant's receiver and are judged as deliveries; past --max-exchanges the
 * oldest exchanges are dropped, and the console says how many; bodies cut at --max-body are
 * marked so in the HAR, and no rule judges them, live or read again.
 *
 * @tags long
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPaymentClient } from '../../client/index.ts';
import { cli, type JsonReport } from '../support/conformance-cli.ts';
import { repoRoot } from '../support/description.ts';
import { paced } from '../support/pace.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { type Org, startTestServer, type TestServer } from '../support/server.ts';

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

interface RunningProxy {
  url: string;
  /** Its output so far. */
  stdout(): string;
  /** Sends the signal(s) and waits for the process to end. */
  stop(...signals: NodeJS.Signals[]): Promise<Ended>;
  ended: Promise<Ended>;
}

interface HarEntry {
  request: {
    method: string;
    url: string;
    headers: Array<{ name: string; value: string }>;
    postData?: { text: string };
  };
  response: { status: number; content: { text: string } };
  _kind: string;
  _client?: string;
}

const children = new Set<ChildProcess>();

/** The proxy on a free loopback port, as `npx payment-conformance proxy` starts it; resolves once it listens. */
function startProxy(args: string[]): Promise<RunningProxy> {
  const bin = path.join(repoRoot, 'conformance/dist/cli.js');
  const child = spawn(process.execPath, [bin, 'proxy', '--listen', '127.0.0.1:0', ...args], {
    cwd: repoRoot,
    env: { ...process.env, NO_COLOR: '1' },
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const ended = new Promise<Ended>((resolve) =>
    child.on('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal, stdout, stderr });
    }),
  );
  return new Promise((resolve, reject) => {
    const listening = () => {
      const url = /listening on (http:\/\/\S+)/.exec(stdout)?.[1];
      if (!url) return;
      child.stdout.off('data', listening);
      resolve({
        url,
        stdout: () => stdout,
        stop: (...signals) => {
          for (const signal of signals.length > 0 ? signals : (['SIGINT'] as const)) child.kill(signal);
          return ended;
        },
        ended,
      });
    };
    child.stdout.on('data', listening);
    void ended.then((e) => reject(new Error(`the proxy ended before it listened: ${e.stdout}${e.stderr}`)));
  });
}

const readJson = <T>(file: string) => JSON.parse(readFileSync(file, 'utf8')) as T;
const harOf = (dir: string) =>
  readJson<{ log: { entries: HarEntry[] } }>(path.join(dir, 'conformance.har')).log.entries;
const statusOf = (report: JsonReport, id: string) => report.results.find((r) => r.id === id)?.status;
const freshDir = () => mkdtempSync(path.join(tmpdir(), 'conformance-proxy-'));

const session = (reference: string, webhookUrl = 'https://shop.example/webhooks') => ({
  type: 'single' as const,
  amount: { total: 12.5 },
  creditorReference: { reference },
  checkoutMethod: 'both' as const,
  redirectUrl: 'https://shop.example/thanks',
  webhookUrl,
});

let t: TestServer;
let org: Org;

beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
  org = await t.organisation();
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await t?.close();
});

describe.concurrent('payment-conformance proxy', () => {
  it('passes the project’s SDK through to the reference server, and writes the reports asked for', async () => {
    const dir = freshDir();
    const proxy = await startProxy(['--target', t.url, '--reporter', 'console,json,har,ndjson', '--out', dir]);
    const { clientId, clientSecret } = org.apiKeys.test;
    const pay = createPaymentClient({ baseUrl: proxy.url, clientId, clientSecret });
    for (const reference of ['order-1', 'order-2']) {
      const created = await pay.createCheckoutSession(session(reference), { idempotencyKey: `${reference}-key` });
      expect((await pay.getCheckoutSession(created.id)).id).toBe(created.id);
    }
    const run = await proxy.stop('SIGTERM');

    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^proxy stopped \(SIGTERM\): 5 requests, 5 exchanges recorded$/m);
    expect(run.stdout).toMatch(/^PASSED\b/m);
    expect(run.stdout).not.toMatch(/^[✗!≠] TRAFFIC-/m);
    const report = readJson<JsonReport>(path.join(dir, 'conformance.json'));
    expect(report.target).toBe(`proxy to ${t.url}/`);
    expect(report.summary.failed).toBe(0);
    for (const id of ['TRAFFIC-001', 'TRAFFIC-003', 'TRAFFIC-007', 'TRAFFIC-030', 'TRAFFIC-031', 'TRAFFIC-032'])
      expect(statusOf(report, id), id).toBe('passed');
    expect(statusOf(report, 'TRAFFIC-036')).toBe('passed');

    // One token, then each create (with its key) and its read, as the target got them.
    const entries = harOf(dir);
    expect(entries.map((e) => `${e.request.method} ${new URL(e.request.url).pathname} ${e.response.status}`)).toEqual([
      'POST /api/token 200',
      'POST /api/checkout-sessions 200',
      expect.stringMatching(/^GET \/api\/checkout-sessions\/cs_\w+ 200$/),
      'POST /api/checkout-sessions 200',
      expect.stringMatching(/^GET \/api\/checkout-sessions\/cs_\w+ 200$/),
    ]);
    expect(entries.every((e) => e._kind === 'api' && e._client === clientId && e.request.url.startsWith(t.url))).toBe(
      true,
    );
    expect(entries[1]!.request.headers).toContainEqual({ name: 'idempotency-key', value: 'order-1-key' });
    const ndjson = readFileSync(path.join(dir, 'conformance.ndjson'), 'utf8').trim().split('\n');
    expect(ndjson).toHaveLength(5);
    for (const file of ['conformance.har', 'conformance.ndjson', 'conformance.json'])
      expect(readFileSync(path.join(dir, file), 'utf8')).not.toContain(clientSecret);
    expect(run.stdout).not.toContain(clientSecret);

    // What the proxy wrote, `traffic` reads and judges alike.
    const again = await cli(['traffic', '--ndjson', path.join(dir, 'conformance.ndjson'), '--out', freshDir()]);
    expect(again.code, again.stdout + again.stderr).toBe(0);
  });

  it('catches a naive client as it passes and in the verdict; SIGINT writes the reports and exits with the judged status', async ({
    expect,
  }) => {
    const dir = freshDir();
    const proxy = await startProxy(['--target', t.url, '--reporter', 'console,json,ndjson', '--out', dir]);
    const { clientId, clientSecret } = org.apiKeys.test;
    const tokens: string[] = [];
    for (const reference of ['naive-1', 'naive-2', 'naive-3']) {
      // A new token before every call, and creates without an Idempotency-Key.
      const token = async () => {
        const answer = await fetch(`${proxy.url}/api/token`, {
          method: 'POST',
          body: new URLSearchParams({ clientId, clientSecret }),
        });
        const { accessToken } = (await answer.json()) as { accessToken: string };
        tokens.push(accessToken);
        return accessToken;
      };
      const created = await fetch(`${proxy.url}/api/checkout-sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await token()}`, 'content-type': 'application/json' },
        body: JSON.stringify(session(reference)),
      });
      expect(created.status).toBe(200);
      const { id } = (await created.json()) as { id: string };
      const read = await fetch(`${proxy.url}/api/checkout-sessions/${id}`, {
        headers: { authorization: `Bearer ${await token()}` },
      });
      expect(read.status).toBe(200);
    }
    // The live line of each check comes as its first failure passes, before the proxy stops.
    await expect.poll(() => proxy.stdout()).toMatch(/^! TRAFFIC-036 /m);
    // A second SIGINT while it stops changes nothing: the reports are whole and the status the verdict's.
    const run = await proxy.stop('SIGINT', 'SIGINT');

    expect(run.code, run.stdout + run.stderr).toBe(1);
    const live = run.stdout.slice(0, run.stdout.indexOf('proxy stopped'));
    expect(live.match(/^[✗!≠] TRAFFIC-\d+ .*$/gm)).toEqual([
      '! TRAFFIC-036 #2 POST /api/checkout-sessions → 200 (should): no Idempotency-Key: a retry may make a second payment',
    ]);
    expect(run.stdout).toMatch(/^proxy stopped \(SIGINT\): 12 requests, 12 exchanges recorded$/m);
    expect(run.stdout).toMatch(/^FAILED: 1 must check failed/m);
    const report = readJson<JsonReport>(path.join(dir, 'conformance.json'));
    expect(statusOf(report, 'TRAFFIC-032')).toBe('failed');
    expect(report.results.find((r) => r.id === 'TRAFFIC-032')!.reason).toMatch(/asked for a new token/);
    expect(report.results.find((r) => r.id === 'TRAFFIC-036')).toMatchObject({ status: 'failed', level: 'should' });
    expect(report.results.filter((r) => r.status === 'failed').map((r) => r.id)).toEqual([
      'TRAFFIC-032',
      'TRAFFIC-036',
    ]);
    // The proxy's traffic is gone with it: a failure is reproduced from the file it wrote.
    const ndjson = path.join(dir, 'conformance.ndjson');
    expect(run.stdout).toContain(
      `reproduce: npx --no -- payment-conformance repro ${path.join(dir, 'conformance.json')} TRAFFIC-032 --ndjson ${ndjson}`,
    );
    const again = await cli([
      'repro',
      path.join(dir, 'conformance.json'),
      'TRAFFIC-032',
      '--ndjson',
      ndjson,
      '--out',
      freshDir(),
    ]);
    expect(again.stdout, again.stderr).toMatch(/REPRODUCED: TRAFFIC-032 fails again/);
    // No secret on the console or in the report: the client's secret, nor any token it was given.
    for (const secret of [clientSecret, ...tokens]) {
      expect(run.stdout).not.toContain(secret);
      for (const file of ['conformance.json', 'conformance.ndjson'])
        expect(readFileSync(path.join(dir, file), 'utf8')).not.toContain(secret);
    }
  });

  it('passes deliveries under /webhooks/ to --receiver, with their query, and judges them as deliveries', async () => {
    const dir = freshDir();
    const receiver: Receiver = await startReceiver({ status: 202, body: '{"ok":true}' });
    try {
      const proxy = await startProxy([
        '--target',
        t.url,
        '--receiver',
        `${receiver.url}/hook?from=proxy`,
        '--webhook-secret',
        org.webhookSigningSecret,
        '--reporter',
        'console,json,har',
        '--out',
        dir,
      ]);
      const created = await fetch(`${proxy.url}/api/checkout-sessions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${org.testToken}`,
          'content-type': 'application/json',
          'idempotency-key': 'd1',
        },
        body: JSON.stringify({ ...session('delivered', `${proxy.url}/webhooks/shop?order=1`), checkoutMethod: 'card' }),
      });
      const { id } = (await created.json()) as { id: string };
      await t.sandbox('POST', `/sandbox/checkout-sessions/${id}/attempts`, { rail: 'card', outcome: 'succeeded' });
      const [delivery] = await receiver.waitFor('/hook?from=proxy&order=1', 1);
      // Stopping waits for the exchanges on their way: the delivery is recorded with the receiver's answer.
      const run = await proxy.stop('SIGINT');

      expect(run.code, run.stdout + run.stderr).toBe(0);
      const report = readJson<JsonReport>(path.join(dir, 'conformance.json'));
      for (const id of ['TRAFFIC-020', 'TRAFFIC-021', 'TRAFFIC-022']) expect(statusOf(report, id), id).toBe('passed');
      const entries = harOf(dir);
      const recorded = entries.find((e) => e._kind === 'delivery')!;
      expect(recorded.request.url).toBe(`${receiver.url}/hook?from=proxy&order=1`);
      expect(recorded.request.headers).toContainEqual({
        name: 'service-signature',
        value: String(delivery!.headers['service-signature']),
      });
      expect(recorded.request.postData?.text).toBe(delivery!.raw.toString('utf8'));
      expect(recorded.response).toMatchObject({ status: 202, content: { text: '{"ok":true}' } });
      expect(readFileSync(path.join(dir, 'conformance.har'), 'utf8')).not.toContain(org.webhookSigningSecret);
    } finally {
      await receiver.close();
    }
  });

  it('with --max-exchanges 5, keeps the last five of 20 exchanges and says how many it dropped; --duration stops it', async () => {
    const dir = freshDir();
    const seconds = Math.ceil(paced(1500) / 1000);
    const proxy = await startProxy([
      '--target',
      t.url,
      '--max-exchanges',
      '5',
      '--duration',
      String(seconds),
      '--reporter',
      'console,har',
      '--out',
      dir,
    ]);
    for (let i = 1; i <= 20; i++) {
      const answer = await fetch(`${proxy.url}/api/checkout-sessions/cs_missing${i}`, {
        headers: { authorization: `Bearer ${org.testToken}` },
      });
      expect(answer.status).toBe(404);
    }
    const run = await proxy.ended;

    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout.match(/^--max-exchanges 5 reached: .*$/gm)).toHaveLength(1);
    expect(run.stdout).toMatch(
      new RegExp(
        `^proxy stopped \\(${seconds} s passed\\): 20 requests, 20 exchanges recorded; the 15 oldest dropped \\(--max-exchanges 5\\), the last 5 judged$`,
        'm',
      ),
    );
    expect(run.stdout).toMatch(/^5 exchanges: 5 answers of the API/m);
    expect(harOf(dir).map((e) => new URL(e.request.url).pathname)).toEqual(
      [16, 17, 18, 19, 20].map((i) => `/api/checkout-sessions/cs_missing${i}`),
    );
  });

  it('marks bodies cut at --max-body in the HAR, and judges none of them, live or read again', async () => {
    const dir = freshDir();
    const proxy = await startProxy(['--target', t.url, '--max-body', '64', '--reporter', 'json,har', '--out', dir]);
    const { clientId, clientSecret } = org.apiKeys.test;
    const pay = createPaymentClient({ baseUrl: proxy.url, clientId, clientSecret });
    await pay.createCheckoutSession(session('cut-1'), { idempotencyKey: 'cut-1-key' });
    const run = await proxy.stop('SIGTERM');
    expect(run.code, run.stdout + run.stderr).toBe(0);

    const create = harOf(dir).find((e) => new URL(e.request.url).pathname === '/api/checkout-sessions')!;
    const content = create.response.content as { text: string; size: number; comment?: string; _cut?: boolean };
    expect(Buffer.byteLength(content.text)).toBe(64);
    expect(content.size).toBeGreaterThan(64);
    expect(content).toMatchObject({ comment: `the first 64 bytes of ${content.size}`, _cut: true });
    expect(create.request.postData?.text).toHaveLength(64);

    // Each body the rules read (the answers' JSON, the create's amount) is cut: not judged, never failed.
    const live = readJson<JsonReport>(path.join(dir, 'conformance.json'));
    const reread = freshDir();
    const again = await cli([
      'traffic',
      '--har',
      path.join(dir, 'conformance.har'),
      '--reporter',
      'json',
      '--out',
      reread,
    ]);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const judged = readJson<JsonReport>(path.join(reread, 'conformance.json'));
    for (const report of [live, judged]) {
      expect(statusOf(report, 'TRAFFIC-003')).toBe('skipped');
      expect(statusOf(report, 'TRAFFIC-038')).toBe('skipped');
    }
  });
});

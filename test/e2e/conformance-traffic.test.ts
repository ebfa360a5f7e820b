/**
 * The traffic reports (har, ndjson), through the CLI as a user runs it, against the
 * in-process reference server behind a mutating proxy that breaks one rule and notes every
 * secret that passes through it: every exchange and delivery exported, each with its
 * check, no secret in the files; and what the JSON report keeps of how the run was asked
 * for.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, explain, runSuite, type CliRun } from '../support/conformance-cli.ts';
import { parse, pathOf } from '../support/conformance-variants.ts';
import { type Message, type MutatingProxy, type Mutation, startMutatingProxy } from '../support/mutating-proxy.ts';
import { paced } from '../support/pace.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';

/** What the suite's HAR entries hold (HAR 1.2, with the suite's own `_` fields). */
interface Entry {
  startedDateTime: string;
  time: number;
  request: {
    method: string;
    url: string;
    httpVersion: string;
    cookies: unknown[];
    headers: Array<{ name: string; value: string }>;
    queryString: unknown[];
    postData?: { mimeType: string; text: string };
    headersSize: number;
    bodySize: number;
  };
  response: {
    status: number;
    statusText: string;
    headers: Array<{ name: string; value: string }>;
    content: { size: number; mimeType: string; text: string };
    redirectURL: string;
  };
  cache: object;
  timings: { send: number; wait: number; receive: number };
  _checkId: string;
  _kind: 'api' | 'delivery' | 'client';
}
interface Har {
  log: { version: string; creator: { name: string; version: string }; entries: Entry[] };
}

const VERSION = JSON.parse(readFileSync(path.resolve('conformance/package.json'), 'utf8')).version as string;
const SECRET_FIELDS = ['clientSecret', 'webhookSigningSecret', 'accessToken'];

/** Every secret value in a JSON body, by the names the service and its sandbox give them. */
function secretsIn(value: unknown, into: Set<string>): void {
  if (!value || typeof value !== 'object') return;
  for (const [key, inner] of Object.entries(value)) {
    if (SECRET_FIELDS.includes(key) && typeof inner === 'string') into.add(inner);
    else secretsIn(inner, into);
  }
}

/** A proxy mutation that also notes every secret the target hands out (keys, signing secrets, tokens). */
function noting(secrets: Set<string>, mutation: Mutation = {}): Mutation {
  return {
    ...mutation,
    response: async (m, r, k, forward) => {
      const reply = mutation.response ? await mutation.response(m, r, k, forward) : r;
      secretsIn(parse(reply.body), secrets);
      return reply;
    },
  };
}

/** The broken target: the token endpoint takes a JSON body as if it were the form (TOKEN-002 must catch it). */
function jsonTokenBodyAsForm(m: Message): Message {
  if (pathOf(m) !== '/api/token' || !String(m.headers['content-type']).includes('json')) return m;
  return {
    ...m,
    headers: { ...m.headers, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(parse(m.body) ?? {}).toString(),
  };
}

const readHar = (dir: string) => JSON.parse(readFileSync(path.join(dir, 'conformance.har'), 'utf8')) as Har;
const header = (headers: Array<{ name: string; value: string }>, name: string) =>
  headers.find((h) => h.name.toLowerCase() === name)?.value;

/** Fails with the secrets found in a report file's text (none may be). */
function expectNoSecret(file: string, secrets: Set<string>): void {
  const text = readFileSync(file, 'utf8');
  expect([...secrets].filter((s) => text.includes(s)).map((s) => `${s.slice(0, 8)}…`)).toEqual([]);
}

let t: TestServer;
let broken: MutatingProxy;
const secrets = new Set<string>([SANDBOX_TOKEN]);
/** The API requests the suite sent through the broken target, as method and path with query. */
const sent = new Set<string>();
let run: CliRun;

beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
  broken = await startMutatingProxy(t.url, {
    ...noting(secrets),
    request: (m) => {
      if (pathOf(m).startsWith('/api/')) sent.add(`${m.method} ${m.url}`);
      return jsonTokenBodyAsForm(m);
    },
  });
  run = await runSuite([
    '--base-url',
    broken.url,
    '--sandbox-token',
    SANDBOX_TOKEN,
    '--only',
    'TOKEN-*,AUTH-008,HOOK-001',
    '--reporter',
    'json,har,ndjson',
  ]);
}, paced(120_000));
afterAll(async () => {
  await broken?.close();
  await t?.close();
});

describe('the traffic reports of run', () => {
  it('finds the broken rule, and only it', () => {
    expect(run.code, explain(run)).toBe(1);
    expect(run.report!.results.filter((r) => r.status !== 'passed').map((r) => `${r.id} ${r.status}`)).toEqual([
      'TOKEN-002 failed',
    ]);
  });

  it('writes a HAR 1.2 file of every exchange with the target, each entry naming its check', () => {
    const har = readHar(run.dir);
    expect(har.log.version).toBe('1.2');
    expect(har.log.creator).toEqual({ name: 'payment-conformance', version: VERSION });
    const checks = new Set([...run.report!.results.map((r) => r.id), 'PREFLIGHT']);
    for (const e of har.log.entries) {
      expect(checks, e._checkId).toContain(e._checkId);
      expect(new Date(e.startedDateTime).toISOString()).toBe(e.startedDateTime);
      expect(e.time).toBeGreaterThanOrEqual(0);
      expect(e.timings.wait).toBe(e.time);
      expect(e.request).toMatchObject({ httpVersion: 'HTTP/1.1', cookies: [], headersSize: -1 });
      expect(Array.isArray(e.request.queryString)).toBe(true);
      expect(e.response.status).toBeGreaterThanOrEqual(200);
      expect(e.response.content.size).toBeGreaterThanOrEqual(0);
      if (e.request.postData) expect(e.request.postData.mimeType).toBe(header(e.request.headers, 'content-type') ?? '');
    }
    // Every API request the target saw is an entry, and every API entry a request it saw,
    // but the reachability probe made before the run, which no check judges.
    const api = har.log.entries.filter((e) => e._kind === 'api');
    const local = (url: string) => url.slice(broken.url.length);
    const probe = 'GET /api/checkout-sessions/cs_conformance_preflight';
    expect(sent).toContain(probe);
    expect(new Set(api.map((e) => `${e.request.method} ${local(e.request.url)}`))).toEqual(
      new Set([...sent].filter((r) => r !== probe)),
    );
    for (const id of run.report!.results.map((r) => r.id))
      expect(
        api.some((e) => e._checkId === id),
        id,
      ).toBe(true);
    // The failure's exchange is there as the target answered it.
    const jsonBody = api.find((e) => e._checkId === 'TOKEN-002' && e.request.postData?.mimeType === 'application/json');
    expect(jsonBody?.response.status).toBe(200);
  });

  it('has the deliveries the target made to the suite’s receiver, under the check that awaited them', () => {
    const deliveries = readHar(run.dir).log.entries.filter((e) => e._kind === 'delivery');
    expect(deliveries.map((e) => e._checkId)).toEqual(expect.arrayContaining(['PREFLIGHT', 'HOOK-001']));
    for (const d of deliveries) {
      expect(d.request.method).toBe('POST');
      expect(new URL(d.request.url).pathname).toMatch(new RegExp(`^/hooks/${d._checkId}/`));
      expect(header(d.request.headers, 'service-signature')).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(JSON.parse(d.request.postData!.text)).toMatchObject({ event: 'checkout_session.completed' });
      expect(d.response.status).toBe(200);
    }
  });

  it('shows no secret of the run, only placeholders for them', () => {
    // The run's secrets: the sandbox token, every organisation's key secrets and signing
    // secret, and every access token the target issued.
    expect(secrets.size).toBeGreaterThan(10);
    for (const file of ['conformance.har', 'conformance.ndjson']) expectNoSecret(path.join(run.dir, file), secrets);
    const text = readFileSync(path.join(run.dir, 'conformance.har'), 'utf8');
    expect(text).toContain('clientSecret=$CLIENT_SECRET');
    expect(text).toContain('Bearer $TOKEN');
    expect(text).toContain('\\"accessToken\\":\\"$ACCESS_TOKEN\\"');
  });

  it('writes the same entries as NDJSON, one a line', () => {
    const lines = readFileSync(path.join(run.dir, 'conformance.ndjson'), 'utf8').trimEnd().split('\n');
    expect(lines.map((line) => JSON.parse(line))).toEqual(readHar(run.dir).log.entries);
  });

  it('keeps in the JSON report what a replay needs, and no secret', () => {
    const report = run.report!;
    expect(report.invocation).toEqual({
      command: 'run',
      only: 'TOKEN-*,AUTH-008,HOOK-001',
      seed: expect.any(Number),
      explore: { seconds: 0 },
      concurrency: 8,
      settleTimeoutS: 30,
      strictAssumptions: false,
    });
    expect(run.stdout + JSON.stringify(report.invocation)).not.toContain(SANDBOX_TOKEN);
  });
});

describe('the traffic reports of receiver and client', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('receiver: every delivery sent and the answer, under its check, without the signing secret', async () => {
    const secret = 'whsec_conformance_traffic_test_secret';
    const out = mkdtempSync(path.join(tmpdir(), 'receiver-traffic-'));
    const checked = await cli([
      'receiver',
      '--url',
      `${receiver.url}/hooks`,
      '--secret',
      secret,
      '--only',
      'RCV-001,RCV-010',
      '--reporter',
      'har,json',
      '--out',
      out,
    ]);
    expect(checked.code, checked.stdout + checked.stderr).toBe(0);
    const entries = readHar(out).log.entries;
    expect(entries.length).toBe(receiver.deliveries.length);
    expect(new Set(entries.map((e) => e._checkId))).toEqual(new Set(['RCV-001', 'RCV-010']));
    for (const e of entries) {
      expect(e._kind).toBe('delivery');
      expect(e.request.url).toBe(`${receiver.url}/hooks`);
      expect(header(e.request.headers, 'service-signature')).toMatch(/t=\d+,v1=[0-9a-f]{64}/);
      expect(e.response.status).toBe(200);
    }
    expectNoSecret(path.join(out, 'conformance.har'), new Set([secret]));
  });

  it('client: every request of the client and what it got, under its check, without its secrets', async () => {
    const clientSecrets = new Set<string>([SANDBOX_TOKEN]);
    const noted = await startMutatingProxy(t.url, noting(clientSecrets));
    try {
      const out = mkdtempSync(path.join(tmpdir(), 'client-traffic-'));
      const checked = await cli([
        'client',
        '--base-url',
        noted.url,
        '--sandbox-token',
        SANDBOX_TOKEN,
        '--driver-module',
        '@payment-service/conformance/drivers/sdk',
        '--only',
        'CLIENT-001',
        '--reporter',
        'har',
        '--out',
        out,
      ]);
      expect(checked.code, checked.stdout + checked.stderr).toBe(0);
      const entries = readHar(out).log.entries;
      expect(entries.length).toBeGreaterThan(0);
      for (const e of entries) {
        expect(e._checkId).toBe('CLIENT-001');
        expect(e._kind).toBe('client');
      }
      expect(entries.some((e) => new URL(e.request.url).pathname === '/api/token')).toBe(true);
      expect(clientSecrets.size).toBeGreaterThan(2);
      expectNoSecret(path.join(out, 'conformance.har'), clientSecrets);
    } finally {
      await noted.close();
    }
  });
});

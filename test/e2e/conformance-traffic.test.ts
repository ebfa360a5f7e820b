/**
 * The traffic reports (har, ndjson) and `replay`, through the CLI as a user runs them,
 * against the in-process reference server behind a mutating proxy that breaks one rule and
 * notes every secret that passes through it: every exchange and delivery exported, each
 * with its check, no secret in the files; what the JSON report keeps of how the run was
 * asked for; a failed check replayed against the broken target still fails, against the
 * real server it is fixed.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
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
    // `adapter`: the sandbox adapter's own calls to the target, which the report holds too.
    const checks = new Set([...run.report!.results.map((r) => r.id), 'PREFLIGHT', 'adapter']);
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
    const adapterCalls = har.log.entries.filter((e) => e._checkId === 'adapter');
    expect(adapterCalls.length).toBeGreaterThan(0);
    for (const e of adapterCalls) expect(new URL(e.request.url).pathname).toMatch(/^\/sandbox\//);
    const api = har.log.entries.filter((e) => e._kind === 'api' && e._checkId !== 'adapter');
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
      concurrency: 16,
      settleTimeoutS: 30,
      strictAssumptions: false,
      // The target's flags as typed, the token as its shell variable: what a reproduction runs with.
      targetFlags: expect.stringMatching(/^--base-url http:\/\/127\.0\.0\.1:\d+ --sandbox-token "\$SANDBOX_TOKEN"$/),
    });
    expect(run.stdout + JSON.stringify(report.invocation)).not.toContain(SANDBOX_TOKEN);
  });
});

describe('replay', () => {
  const replay = (target: string, extra: string[] = []) => {
    const out = mkdtempSync(path.join(tmpdir(), 'replay-'));
    return cli([
      'replay',
      path.join(run.dir, 'conformance.json'),
      '--base-url',
      target,
      '--sandbox-token',
      SANDBOX_TOKEN,
      '--out',
      out,
      ...extra,
    ]).then((r) => ({ ...r, out }));
  };

  it('says STILL FAILING and exits 1 against the broken target', async () => {
    const again = await replay(broken.url);
    expect(again.code, again.stdout + again.stderr).toBe(1);
    expect(again.stdout).toMatch(/^STILL FAILING\s+TOKEN-002\s/m);
    expect(again.stdout).toContain('Replay: 0 fixed, 1 still failing, 0 not judged, of 1 failed check');
  });

  it('says FIXED and exits 0 against the real server, with the report’s seed', async () => {
    const again = await replay(t.url, ['--reporter', 'json,har']);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^FIXED\s+TOKEN-002\s/m);
    expect(again.stdout).toContain('Replay: 1 fixed, 0 still failing, 0 not judged, of 1 failed check');
    const replayed = JSON.parse(readFileSync(path.join(again.out, 'conformance.json'), 'utf8'));
    expect(replayed.results.map((r: { id: string }) => r.id)).toEqual(['TOKEN-002']);
    expect(replayed.invocation).toMatchObject({
      only: 'TOKEN-002',
      seed: run.report!.invocation!.seed,
      explore: { seconds: 0 },
    });
    expect(readHar(again.out).log.entries.every((e) => ['TOKEN-002', 'adapter'].includes(e._checkId))).toBe(true);
    // Nothing failed in the replay's own report: replaying it has nothing to do.
    const nothing = await cli(['replay', path.join(again.out, 'conformance.json'), '--base-url', t.url]);
    expect(nothing.code).toBe(0);
    expect(nothing.stdout).toContain('Nothing to replay');
  });

  it('says NOT JUDGED, and exits 2, for a check this version does not have', async () => {
    const report = JSON.parse(readFileSync(path.join(run.dir, 'conformance.json'), 'utf8'));
    report.results.push({ ...report.results[0], id: 'GONE-001', status: 'failed' });
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'replay-')), 'edited.json');
    writeFileSync(file, JSON.stringify(report));
    const again = await cli(['replay', file, '--base-url', t.url, '--sandbox-token', SANDBOX_TOKEN, '--reporter', '']);
    expect(again.code, again.stdout + again.stderr).toBe(2);
    expect(again.stdout).toMatch(/^FIXED\s+TOKEN-002\s/m);
    expect(again.stdout).toMatch(/^NOT JUDGED\s+GONE-001\s.*no such check/m);
  });

  it('exits 2 for a file that is not a report', async () => {
    const again = await cli(['replay', path.resolve('package.json'), '--base-url', t.url]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('is not a JSON report of payment-conformance');
  });
});

describe('a check of the others’ traffic, replayed', () => {
  let textPlain: MutatingProxy;
  let first: CliRun;
  beforeAll(async () => {
    // Reads answer text/plain: RESP-002 judges the answers READ-001 received.
    textPlain = await startMutatingProxy(t.url, {
      response: (m, r) =>
        m.method === 'GET' && r.status === 200 ? { ...r, headers: { ...r.headers, 'content-type': 'text/plain' } } : r,
    });
    first = await runSuite([
      '--base-url',
      textPlain.url,
      '--sandbox-token',
      SANDBOX_TOKEN,
      '--only',
      'READ-001,RESP-002',
    ]);
  }, paced(60_000));
  afterAll(async () => {
    await textPlain?.close();
  });

  it('runs again with the whole selection of its report, and is judged on that traffic', async () => {
    expect(first.report!.results.filter((r) => r.status === 'failed').map((r) => r.id)).toEqual(['RESP-002']);
    const file = path.join(first.dir, 'conformance.json');
    const still = await cli(['replay', file, '--base-url', textPlain.url, '--sandbox-token', SANDBOX_TOKEN]);
    expect(still.code, still.stdout).toBe(1);
    expect(still.stdout).toContain("with the report's whole selection (READ-001,RESP-002)");
    expect(still.stdout).toMatch(/^STILL FAILING\s+RESP-002\s/m);
    const fixed = await cli(['replay', file, '--base-url', t.url, '--sandbox-token', SANDBOX_TOKEN]);
    expect(fixed.code, fixed.stdout).toBe(0);
    expect(fixed.stdout).toMatch(/^FIXED\s+RESP-002\s/m);
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
    // A report of receiver is replayed by receiver itself, which says how.
    const again = await cli(['replay', path.join(out, 'conformance.json'), '--base-url', t.url]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('is a report of receiver');
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
      expect(entries.some((e) => new URL(e.request.url).pathname.endsWith('/api/token'))).toBe(true);
      expect(clientSecrets.size).toBeGreaterThan(2);
      expectNoSecret(path.join(out, 'conformance.har'), clientSecrets);
    } finally {
      await noted.close();
    }
  });
});

/**
 * `npm run bench`: throughput, p99 latency and memory of the reference server on loopback,
 * against a bare node:http "ceiling" measured the same way.
 *
 * 1. Starts the ceiling (bench/ceiling.ts) and the payment server (its compiled bin,
 *    server/dist/cli.js, on a temporary SQLite file or, with `--db`, on PostgreSQL, with a
 *    random sandbox token), each in its own process. `npm run bench` builds first, as
 *    `npm start` does.
 * 2. Provisions an organisation through the sandbox API, gets a bearer token, creates one
 *    checkout session.
 * 3. Runs autocannon against, in this order: the ceiling; GET /api/checkout-sessions/{id};
 *    the ceiling; POST /api/checkout-sessions with a fresh Idempotency-Key on every
 *    request; the ceiling. Each target's ratio is taken against the mean of the ceiling
 *    runs just before and after it: the machine's speed drifts by several percent within
 *    a minute, and a bracketing baseline cancels a steady drift. Each run warms up, then
 *    measures on the same connections; req/s and the latency percentiles are those of the
 *    measured window, from every answer's latency (exact, not binned).
 * 4. Samples the payment server's VmRSS every 200 ms (and VmHWM at the end), by phase.
 * 5. Prints a Markdown table with the targets, writes bench/results/latest.json. It also
 *    prints each target's CPU time per request and flags measurements during which other
 *    processes kept the machine busy (req/s and p99 are then understated) or the
 *    hypervisor took the CPUs for other guests (steal, from /proc/stat).
 *
 * Both children are stopped (SIGTERM, SIGKILL after 5 s) on success, failure or Ctrl-C.
 *
 * Exits non-zero when any answer was not 200 or any request failed (errors, timeouts);
 * missing a performance target is reported, not failed.
 *
 * BENCH_DURATION (seconds, default 8), BENCH_CONNECTIONS (default 50) and BENCH_WARMUP
 * (seconds, default 2) tune the run.
 *
 * `--db postgres://…` (a role that may create databases) measures the PostgreSQL store
 * instead, twice: one server, then two servers on one database with the connections split
 * evenly between them. Each configuration gets a fresh database, dropped afterwards, and
 * its own ceiling runs.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { sandboxAdapter } from '@payment-service/conformance';
import {
  machineStealMs,
  processCpuMs,
  sampleMemory,
  startChild,
  stopAll,
  waitUntilHealthy,
  type Child,
  type MemoryReport,
} from './processes.ts';

// --- autocannon, typed here (only the parts used) --------------------------------------

interface AcRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (request: AcRequest, context: Record<string, unknown>) => AcRequest;
  onResponse?: (
    status: number,
    body: string,
    context: Record<string, unknown>,
    headers: Record<string, unknown>,
  ) => void;
}

interface AcOptions {
  url: string;
  connections: number;
  duration: number;
  timeout?: number;
  requests: AcRequest[];
}

/** The parts of autocannon's result read here (latencies and rates are taken per answer instead). */
interface AcResult {
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodeStats: Record<string, { count: number }>;
}

type AcInstance = EventEmitter & PromiseLike<AcResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as (options: AcOptions) => AcInstance;

// --- configuration ----------------------------------------------------------------------

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return n;
}

const DURATION = positive('BENCH_DURATION', 8);
const CONNECTIONS = Math.round(positive('BENCH_CONNECTIONS', 50));
const WARMUP = positive('BENCH_WARMUP', 2);

const TARGETS = {
  getRatio: 0.3,
  postRatio: 0.15,
  p99Ms: 20,
  rssMb: 200,
};

/** Fraction (0–1) of all CPUs' time spent busy over `ms`: other work makes the numbers noisy. */
const cpuTotals = () =>
  os.cpus().reduce(
    (acc, { times }) => ({
      idle: acc.idle + times.idle,
      all: acc.all + times.user + times.nice + times.sys + times.irq + times.idle,
    }),
    { idle: 0, all: 0 },
  );

async function cpuBusy(ms: number): Promise<number> {
  const a = cpuTotals();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const b = cpuTotals();
  return b.all > a.all ? 1 - (b.idle - a.idle) / (b.all - a.all) : 0;
}
const BUSY = 0.2;
/** Above this many CPUs used by other processes during a measurement, its numbers are flagged. */
const OTHER_CPUS = 0.25;
/** Above this share of the machine's CPU time stolen by the hypervisor during a measurement, its numbers are flagged. */
const STEAL_PERCENT = 2;

const SESSION_BODY = {
  type: 'single',
  amount: { total: 25.5 },
  creditorReference: { reference: 'BENCH-1' },
  redirectUrl: 'https://shop.example.com/done',
  checkoutMethod: 'both',
};

// --- measuring ------------------------------------------------------------------------

interface Measurement {
  target: string;
  urls: string[];
  /** Answers per second over the measured window. */
  reqPerSec: number;
  /** Exact percentiles of the measured window's latencies (every answer kept). */
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Answers in the measured window. */
  total: number;
  /** Highest latency during the warm-up, when the connections were opened (see the README). */
  warmupMaxMs: number;
  /** Over the whole run, warm-up included. */
  statusCodes: Record<string, number>;
  errors: number;
  timeouts: number;
  non2xx: number;
  /** Answers other than 200 (other 2xx included) plus request errors (timeouts included), warm-up included. */
  failures: number;
  /** CPU time the target's process spent per answered request (less sensitive to a busy machine than req/s). */
  serverCpuMsPerRequest: number | null;
  /** CPUs the target's process kept busy on average. */
  serverCpus: number | null;
  /** CPUs kept busy by everything else than the target and this benchmark process (other work on the machine). */
  otherCpus: number;
  /** Share (%) of the machine's CPU time the hypervisor gave to other guests during the window; null without /proc. */
  stealPercent: number | null;
  samples: string[];
}

interface Target {
  name: string;
  /** One server, or several sharing the load (the connections split evenly between them). */
  urls: string[];
  pids: number[];
  /** Called as the warm-up starts (to label memory samples). */
  onStart?: () => void;
  request: () => AcRequest;
}

/** CPU time of all the `pids`, in ms; null without /proc. */
function serversCpuMs(pids: number[]): number | null {
  let total = 0;
  for (const pid of pids) {
    const ms = processCpuMs(pid);
    if (ms === null) return null;
    total += ms;
  }
  return total;
}

/** The value below which `fraction` of the sorted `values` lie (nearest rank). */
function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * fraction) - 1))]!;
}

/**
 * One autocannon run of WARMUP + DURATION seconds: the warm-up opens the connections and
 * brings the server to a steady state, and the measured window that follows runs on the
 * same connections. (Separate runs would open 50 new connections at the window's start;
 * libuv accepts one connection per event-loop turn, so on a loaded server the last of them
 * waits for 50 turns, a start-up effect that is reported as the warm-up's max instead.)
 * Every answer's latency in the window is kept, so the percentiles are exact.
 */
async function measure(target: Target): Promise<Measurement> {
  const samples: string[] = [];
  const note = (text: string) => {
    if (samples.length < 5) samples.push(text);
  };
  const request = target.request();
  const latencies: number[] = [];
  let measuring = false;
  let warmupMaxMs = 0;
  let failures = 0;
  let lastAnswerAt = 0;

  target.onStart?.();
  const connections = Math.max(1, Math.round(CONNECTIONS / target.urls.length));
  process.stdout.write(
    `- ${target.name}: warm-up ${WARMUP} s, then ${DURATION} s measured on the same ${CONNECTIONS} connections${target.urls.length > 1 ? ` (${connections} to each of ${target.urls.length} servers)` : ''}… `,
  );
  const instances = target.urls.map((url) =>
    autocannon({
      url,
      connections,
      duration: WARMUP + DURATION,
      timeout: 10,
      requests: [
        {
          ...request,
          onResponse: (status, body) => {
            if (status !== 200) note(`${status}: ${body.slice(0, 300)}`);
          },
        },
      ],
    }),
  );
  for (const instance of instances) {
    instance.on('reqError', (error: Error) => note(`request error: ${error.message}`));
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status !== 200) failures++;
      if (measuring) {
        latencies.push(ms);
        lastAnswerAt = performance.now();
      } else if (ms > warmupMaxMs) warmupMaxMs = ms;
    });
  }
  let before:
    | {
        wall: number;
        server: number | null;
        self: NodeJS.CpuUsage;
        machine: ReturnType<typeof cpuTotals>;
        steal: ReturnType<typeof machineStealMs>;
      }
    | undefined;
  const windowStart = setTimeout(() => {
    measuring = true;
    before = {
      wall: performance.now(),
      server: serversCpuMs(target.pids),
      self: process.cpuUsage(),
      machine: cpuTotals(),
      steal: machineStealMs(),
    };
  }, WARMUP * 1000);
  const runs = await Promise.all(instances);
  clearTimeout(windowStart);
  if (!before) throw new Error(`${target.name}: the run ended before its measured window began`);
  // The window ends with its last answer: autocannon settles a little after it.
  const wallMs = Math.max(1, lastAnswerAt - before.wall);
  const serverAfter = serversCpuMs(target.pids);
  const selfUsage = process.cpuUsage(before.self);
  const machine = cpuTotals();
  const steal = machineStealMs();
  const stealPercent =
    before.steal && steal && steal.all > before.steal.all
      ? (100 * (steal.steal - before.steal.steal)) / (steal.all - before.steal.all)
      : null;
  const serverMs = before.server === null || serverAfter === null ? null : serverAfter - before.server;
  const machineBusyMs = machine.all - before.machine.all - (machine.idle - before.machine.idle);
  const otherCpus = Math.max(
    0,
    (machineBusyMs - (serverMs ?? 0) - (selfUsage.user + selfUsage.system) / 1000) / wallMs,
  );

  const sorted = Float64Array.from(latencies).sort();
  const statusCodes: Record<string, number> = {};
  for (const run of runs)
    for (const [code, { count }] of Object.entries(run.statusCodeStats))
      statusCodes[code] = (statusCodes[code] ?? 0) + Number(count);
  const sum = (field: 'errors' | 'timeouts' | 'non2xx') => runs.reduce((total, run) => total + run[field], 0);
  const measurement: Measurement = {
    target: target.name,
    urls: target.urls,
    reqPerSec: latencies.length / (wallMs / 1000),
    p50Ms: round(percentile(sorted, 0.5), 2),
    p90Ms: round(percentile(sorted, 0.9), 2),
    p99Ms: round(percentile(sorted, 0.99), 2),
    maxMs: round(percentile(sorted, 1), 2),
    total: latencies.length,
    warmupMaxMs: round(warmupMaxMs, 2),
    statusCodes,
    errors: sum('errors'),
    timeouts: sum('timeouts'),
    non2xx: sum('non2xx'),
    // autocannon's `errors` already counts timeouts.
    failures: failures + sum('errors'),
    samples,
    serverCpuMsPerRequest: serverMs === null || latencies.length === 0 ? null : round(serverMs / latencies.length, 3),
    serverCpus: serverMs === null ? null : round(serverMs / wallMs, 2),
    otherCpus: round(otherCpus, 2),
    stealPercent: stealPercent === null ? null : round(stealPercent, 1),
  };
  console.log(
    `${Math.round(measurement.reqPerSec)} req/s, p99 ${measurement.p99Ms.toFixed(1)} ms${measurement.failures ? `, ${measurement.failures} FAILED` : ''}`,
  );
  return measurement;
}

// --- talking to the payment server ------------------------------------------------------

async function call<T>(
  base: string,
  method: string,
  pathname: string,
  init: { token?: string; json?: unknown; form?: Record<string, string> },
): Promise<T> {
  const headers: Record<string, string> = {};
  let body: string | undefined;
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(init.json);
  }
  if (init.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(init.form).toString();
  }
  const res = await fetch(`${base}${pathname}`, { method, headers, body });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${pathname} answered ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

interface Provisioned {
  orgId: string;
  clientId: string;
  clientSecret: string;
  sessionId: string;
}

async function provision(base: string, sandboxToken: string): Promise<Provisioned> {
  const org = await sandboxAdapter({ baseUrl: base, token: sandboxToken }).createOrganisation!({
    settlementCurrency: 'NZD',
    cardEnabled: true,
    openBankingApproved: true,
    settlementAccount: true,
  });
  const { clientId, clientSecret } = org.apiKeys.test;
  const token = await accessToken(base, clientId, clientSecret);
  const session = await call<{ id: string }>(base, 'POST', '/api/checkout-sessions', { token, json: SESSION_BODY });
  return { orgId: org.id, clientId, clientSecret, sessionId: session.id };
}

async function accessToken(base: string, clientId: string, clientSecret: string): Promise<string> {
  const answer = await call<{ accessToken: string }>(base, 'POST', '/api/token', { form: { clientId, clientSecret } });
  return answer.accessToken;
}

// --- report ---------------------------------------------------------------------------

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;
const mb = (kb: number | null) => (kb === null ? null : Math.round((kb / 1024) * 10) / 10);
const mark = (met: boolean) => (met ? '✅ met' : '❌ not met');

/** A target measured between two ceiling runs, and the baseline they give it. */
interface Bracketed {
  measurement: Measurement;
  /** Mean req/s of the ceiling runs just before and just after the target's. */
  ceilingReqPerSec: number;
  ratio: number;
}

function bracket(before: Measurement, measurement: Measurement, after: Measurement): Bracketed {
  const ceilingReqPerSec = (before.reqPerSec + after.reqPerSec) / 2;
  return { measurement, ceilingReqPerSec, ratio: measurement.reqPerSec / ceilingReqPerSec };
}

/** `measurements` in the order they ran: ceiling, GET, ceiling, POST, ceiling; a memory report per server. */
function report(
  label: string,
  measurements: Measurement[],
  get: Bracketed,
  post: Bracketed,
  memories: MemoryReport[],
  busyBefore: number,
) {
  const peaks = memories.map((m) => mb(m.peakRssKb));
  const peakMb = peaks.includes(null) ? null : Math.max(...(peaks as number[]));
  const noisy = measurements.filter((m) => m.otherCpus > OTHER_CPUS);
  const stolen = measurements.filter((m) => (m.stealPercent ?? 0) > STEAL_PERCENT);
  const ratioCell = (m: Measurement) => {
    const b = [get, post].find((x) => x.measurement === m);
    return b ? `${b.ratio.toFixed(3)} (of ${Math.round(b.ceilingReqPerSec)})` : '';
  };
  const targets = [
    {
      target: `GET ≥ ${TARGETS.getRatio} × ceiling`,
      actual: `${get.ratio.toFixed(3)} ×`,
      met: get.ratio >= TARGETS.getRatio,
    },
    {
      target: `POST ≥ ${TARGETS.postRatio} × ceiling`,
      actual: `${post.ratio.toFixed(3)} ×`,
      met: post.ratio >= TARGETS.postRatio,
    },
    {
      target: `GET p99 < ${TARGETS.p99Ms} ms at ${CONNECTIONS} connections`,
      actual: `${get.measurement.p99Ms.toFixed(1)} ms`,
      met: get.measurement.p99Ms < TARGETS.p99Ms,
    },
    {
      target: `POST p99 < ${TARGETS.p99Ms} ms at ${CONNECTIONS} connections`,
      actual: `${post.measurement.p99Ms.toFixed(1)} ms`,
      met: post.measurement.p99Ms < TARGETS.p99Ms,
    },
    {
      target: `peak RSS < ${TARGETS.rssMb} MB${memories.length > 1 ? ' (each server)' : ''}`,
      actual: peakMb === null ? 'unknown (no /proc)' : `${peakMb} MB`,
      met: peakMb !== null && peakMb < TARGETS.rssMb,
    },
  ];

  const lines = [
    '',
    `### ${label} (${DURATION} s per target after ${WARMUP} s warm-up, ${CONNECTIONS} connections, loopback, Node ${process.version}, ${os.cpus().length} CPUs)`,
    '',
    ...(busyBefore > BUSY
      ? [
          `> Before the run the machine was already ${Math.round(busyBefore * 100)} % busy (${os.cpus().length} CPUs): other work competed for the CPU, so these numbers are low and noisy.`,
          '',
        ]
      : []),
    '| target (in the order run) | req/s | p50 ms | p99 ms | ratio to the ceiling runs around it | steal |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...measurements.map(
      (m) =>
        `| ${m.target} | ${Math.round(m.reqPerSec)} | ${m.p50Ms.toFixed(1)} | ${m.p99Ms.toFixed(1)} | ${ratioCell(m)} | ${m.stealPercent === null ? '?' : `${m.stealPercent.toFixed(1)} %`} |`,
    ),
    '',
    "Steal: the share of the machine's CPU time its hypervisor gave to other guests during the measured window (`/proc/stat`).",
    '',
    `Highest latency while the ${CONNECTIONS} connections opened (warm-up): ${measurements.map((m) => `${m.target.split(' (')[0]} ${Math.round(m.warmupMaxMs)} ms`).join('; ')}.`,
    '',
    `Server CPU per request: ${measurements.map((m) => `${m.target.split(' (')[0]} ${m.serverCpuMsPerRequest ?? '?'} ms (${m.serverCpus ?? '?'} CPU busy)`).join('; ')}.`,
    ...(stolen.length > 0
      ? [
          '',
          `> The hypervisor took ${stolen.map((m) => `${m.stealPercent} % of the CPU time during ${m.target.split(' (')[0]}`).join(', ')}: req/s is then understated and p99 overstated.`,
        ]
      : []),
    ...(noisy.length > 0
      ? [
          '',
          `> Other work kept ${noisy.map((m) => `${m.otherCpus} CPU busy during ${m.target.split(' (')[0]}`).join(', ')}: req/s and p99 are understated; compare CPU per request instead.`,
        ]
      : []),
    '',
    ...memories.flatMap((memory, i) => [
      `Peak RSS of the payment server${memories.length > 1 ? ` ${i + 1}` : ''}: ${mb(memory.peakRssKb) ?? 'unknown'} MB (VmHWM ${mb(memory.hwmKb) ?? '?'} MB, highest of ${memory.samples} VmRSS samples every ${memory.intervalMs} ms ${mb(memory.peakSampledRssKb) ?? '?'} MB, during ${memory.peakPhase ?? '?'})`,
      `Peak RSS by phase: ${Object.entries(memory.peakByPhaseKb)
        .map(([phase, kb]) => `${phase} ${mb(kb)} MB`)
        .join('; ')}`,
    ]),
    '',
    '| target | actual | status |',
    '| --- | ---: | --- |',
    ...targets.map((t) => `| ${t.target} | ${t.actual} | ${mark(t.met)} |`),
    '',
  ];
  console.log(lines.join('\n'));
  return targets;
}

// --- main -----------------------------------------------------------------------------

/** What a run measures: the server on a fresh SQLite file, or on PostgreSQL, one server or several. */
interface Configuration {
  label: string;
  servers: number;
  /** A fresh database for the run (its `--db` value), and how to remove it. */
  database(scratch: string): Promise<{ db: string; drop(): Promise<void> }>;
}

function configurations(): Configuration[] {
  const { values } = parseArgs({ options: { db: { type: 'string' } }, strict: true });
  if (values.db === undefined)
    return [
      {
        label: 'SQLite, one server',
        servers: 1,
        database: async (scratch) => ({ db: path.join(scratch, 'bench.sqlite'), drop: async () => undefined }),
      },
    ];
  if (!/^postgres(ql)?:\/\//.test(values.db))
    throw new Error(
      '--db takes a postgres:// URL (of a role that may create databases); without it the run uses SQLite',
    );
  const admin = values.db;
  return [1, 2].map((servers) => ({
    label: `PostgreSQL, ${servers === 1 ? 'one server' : `${servers} servers on one database`}`,
    servers,
    database: () => postgresDatabase(admin),
  }));
}

/** A new database on the PostgreSQL server `admin` names, for one run. */
async function postgresDatabase(admin: string): Promise<{ db: string; drop(): Promise<void> }> {
  const name = `payment_bench_${randomBytes(6).toString('hex')}`;
  const run = async (statement: string) => {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await run(`create database ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return { db: url.toString(), drop: () => run(`drop database if exists ${name} with (force)`) };
}

/** Temporary folder of the run (SQLite file, server logs); removed unless the run failed. */
let scratchDir: string | undefined;

async function main(): Promise<number> {
  const runs = configurations();
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'payment-bench-'));
  scratchDir = scratch;
  let ceiling: Child | undefined;
  let failed = true;
  const results = [];
  try {
    // Measured before any child starts: how busy the machine is with other work.
    const busyBefore = await cpuBusy(1000);
    ceiling = await startChild({
      name: 'ceiling',
      cwd: root,
      args: ['--import', 'tsx', path.join(root, 'bench/ceiling.ts')],
    });
    await waitUntilHealthy(`${ceiling.url}/`);
    for (const configuration of runs)
      results.push(await measureConfiguration(configuration, ceiling, scratch, busyBefore));

    const out = path.join(root, 'bench/results');
    mkdirSync(out, { recursive: true });
    writeFileSync(path.join(out, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    console.log(`results written to ${path.relative(process.cwd(), path.join(out, 'latest.json'))}`);
    failed = results.some((r) => !r.ok);
    return failed ? 1 : 0;
  } catch (error) {
    console.error(`\nbench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return 1;
  } finally {
    await ceiling?.stop();
    if (failed) console.error(`scratch directory kept: ${scratch}`);
    else rmSync(scratch, { recursive: true, force: true });
  }
}

/** One configuration's run: its servers started, provisioned, measured between ceiling runs, reported. */
async function measureConfiguration(configuration: Configuration, ceiling: Child, scratch: string, busyBefore: number) {
  const sandboxToken = randomBytes(24).toString('hex');
  const database = await configuration.database(scratch);
  const servers: Child[] = [];
  const logs: string[] = [];
  let memories: Array<ReturnType<typeof sampleMemory>> = [];
  let ok = false;
  try {
    // The server is measured as users run it: its compiled bin (`npm run bench` builds it first).
    for (let i = 0; i < configuration.servers; i++) {
      const log = path.join(scratch, `payment-server-${logs.length + 1}.stderr.log`);
      logs.push(log);
      const server = await startChild({
        name: `payment server ${i + 1}`,
        cwd: root,
        args: [
          path.join(root, 'server/dist/cli.js'),
          '--port',
          '0',
          '--db',
          database.db,
          '--sandbox-token',
          sandboxToken,
        ],
        stderrPath: log,
      });
      servers.push(server);
      memories.push(sampleMemory(server.pid, 200));
      await waitUntilHealthy(`${server.url}/healthz`);
    }
    console.log(
      `\n${configuration.label}: ceiling at ${ceiling.url} (pid ${ceiling.pid}); payment server${servers.length > 1 ? 's' : ''} at ${servers.map((s) => `${s.url} (pid ${s.pid})`).join(', ')}`,
    );
    const phase = (name: string) => () => {
      for (const memory of memories) memory.phase(name);
    };
    phase('provisioning')();
    const base = servers[0]!.url;
    const org = await provision(base, sandboxToken);
    console.log(`organisation ${org.orgId}, checkout session ${org.sessionId}`);
    // A fresh token per target: one lasts five minutes, which a long BENCH_DURATION could outlast.
    // Any server's token works at every other (they share the signing key).
    const bearer = async () => ({ authorization: `Bearer ${await accessToken(base, org.clientId, org.clientSecret)}` });
    const sessionJson = JSON.stringify(SESSION_BODY);
    const urls = servers.map((s) => s.url);
    const pids = servers.map((s) => s.pid);

    const measurements: Measurement[] = [];
    const ceilingRun = (n: number) =>
      measure({
        name: `ceiling ${n} (node:http hello world)`,
        urls: [ceiling.url],
        pids: [ceiling.pid],
        onStart: phase('ceiling load (server idle)'),
        request: () => ({ method: 'GET', path: '/' }),
      });
    const ceilingBefore = await ceilingRun(1);
    measurements.push(ceilingBefore);

    phase('token (scrypt)')();
    const getHeaders = await bearer();
    const get = await measure({
      name: 'GET /api/checkout-sessions/{id}',
      urls,
      pids,
      onStart: phase('GET load'),
      request: () => ({ method: 'GET', path: `/api/checkout-sessions/${org.sessionId}`, headers: getHeaders }),
    });
    const ceilingBetween = await ceilingRun(2);
    measurements.push(get, ceilingBetween);

    phase('token (scrypt)')();
    const postHeaders = { ...(await bearer()), 'content-type': 'application/json' };
    const post = await measure({
      name: 'POST /api/checkout-sessions (fresh Idempotency-Key)',
      urls,
      pids,
      onStart: phase('POST load'),
      request: () => ({
        method: 'POST',
        path: '/api/checkout-sessions',
        headers: postHeaders,
        body: sessionJson,
        // autocannon passes a fresh copy of the headers each time.
        setupRequest: (request) => {
          request.headers!['idempotency-key'] = randomUUID();
          return request;
        },
      }),
    });
    const ceilingAfter = await ceilingRun(3);
    measurements.push(post, ceilingAfter);

    const mems = memories.map((m) => m.stop());
    const bracketed = {
      get: bracket(ceilingBefore, get, ceilingBetween),
      post: bracket(ceilingBetween, post, ceilingAfter),
    };
    const targets = report(configuration.label, measurements, bracketed.get, bracketed.post, mems, busyBefore);

    const failures = measurements.filter((m) => m.failures > 0);
    for (const m of failures) {
      console.error(
        `\nFAILED: ${m.target}: ${m.failures} failures (errors ${m.errors}, timeouts ${m.timeouts}, status codes ${JSON.stringify(m.statusCodes)}); sample:\n  ${m.samples.join('\n  ')}`,
      );
    }
    ok = failures.length === 0;
    return {
      configuration: configuration.label,
      servers: configuration.servers,
      at: new Date().toISOString(),
      node: process.version,
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      cpuBusyBeforeRun: Math.round(busyBefore * 1000) / 1000,
      config: { durationSeconds: DURATION, warmupSeconds: WARMUP, connections: CONNECTIONS },
      measurements,
      ratios: Object.fromEntries(
        Object.entries(bracketed).map(([name, b]) => [
          name,
          { ratioToCeiling: b.ratio, ceilingReqPerSec: b.ceilingReqPerSec },
        ]),
      ),
      memory: mems.map((mem) => ({
        ...mem,
        peakRssMb: mb(mem.peakRssKb),
        hwmMb: mb(mem.hwmKb),
        peakSampledRssMb: mb(mem.peakSampledRssKb),
      })),
      targets,
      ok,
    };
  } finally {
    for (const memory of memories) memory.stop();
    memories = [];
    await Promise.all(servers.map((s) => s.stop()));
    if (!ok) {
      for (const log of logs) {
        try {
          const tail = readFileSync(log, 'utf8').trimEnd().split('\n').slice(-10).join('\n');
          if (tail) console.error(`\nlast lines of a payment server's log (${log}):\n${tail}`);
        } catch {
          // no log
        }
      }
    }
    await database.drop();
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping the servers`);
    void stopAll().finally(() => {
      if (scratchDir) rmSync(scratchDir, { recursive: true, force: true });
      process.exit(130);
    });
  });
}

process.exitCode = await main();

/**
 * `npm run bench`: throughput, p99 latency and memory of the reference server on loopback,
 * against a bare node:http "ceiling" measured the same way.
 *
 * 1. Starts the ceiling (bench/ceiling.ts) and the payment server (its bin,
 *    server/bin/payment-server.js, on a temporary SQLite file or, with `--db`, on PostgreSQL, with a
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
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { cpuBusy, type Load, type Measurement, measure } from './measure.ts';
import { sampleMemory, startChild, stopAll, waitUntilHealthy, type Child } from './processes.ts';
import { accessToken, provision, SESSION_BODY } from './provision.ts';
import { bracket, type Limits, mb, report } from './report.ts';

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
const LOAD: Load = { connections: CONNECTIONS, warmupSeconds: WARMUP, durationSeconds: DURATION };

const LIMITS: Limits = {
  targets: {
    getRatio: 0.65,
    postRatio: 0.3,
    p99Ms: 20,
    rssMb: 200,
  },
  busy: 0.2,
  otherCpus: 0.25,
  stealPercent: 2,
};

/**
 * On PostgreSQL a create also costs the database's own work, on the same cores as the
 * server, the load generator and the ceiling: its targets are the store's.
 */
const POSTGRES_LIMITS: Limits = { ...LIMITS, targets: { ...LIMITS.targets, getRatio: 0.3, postRatio: 0.12 } };

// --- main -----------------------------------------------------------------------------

/** What a run measures: the server on a fresh SQLite file, or on PostgreSQL, one server or several. */
interface Configuration {
  label: string;
  servers: number;
  limits: Limits;
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
        limits: LIMITS,
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
    limits: POSTGRES_LIMITS,
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
          path.join(root, 'server/bin/payment-server.js'),
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
      measure(LOAD, {
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
    const get = await measure(LOAD, {
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
    const post = await measure(LOAD, {
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
    const targets = report(
      configuration.label,
      measurements,
      bracketed.get,
      bracketed.post,
      mems,
      busyBefore,
      LOAD,
      configuration.limits,
    );

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

/**
 * `npm run bench:profile`: where the reference server's CPU goes in a read and in a create,
 * stage by stage, under the load `npm run bench` puts on it.
 *
 * Each workload gets a server of its own (the compiled command on a fresh SQLite file, or on
 * PostgreSQL with `--db postgres://…`), started with V8's sampling profiler (`--cpu-prof`),
 * provisioned, then driven by autocannon as `npm run bench` drives it. Only the samples
 * of the measured window count: V8 stamps them with the machine's monotonic clock, the
 * clock `measure` marks the window with. Each sample is charged to a stage by its stack
 * (`stageOf`): the deepest frame of the server or of a library it calls decides, so
 * Node's own work (a header set, a socket written) is charged to the code that asked for
 * it; a stack with no such frame is Node's HTTP machinery (parsing, sockets, timers).
 *
 * It prints, per workload, µs of the main thread per request and share for each stage,
 * the process's CPU per request from /proc (the difference is other threads: the
 * background worker, libuv's pool, the kernel's share of the writes), and the hottest
 * functions by self time. The profiler's own cost inflates the absolute figures by a few
 * per cent; the shares are what the table is for. BENCH_DURATION, BENCH_WARMUP and
 * BENCH_CONNECTIONS tune the load as in `npm run bench`; `--top N` lists N functions; the
 * profiles are kept with `--keep DIR` (open them in Chrome's DevTools or speedscope);
 * `--cli PATH` profiles another build of the command (an earlier commit's, built apart).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { AcRequest } from './autocannon.ts';
import { type Load, measure } from './measure.ts';
import { startChild, stopAll, waitUntilHealthy } from './processes.ts';
import { accessToken, provision, SESSION_BODY } from './provision.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: flags } = parseArgs({
  options: {
    db: { type: 'string' },
    top: { type: 'string', default: '15' },
    keep: { type: 'string' },
    interval: { type: 'string', default: '100' },
    // Another build of the command (an earlier commit's server/dist/cli.js, say), to set beside this one.
    cli: { type: 'string' },
  },
  strict: true,
});
const env = (name: string, fallback: number) => Number(process.env[name] || fallback);
const LOAD: Load = {
  connections: env('BENCH_CONNECTIONS', 50),
  warmupSeconds: env('BENCH_WARMUP', 2),
  durationSeconds: env('BENCH_DURATION', 8),
};

/**
 * The stages a request passes through, each with the code that is its own (paths under
 * server/dist/, or another build's folder beside it, or node_modules/).
 */
const STAGES: ReadonlyArray<readonly [stage: string, owns: RegExp]> = [
  [
    'connection accounting, security headers (http/server, security)',
    /server\/dist[\w-]*\/http\/(server|security|connections)\.js/,
  ],
  [
    'request log (pino)',
    /server\/dist[\w-]*\/(http\/request-log|logging)\.js|node_modules\/(pino|sonic-boom|quick-format-unescaped|fast-redact|atomic-sleep|on-exit-leak-free|thread-stream)\//,
  ],
  [
    'Koa (context, middleware chain, error envelope, Host check)',
    /server\/dist[\w-]*\/http\/(koa-app|error-envelope)\.js|node_modules\/(koa|koa-compose|delegates|parseurl|statuses|on-finished|ee-first|encodeurl|content-type|type-is|mime-types|accepts|negotiator|vary|cookies|keygrip|http-errors|depd|fresh|only|escape-html|destroy|koa-convert)\//,
  ],
  [
    'body reading and decoding (raw-body, decode)',
    /server\/dist[\w-]*\/http\/(raw-body|decode|headers)\.js|node_modules\/(raw-body|bytes|iconv-lite|unpipe|@humanwhocodes\/momoa)\//,
  ],
  ['routing (api adapter, router)', /server\/dist[\w-]*\/http\/(api|openapi\/router)\.js/],
  ['security check (bearer token)', /server\/dist[\w-]*\/(auth\/|http\/backends\.js)|node_modules\/jose\//],
  [
    'validation (ajv)',
    /server\/dist[\w-]*\/http\/openapi\/(request-validator|validation|formats)\.js|node_modules\/(ajv|ajv-formats|fast-uri|fast-deep-equal)\//,
  ],
  [
    'pipeline and backend (decisions, answers)',
    /server\/dist[\w-]*\/(http\/(openapi\/(pipeline|backend)|errors|operation)|json-text)\.js/,
  ],
  ['idempotency (body hash, key claim)', /server\/dist[\w-]*\/domain\/idempotency\.js/],
  [
    'store (queries, caches, commits)',
    /server\/dist[\w-]*\/store\/|node_modules\/(better-sqlite3|kysely|pg|pg-protocol|pg-pool|dataloader)\//,
  ],
  ['handler and domain', /server\/dist[\w-]*\/(handlers|domain|sandbox|scope)\//],
  ['answer writing (responder)', /server\/dist[\w-]*\/http\/responder\.js/],
  ['webhooks and background', /server\/dist[\w-]*\/(webhooks|background)\//],
];
const NODE_HTTP = "Node's HTTP (parser, sockets, timers)";
const JSON_STAGE = 'JSON (JSON.stringify, JSON.parse)';
const GC = 'garbage collection';
const V8 = 'V8 and native, unattributed';
const OTHER = 'other (server code not in a stage above)';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The stage of one sample, from its stack (leaf first). */
function stageOf(stack: CallFrame[]): string | undefined {
  const leaf = stack[0]!;
  if (leaf.functionName === '(idle)') return undefined;
  if (leaf.functionName === '(garbage collector)') return GC;
  if (leaf.url === '' && (leaf.functionName === 'stringify' || leaf.functionName === 'parse')) return JSON_STAGE;
  for (const frame of stack) {
    if (frame.url === '' || frame.url.startsWith('node:')) continue;
    for (const [stage, owns] of STAGES) if (owns.test(frame.url)) return stage;
    // ajv's compiled validators have no URL; everything else of ours or a library's is named.
    return /\/server\/dist[\w-]*\//.test(frame.url) ? OTHER : `library: ${libraryOf(frame.url)}`;
  }
  if (stack.some((frame) => frame.url.startsWith('node:'))) return NODE_HTTP;
  return V8;
}

function libraryOf(url: string): string {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  return match ? match[1]! : url.replace(/^file:\/\//, '').replace(root, '.');
}

interface Breakdown {
  requests: number;
  /** µs of the main thread per stage, in the window. */
  stages: Map<string, number>;
  /** µs of self time per function, in the window. */
  functions: Map<string, number>;
  profiledUs: number;
  processCpuMsPerRequest: number | null;
}

function breakdown(
  profile: CpuProfile,
  window: [number, number],
): Omit<Breakdown, 'requests' | 'processCpuMsPerRequest'> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const stackCache = new Map<number, string | undefined>();
  const stages = new Map<string, number>();
  const functions = new Map<string, number>();
  let profiledUs = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i]!;
    // A sample stands for the time until the next one.
    const span = profile.timeDeltas[i + 1] ?? 0;
    if (at < window[0] || at > window[1]) continue;
    const id = profile.samples[i]!;
    let stage = stackCache.get(id);
    if (!stackCache.has(id)) {
      const stack: CallFrame[] = [];
      for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) stack.push(byId.get(n)!.callFrame);
      stage = stageOf(stack);
      stackCache.set(id, stage);
    }
    if (stage === undefined) continue;
    profiledUs += span;
    stages.set(stage, (stages.get(stage) ?? 0) + span);
    const frame = byId.get(id)!.callFrame;
    const where = frame.url
      ? ` ${libraryOf(frame.url).replace(/^\.\/server\/dist[\w-]*\//, '')}:${frame.lineNumber + 1}`
      : '';
    const name = `${frame.functionName || '(anonymous)'}${where}`;
    functions.set(name, (functions.get(name) ?? 0) + span);
  }
  return { stages, functions, profiledUs };
}

async function profileWorkload(
  label: string,
  request: (token: string, sessionId: string) => AcRequest,
  scratch: string,
): Promise<Breakdown> {
  const sandboxToken = randomBytes(24).toString('hex');
  const slug = label.split(' ')[0]!.toLowerCase();
  const dir = path.join(scratch, slug);
  mkdirSync(dir);
  const db = flags.db ?? path.join(dir, 'bench.sqlite');
  const server = await startChild({
    name: `payment server (${label})`,
    cwd: root,
    args: [
      '--cpu-prof',
      '--cpu-prof-dir',
      dir,
      '--cpu-prof-interval',
      flags.interval,
      flags.cli ? path.resolve(flags.cli) : path.join(root, 'server/dist/cli.js'),
      '--port',
      '0',
      '--db',
      db,
      '--sandbox-token',
      sandboxToken,
    ],
    stderrPath: path.join(dir, 'server.stderr.log'),
  });
  try {
    await waitUntilHealthy(`${server.url}/healthz`);
    const org = await provision(server.url, sandboxToken);
    const token = await accessToken(server.url, org.clientId, org.clientSecret);
    const m = await measure(LOAD, {
      name: label,
      urls: [server.url],
      pids: [server.pid],
      request: () => request(token, org.sessionId),
    });
    // The profile is written as the server exits.
    await server.stop(30_000);
    const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
    if (!file) throw new Error(`${label}: the server wrote no profile`);
    if (flags.keep) {
      mkdirSync(flags.keep, { recursive: true });
      cpSync(path.join(dir, file), path.join(flags.keep, `${slug}.cpuprofile`));
    }
    const profile = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as CpuProfile;
    return {
      ...breakdown(profile, m.windowUs),
      requests: m.total,
      processCpuMsPerRequest: m.serverCpuMsPerRequest,
    };
  } finally {
    await server.stop();
  }
}

const us = (total: number, requests: number) => (total / requests).toFixed(1);
const pct = (part: number, whole: number) => `${((100 * part) / whole).toFixed(1)} %`;

function table(read: Breakdown, create: Breakdown): string {
  const names = [...new Set([...read.stages.keys(), ...create.stages.keys()])].sort(
    (a, b) => (create.stages.get(b) ?? 0) / create.requests - (create.stages.get(a) ?? 0) / create.requests,
  );
  const lines = ['| stage | µs per read | share | µs per create | share |', '| --- | ---: | ---: | ---: | ---: |'];
  for (const name of names) {
    const r = read.stages.get(name) ?? 0;
    const c = create.stages.get(name) ?? 0;
    lines.push(
      `| ${name} | ${us(r, read.requests)} | ${pct(r, read.profiledUs)} | ${us(c, create.requests)} | ${pct(c, create.profiledUs)} |`,
    );
  }
  lines.push(
    `| **main thread, profiled** | **${us(read.profiledUs, read.requests)}** | 100 % | **${us(create.profiledUs, create.requests)}** | 100 % |`,
  );
  const proc = (b: Breakdown) =>
    b.processCpuMsPerRequest === null ? 'n/a' : (b.processCpuMsPerRequest * 1000).toFixed(1);
  lines.push(`| process CPU per request (/proc, all threads) | ${proc(read)} | | ${proc(create)} | |`);
  return lines.join('\n');
}

function hottest(label: string, b: Breakdown, n: number): string {
  const rows = [...b.functions.entries()].sort((x, y) => y[1] - x[1]).slice(0, n);
  return [
    `Hottest functions of a ${label} (self time, µs per request):`,
    '',
    '| function | µs | share |',
    '| --- | ---: | ---: |',
    ...rows.map(([name, total]) => `| \`${name}\` | ${us(total, b.requests)} | ${pct(total, b.profiledUs)} |`),
  ].join('\n');
}

async function main(): Promise<void> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'payment-profile-'));
  try {
    const read = await profileWorkload(
      'GET /api/checkout-sessions/{id}',
      (token, sessionId) => ({
        method: 'GET',
        path: `/api/checkout-sessions/${sessionId}`,
        headers: { authorization: `Bearer ${token}` },
      }),
      scratch,
    );
    const body = JSON.stringify(SESSION_BODY);
    const create = await profileWorkload(
      'POST /api/checkout-sessions (fresh Idempotency-Key)',
      (token) => ({
        method: 'POST',
        path: '/api/checkout-sessions',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
        setupRequest: (req) => {
          req.headers!['idempotency-key'] = randomUUID();
          return req;
        },
      }),
      scratch,
    );
    const store = flags.db ? 'PostgreSQL' : 'SQLite';
    console.log(
      `\n### Where a request's CPU goes (${store}, ${LOAD.connections} connections, ${LOAD.durationSeconds} s measured, sampled every ${flags.interval} µs, Node ${process.version}, ${os.cpus().length} CPUs)\n`,
    );
    console.log(table(read, create));
    const top = Number(flags.top);
    console.log(`\n${hottest('read', read, top)}\n\n${hottest('create', create, top)}`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void stopAll().finally(() => process.exit(130)));
}
await main();

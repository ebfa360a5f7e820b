/**
 * `npm run bench:verdict`: where the time to a verdict goes, written to
 * bench/verdict-profile.md with the date, the commit, the suite's version and the machine.
 *
 * The suite: a full `payment-conformance run` (its defaults: exploration included) against
 * the reference server on `--db :memory:`, each in its own process as users start them, the
 * suite under V8's sampling profiler. Its wall time and peak memory; per check, its time
 * and how much of it a request of its own was in flight (from the run's HAR, overlapping
 * requests counted once); for the whole run, the share of the suite's main thread that
 * computed (the rest waited: on answers, on deliveries, on deliberate sleeps and polls); the
 * exploration's cases and steps per second from its report; and the suite's busiest code.
 *
 * The server: seven starts to the `listening` line (their median), then one under the
 * profiler, its samples until it listened charged to what the code belongs to (module
 * loading and compiling, the schema validators, the store, the HTTP stack).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChild, stopAll } from './processes.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const scratch = mkdtempSync(path.join(os.tmpdir(), 'verdict-profile-'));
const SERVER_BIN = path.join(root, 'server/bin/payment-server.js');
const SUITE_BIN = path.join(root, 'conformance/dist/cli.js');
const SERVER_STARTS = 7;

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string }; children?: number[] }>;
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface Sample {
  /** µs since the profile began. */
  at: number;
  /** µs this sample stands for. */
  us: number;
  frame: { functionName: string; url: string };
  stack: Array<{ functionName: string; url: string }>;
}

function samplesOf(file: string): Sample[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const out: Sample[] = [];
  let at = 0;
  for (const [i, id] of profile.samples.entries()) {
    const us = profile.timeDeltas[i + 1] ?? 0;
    at += profile.timeDeltas[i] ?? 0;
    const stack = [];
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) stack.push(byId.get(n)!.callFrame);
    out.push({ at, us, frame: byId.get(id)!.callFrame, stack });
  }
  return out;
}

const profileIn = (dir: string) => path.join(dir, readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))!);
const ms = (us: number) => (us / 1000).toFixed(0);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** What a frame's code belongs to: a package of node_modules, a folder of ours, or Node. */
function ownerOf(url: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return pkg;
  if (url.startsWith('file://')) {
    const parts = path
      .relative(root, fileURLToPath(url))
      .split('/')
      .filter((p) => p !== 'dist');
    if (parts[0] !== '..') return parts.slice(0, parts[0] === 'conformance' ? 3 : 2).join('/');
  }
  return url.startsWith('node:') ? 'node' : '';
}

/** Node's module loader: what resolving, reading and compiling a module runs in. */
const LOADER = /^node:internal\/modules\//;

/**
 * Time per owner. A sample whose innermost frames are Node's module loader is module
 * loading; otherwise it is charged to the innermost frame of code of ours or of a package
 * (Node's own work, a socket written, goes to the code that asked for it).
 */
function byOwner(samples: Sample[]): Map<string, number> {
  const totals = new Map<string, number>();
  for (const s of samples) {
    const name = s.frame.functionName;
    if (name === '(idle)') continue;
    const innermostNode = s.stack.slice(
      0,
      s.stack.findIndex((f) => !f.url.startsWith('node:') && f.url !== ''),
    );
    const owner =
      name === '(garbage collector)'
        ? 'garbage collection'
        : name === '(program)'
          ? 'V8 (compiling, parsing)'
          : innermostNode.some((f) => LOADER.test(f.url))
            ? 'module loading (resolve, read, compile)'
            : (s.stack.map((f) => ownerOf(f.url)).find((o) => o !== '' && !o.startsWith('node')) ??
              'node (HTTP, timers, I/O)');
    totals.set(owner, (totals.get(owner) ?? 0) + s.us);
  }
  return totals;
}

/** The suite's own functions (and the packages it calls) with the most self time. */
function hottest(samples: Sample[], busyUs: number): string[][] {
  const self = new Map<string, number>();
  for (const s of samples) {
    const owner = ownerOf(s.frame.url);
    if (owner === '' || owner === 'node') continue;
    const name = `${s.frame.functionName || '(anonymous)'} (${owner})`;
    self.set(name, (self.get(name) ?? 0) + s.us);
  }
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 12)
    .map(([name, us]) => [name, ms(us), `${((100 * us) / busyUs).toFixed(1)} %`]);
}

/** A Markdown table, its columns padded as the formatter pads them: the first left, the rest right. */
function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(3, h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `| ${widths.map((w, i) => (i === 0 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`;
  return [line(head), rule, ...rows.map(line)].join('\n');
}

async function profileServerStart(): Promise<string> {
  const starts: number[] = [];
  for (let i = 0; i < SERVER_STARTS; i++) {
    const began = performance.now();
    const server = await startChild({
      name: 'server',
      cwd: root,
      args: [SERVER_BIN, '--port', '0', '--db', ':memory:'],
    });
    starts.push(performance.now() - began);
    await server.stop();
  }
  const dir = mkdtempSync(path.join(scratch, 'server-prof-'));
  const began = performance.now();
  const server = await startChild({
    name: 'server (profiled)',
    cwd: root,
    args: [
      '--cpu-prof',
      '--cpu-prof-dir',
      dir,
      '--cpu-prof-interval',
      '200',
      SERVER_BIN,
      '--port',
      '0',
      '--db',
      ':memory:',
    ],
  });
  const listenedUs = (performance.now() - began) * 1000;
  await server.stop();
  // The profile starts with the process: its samples until the listening line are the start.
  const samples = samplesOf(profileIn(dir)).filter((s) => s.at <= listenedUs);
  const busy = samples.filter((s) => s.frame.functionName !== '(idle)').reduce((a, s) => a + s.us, 0);
  const rows = [...byOwner(samples)]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 14)
    .map(([owner, us]) => [owner, ms(us), `${((100 * us) / busy).toFixed(1)} %`]);
  return [
    `Starts to the listening line (\`--db :memory:\`, no demo organisation): median of ${SERVER_STARTS} **${median(starts).toFixed(0)} ms**`,
    `(${starts.map((s) => s.toFixed(0)).join(', ')}); \`node -e 0\` takes ${nodeStartMs().toFixed(0)} ms here.`,
    `Under the profiler, ${ms(busy)} ms of the main thread's time until it listened, by what the code belongs to:`,
    '',
    table(['code', 'ms', 'share'], rows),
  ].join('\n');
}

function nodeStartMs(): number {
  const runs = Array.from({ length: 5 }, () => {
    const began = performance.now();
    execFileSync(process.execPath, ['-e', '0']);
    return performance.now() - began;
  });
  return median(runs);
}

interface HarEntry {
  startedDateTime: string;
  time: number;
  _checkId?: string;
}

/** ms of the union of [start, end) intervals. */
function covered(intervals: Array<[number, number]>): number {
  let total = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const [a, b] of [...intervals].sort((x, y) => x[0] - y[0])) {
    if (b <= end) continue;
    total += b - Math.max(a, end);
    end = b;
  }
  return total;
}

async function profileSuite(): Promise<string> {
  const sandboxToken = randomBytes(24).toString('hex');
  const server = await startChild({
    name: 'server',
    cwd: root,
    args: [SERVER_BIN, '--port', '0', '--db', ':memory:', '--sandbox-token', sandboxToken],
    stderrPath: path.join(scratch, 'server.log'),
  });
  const out = mkdtempSync(path.join(scratch, 'suite-'));
  const prof = mkdtempSync(path.join(scratch, 'suite-prof-'));
  const began = performance.now();
  const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(
      process.execPath,
      [
        '--cpu-prof',
        '--cpu-prof-dir',
        prof,
        '--import',
        path.join(root, 'test/support/max-rss.mjs'),
        SUITE_BIN,
        'run',
        '--base-url',
        server.url,
        '--sandbox-token',
        sandboxToken,
        '--reporter',
        'json,junit,har',
        '--out',
        out,
      ],
      { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
  const wallMs = performance.now() - began;
  await server.stop();
  const peakMb = Number(/max-rss-kb (\d+)/.exec(stderr)?.[1]) / 1024;
  const report = JSON.parse(readFileSync(path.join(out, 'conformance.json'), 'utf8')) as {
    summary: Record<string, number>;
    results: Array<{ id: string; status: string; reason: string }>;
  };
  // Each check's time is in the JUnit report (its testcase's time).
  const durationMs = new Map(
    [
      ...readFileSync(path.join(out, 'conformance.junit.xml'), 'utf8').matchAll(
        /<testcase [^>]*name="([A-Z]+-\d+) [^"]*" time="([\d.]+)"/g,
      ),
    ].map((m) => [m[1]!, Math.round(Number(m[2]) * 1000)] as const),
  );
  const durationOf = (id: string) => durationMs.get(id) ?? 0;
  const entries = (
    JSON.parse(readFileSync(path.join(out, 'conformance.har'), 'utf8')) as { log: { entries: HarEntry[] } }
  ).log.entries;
  const spans = new Map<string, Array<[number, number]>>();
  for (const e of entries) {
    const start = Date.parse(e.startedDateTime);
    const id = e._checkId || '(none)';
    spans.set(id, [...(spans.get(id) ?? []), [start, start + Math.max(e.time, 0)]]);
  }
  const all = [...spans.values()].flat();
  const runStart = Math.min(...all.map(([a]) => a));
  const runEnd = Math.max(...all.map(([, b]) => b));
  const samples = samplesOf(profileIn(prof));
  const totalUs = samples.reduce((a, s) => a + s.us, 0);
  const busyUs = samples.filter((s) => s.frame.functionName !== '(idle)').reduce((a, s) => a + s.us, 0);
  const checks = [...report.results]
    .sort((a, b) => durationOf(b.id) - durationOf(a.id))
    .slice(0, 15)
    .map((r) => {
      const http = covered(spans.get(r.id) ?? []);
      return [
        r.id,
        String(durationOf(r.id)),
        String(Math.round(http)),
        `${((100 * http) / Math.max(durationOf(r.id), 1)).toFixed(0)} %`,
        String(spans.get(r.id)?.length ?? 0),
      ];
    });
  const exploration = report.results
    .filter((r) => r.id.startsWith('EXPL-'))
    .map((r) => `- ${r.id} (${durationOf(r.id)} ms): ${r.reason.split('\n')[0]!.slice(0, 220)}`);
  const owners = [...byOwner(samples)]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 12)
    .map(([owner, us]) => [owner, ms(us), `${((100 * us) / busyUs).toFixed(1)} %`]);
  return [
    `A full \`run\` (defaults, exploration included; exit ${code}; ${report.summary.passed} passed, ${report.summary.failed} failed): **${(wallMs / 1000).toFixed(1)} s** wall, peak RSS **${peakMb.toFixed(0)} MB**.`,
    `${entries.length} exchanges; a request of the run in flight for ${(covered(all) / 1000).toFixed(1)} s of the ${((runEnd - runStart) / 1000).toFixed(1)} s between the first and the last.`,
    `The suite's main thread computed for ${(busyUs / 1e6).toFixed(1)} s of ${(totalUs / 1e6).toFixed(1)} s profiled (${((100 * busyUs) / totalUs).toFixed(0)} %); the rest it waited (answers, deliveries, sleeps, polls).`,
    '',
    'The fifteen longest checks (checks run at once: their times overlap):',
    '',
    table(['check', 'ms', 'ms with a request in flight', 'share', 'requests'], checks),
    '',
    'The exploration:',
    '',
    ...exploration,
    '',
    "Where the suite's main thread computed, by what the code belongs to:",
    '',
    table(['code', 'ms', 'share'], owners),
    '',
    'Its hottest functions of its own, by self time:',
    '',
    table(['function', 'ms', 'share'], hottest(samples, busyUs)),
  ].join('\n');
}

const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root }).toString().trim();
const version = JSON.parse(readFileSync(path.join(root, 'conformance/package.json'), 'utf8')).version as string;
const machine = `${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, Node ${process.version}`;
try {
  const server = await profileServerStart();
  const suite = await profileSuite();
  const text = [
    '# Time to a verdict: where it goes',
    '',
    `Written by \`npm run bench:verdict\` (bench/verdict-profile.ts) on ${new Date().toISOString().slice(0, 10)}, commit ${commit}, suite ${version}, ${machine}. Profiled figures are inflated by the profiler; the shares are what they are for.`,
    '',
    '## The suite',
    '',
    suite,
    '',
    '## The server’s start',
    '',
    server,
    '',
  ].join('\n');
  writeFileSync(path.join(root, 'bench/verdict-profile.md'), text);
  process.stdout.write(text);
} finally {
  await stopAll();
}

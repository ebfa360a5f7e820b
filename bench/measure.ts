/**
 * Measuring one target: an autocannon run whose warm-up and measured window share their
 * connections, with every answer's latency kept, and the CPU time the target, this process
 * and the rest of the machine spent during the window, so that a busy or stolen machine
 * can be told apart from a slow server. `cpuBusy` asks the same of the machine before a run.
 */
import os from 'node:os';
import { type AcRequest, autocannon } from './autocannon.ts';
import { machineStealMs, processCpuMs } from './processes.ts';

/** The load of every run (set by run.ts from BENCH_CONNECTIONS, BENCH_WARMUP and BENCH_DURATION). */
export interface Load {
  /** Split evenly between a target's servers. */
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
}

export interface Measurement {
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
  /**
   * The measured window on the machine's monotonic clock, in µs (process.hrtime), the clock
   * V8 stamps a CPU profile's samples with: bench/profile.ts keeps the samples inside it.
   */
  windowUs: [number, number];
  samples: string[];
}

export interface Target {
  name: string;
  /** One server, or several sharing the load (the connections split evenly between them). */
  urls: string[];
  pids: number[];
  /** Called as the warm-up starts (to label memory samples). */
  onStart?: () => void;
  request: () => AcRequest;
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Idle and total time of all CPUs so far, in ms. */
const cpuTotals = () =>
  os.cpus().reduce(
    (acc, { times }) => ({
      idle: acc.idle + times.idle,
      all: acc.all + times.user + times.nice + times.sys + times.irq + times.idle,
    }),
    { idle: 0, all: 0 },
  );

/** Fraction (0–1) of all CPUs' time spent busy over `ms`: other work makes the numbers noisy. */
export async function cpuBusy(ms: number): Promise<number> {
  const a = cpuTotals();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const b = cpuTotals();
  return b.all > a.all ? 1 - (b.idle - a.idle) / (b.all - a.all) : 0;
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
 * One autocannon run of `load.warmupSeconds` + `load.durationSeconds`: the warm-up opens
 * the connections and brings the server to a steady state, and the measured window that
 * follows runs on the same connections. (Separate runs would open 50 new connections at the window's start;
 * libuv accepts one connection per event-loop turn, so on a loaded server the last of them
 * waits for 50 turns, a start-up effect that is reported as the warm-up's max instead.)
 * Every answer's latency in the window is kept, so the percentiles are exact.
 */
export async function measure(load: Load, target: Target): Promise<Measurement> {
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
  let lastAnswerUs = 0;
  const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

  target.onStart?.();
  const connections = Math.max(1, Math.round(load.connections / target.urls.length));
  process.stdout.write(
    `- ${target.name}: warm-up ${load.warmupSeconds} s, then ${load.durationSeconds} s measured on the same ${load.connections} connections${target.urls.length > 1 ? ` (${connections} to each of ${target.urls.length} servers)` : ''}… `,
  );
  const instances = target.urls.map((url) =>
    autocannon({
      url,
      connections,
      duration: load.warmupSeconds + load.durationSeconds,
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
        lastAnswerUs = monotonicUs();
      } else if (ms > warmupMaxMs) warmupMaxMs = ms;
    });
  }
  let before:
    | {
        wall: number;
        monotonicUs: number;
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
      monotonicUs: monotonicUs(),
      server: serversCpuMs(target.pids),
      self: process.cpuUsage(),
      machine: cpuTotals(),
      steal: machineStealMs(),
    };
  }, load.warmupSeconds * 1000);
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
    windowUs: [before.monotonicUs, lastAnswerUs],
  };
  console.log(
    `${Math.round(measurement.reqPerSec)} req/s, p99 ${measurement.p99Ms.toFixed(1)} ms${measurement.failures ? `, ${measurement.failures} FAILED` : ''}`,
  );
  return measurement;
}

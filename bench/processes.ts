/**
 * Child processes of the benchmark: start one, wait for its `... listening on URL` line,
 * stop it (SIGTERM, then SIGKILL after a grace period), and sample its resident memory
 * from /proc/<pid>/status. Every child started here is also killed if the benchmark
 * itself exits or is interrupted, so none outlives a failed run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

export interface Child {
  name: string;
  pid: number;
  /** The URL from the child's `listening on` line. */
  url: string;
  /** Everything the child printed on stdout so far. */
  stdout: string[];
  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`. Safe to call twice. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions {
  name: string;
  args: string[];
  cwd: string;
  /** Where the child's stderr goes (a file path); inherited when absent. */
  stderrPath?: string;
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the listening line. */
  timeoutMs?: number;
}

const LISTENING = /listening on (https?:\/\/\S+)/;
const live = new Set<ChildProcess>();

function exited(proc: ChildProcess): boolean {
  return proc.exitCode !== null || proc.signalCode !== null;
}

process.once('exit', () => {
  for (const proc of live) if (!exited(proc)) proc.kill('SIGKILL');
});

/** Stops every child still running (used by signal handlers of the runner). */
export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((proc) => stopProcess(proc, 5000)));
}

async function stopProcess(proc: ChildProcess, graceMs: number): Promise<void> {
  if (exited(proc)) {
    live.delete(proc);
    return;
  }
  const done = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), graceMs);
  });
  if ((await Promise.race([done, grace])) === 'timeout' && !exited(proc)) {
    proc.kill('SIGKILL');
    await done;
  }
  clearTimeout(timer);
  live.delete(proc);
}

export async function startChild(options: StartOptions): Promise<Child> {
  const stderrFd = options.stderrPath ? openSync(options.stderrPath, 'a') : undefined;
  const proc = spawn(process.execPath, options.args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', stderrFd ?? 'inherit'],
  });
  if (stderrFd !== undefined) closeSync(stderrFd); // the child holds its own copy
  live.add(proc);
  const stdout: string[] = [];
  const lines = createInterface({ input: proc.stdout! });

  let url: string;
  try {
    url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${options.name} printed no listening line within ${options.timeoutMs ?? 30_000} ms`)),
        options.timeoutMs ?? 30_000,
      );
      lines.on('line', (line) => {
        stdout.push(line);
        const match = LISTENING.exec(line);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
      proc.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(
          new Error(
            `${options.name} exited (${signal ?? `code ${code}`}) before listening; stdout:\n${stdout.join('\n')}`,
          ),
        );
      });
    });
  } catch (error) {
    await stopProcess(proc, 5000);
    throw error;
  }

  return {
    name: options.name,
    pid: proc.pid!,
    url,
    stdout,
    stop: (graceMs = 5000) => stopProcess(proc, graceMs),
  };
}

/** Polls `url` until it answers 200, or throws after `timeoutMs`. */
export async function waitUntilHealthy(url: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return;
      last = `status ${res.status}`;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} not healthy after ${timeoutMs} ms (${last})`);
}

export interface MemoryReport {
  /** Highest VmRSS seen by the sampler, in kB (null where /proc is not available). */
  peakSampledRssKb: number | null;
  /** VmHWM (the kernel's own peak RSS) read at the end, in kB. */
  hwmKb: number | null;
  /** The larger of the two, in kB. */
  peakRssKb: number | null;
  /** The phase (see `phase()`) during which the highest VmRSS sample was taken. */
  peakPhase: string | null;
  /** Highest VmRSS sample of each phase, in kB. */
  peakByPhaseKb: Record<string, number>;
  samples: number;
  intervalMs: number;
}

function readStatus(pid: number): { rssKb?: number; hwmKb?: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => {
      const match = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(text);
      return match ? Number(match[1]) : undefined;
    };
    return { rssKb: field('VmRSS'), hwmKb: field('VmHWM') };
  } catch {
    return undefined;
  }
}

/** Samples VmRSS of `pid` every `intervalMs` until `stop()`, which also reads VmHWM. */
export function sampleMemory(pid: number, intervalMs = 200): { phase(name: string): void; stop(): MemoryReport } {
  let peak: number | null = null;
  let peakPhase: string | null = null;
  let current = 'start-up';
  let samples = 0;
  const byPhase: Record<string, number> = {};
  const sample = () => {
    const rss = readStatus(pid)?.rssKb;
    if (rss === undefined) return;
    samples++;
    byPhase[current] = Math.max(byPhase[current] ?? 0, rss);
    if (peak === null || rss > peak) {
      peak = rss;
      peakPhase = current;
    }
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  let report: MemoryReport | undefined;
  return {
    phase(name: string) {
      sample();
      current = name;
    },
    stop() {
      if (report) return report;
      clearInterval(timer);
      sample();
      const hwm = readStatus(pid)?.hwmKb ?? null;
      const candidates = [peak, hwm].filter((v): v is number => v !== null);
      report = {
        peakSampledRssKb: peak,
        hwmKb: hwm,
        peakRssKb: candidates.length > 0 ? Math.max(...candidates) : null,
        peakPhase,
        peakByPhaseKb: byPhase,
        samples,
        intervalMs,
      };
      return report;
    },
  };
}

/** CPU time (user + system) of `pid` in ms, from /proc/<pid>/stat (USER_HZ 100); null without /proc. */
export function processCpuMs(pid: number): number | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at field 3 (state).
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) * 10 : null;
  } catch {
    return null;
  }
}

/**
 * The machine's CPU time stolen by the hypervisor so far, and all its CPU time, in ms
 * (from the first line of /proc/stat, USER_HZ 100); null without /proc. On a shared
 * virtual machine the host runs other guests on our CPUs for tens of milliseconds at a
 * time, which no process here can see in its own CPU time.
 */
export function machineStealMs(): { steal: number; all: number } | null {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest and guest_nice are inside user and nice)
    const ticks = fields.slice(0, 8);
    if (ticks.length < 8 || ticks.some((n) => !Number.isFinite(n))) return null;
    return { steal: ticks[7]! * 10, all: ticks.reduce((a, b) => a + b, 0) * 10 };
  } catch {
    return null;
  }
}

/**
 * Reporting one configuration's run: each target's ratio to the mean of the ceiling runs
 * around it, the Markdown the run prints (bench/README.md quotes it), and the targets
 * marked met or not. Missing a target is only reported: a run fails on failed requests
 * alone (run.ts).
 */
import os from 'node:os';
import type { Load, Measurement } from './measure.ts';
import type { MemoryReport } from './processes.ts';

/** What the report checks the figures against, and when it flags them (set in run.ts). */
export interface Limits {
  targets: {
    getRatio: number;
    postRatio: number;
    p99Ms: number;
    rssMb: number;
  };
  /** Above this share (0–1) of the machine busy before the run, the report says other work competed. */
  busy: number;
  /** Above this many CPUs used by other processes during a measurement, its numbers are flagged. */
  otherCpus: number;
  /** Above this share of the machine's CPU time stolen by the hypervisor during a measurement, its numbers are flagged. */
  stealPercent: number;
}

export const mb = (kb: number | null) => (kb === null ? null : Math.round((kb / 1024) * 10) / 10);
const mark = (met: boolean) => (met ? '✅ met' : '❌ not met');

/** A target measured between two ceiling runs, and the baseline they give it. */
interface Bracketed {
  measurement: Measurement;
  /** Mean req/s of the ceiling runs just before and just after the target's. */
  ceilingReqPerSec: number;
  ratio: number;
}

export function bracket(before: Measurement, measurement: Measurement, after: Measurement): Bracketed {
  const ceilingReqPerSec = (before.reqPerSec + after.reqPerSec) / 2;
  return { measurement, ceilingReqPerSec, ratio: measurement.reqPerSec / ceilingReqPerSec };
}

/** `measurements` in the order they ran: ceiling, GET, ceiling, POST, ceiling; a memory report per server. */
export function report(
  label: string,
  measurements: Measurement[],
  get: Bracketed,
  post: Bracketed,
  memories: MemoryReport[],
  busyBefore: number,
  load: Load,
  limits: Limits,
) {
  const peaks = memories.map((m) => mb(m.peakRssKb));
  const peakMb = peaks.includes(null) ? null : Math.max(...(peaks as number[]));
  const noisy = measurements.filter((m) => m.otherCpus > limits.otherCpus);
  const stolen = measurements.filter((m) => (m.stealPercent ?? 0) > limits.stealPercent);
  const ratioCell = (m: Measurement) => {
    const b = [get, post].find((x) => x.measurement === m);
    return b ? `${b.ratio.toFixed(3)} (of ${Math.round(b.ceilingReqPerSec)})` : '';
  };
  const targets = [
    {
      target: `GET ≥ ${limits.targets.getRatio} × ceiling`,
      actual: `${get.ratio.toFixed(3)} ×`,
      met: get.ratio >= limits.targets.getRatio,
    },
    {
      target: `POST ≥ ${limits.targets.postRatio} × ceiling`,
      actual: `${post.ratio.toFixed(3)} ×`,
      met: post.ratio >= limits.targets.postRatio,
    },
    {
      target: `GET p99 < ${limits.targets.p99Ms} ms at ${load.connections} connections`,
      actual: `${get.measurement.p99Ms.toFixed(1)} ms`,
      met: get.measurement.p99Ms < limits.targets.p99Ms,
    },
    {
      target: `POST p99 < ${limits.targets.p99Ms} ms at ${load.connections} connections`,
      actual: `${post.measurement.p99Ms.toFixed(1)} ms`,
      met: post.measurement.p99Ms < limits.targets.p99Ms,
    },
    {
      target: `peak RSS < ${limits.targets.rssMb} MB${memories.length > 1 ? ' (each server)' : ''}`,
      actual: peakMb === null ? 'unknown (no /proc)' : `${peakMb} MB`,
      met: peakMb !== null && peakMb < limits.targets.rssMb,
    },
  ];

  const lines = [
    '',
    `### ${label} (${load.durationSeconds} s per target after ${load.warmupSeconds} s warm-up, ${load.connections} connections, loopback, Node ${process.version}, ${os.cpus().length} CPUs)`,
    '',
    ...(busyBefore > limits.busy
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
    `Highest latency while the ${load.connections} connections opened (warm-up): ${measurements.map((m) => `${m.target.split(' (')[0]} ${Math.round(m.warmupMaxMs)} ms`).join('; ')}.`,
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

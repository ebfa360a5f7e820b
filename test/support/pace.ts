/**
 * The pace of the machine the tests run on, and the test-side deadlines that follow it.
 *
 * A test waits on conditions, not on time (a delivery recorded, a server listening), but
 * each wait needs a bound so that a defect fails the test rather than hanging it. A bound
 * that holds on an idle machine fails on a busy or slower one, though nothing is wrong
 * with the product. So every bound a test sets is given for an idle machine of this
 * project's kind and stretched by the pace: how much slower than that machine this one
 * is at the start of the run, measured once (vitest.config.ts) by timing a fixed amount
 * of work on every core at once, so that other processes taking cores count too.
 * TEST_PACE gives it instead (a factor, at least 1).
 *
 * Only the test side's bounds stretch: a timing the document states (the service's
 * five-second wait) is the product's, and a test that judges it says when its own side
 * was too late to judge, as the conformance suite does.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

/** The fixed work each core does: hashing, a stand-in for the CPU a test's server and suite spend. */
const WORK = `
const { createHash } = require('node:crypto');
const { parentPort } = require('node:worker_threads');
const block = Buffer.alloc(16 * 1024, 7);
const started = process.hrtime.bigint();
for (let i = 0; i < 6000; i++) createHash('sha256').update(block).digest();
parentPort.postMessage(Number(process.hrtime.bigint() - started) / 1e6);
`;

/** What WORK takes on each core of an idle two-core machine of this project's kind, in ms. */
const IDLE_MS = 77;

/** WORK on every core at once: the slowest core's time, in ms. */
async function onEveryCore(): Promise<number> {
  const cores = availableParallelism();
  const times = await Promise.all(
    Array.from(
      { length: cores },
      () =>
        new Promise<number>((resolve, reject) => {
          const worker = new Worker(WORK, { eval: true });
          worker.once('message', (ms: number) => {
            resolve(ms);
            void worker.terminate();
          });
          worker.once('error', reject);
        }),
    ),
  );
  return Math.max(...times);
}

/** The median of three rounds of WORK over IDLE_MS: the pace of this machine now (1 when idle). */
export async function measurePace(): Promise<number> {
  const rounds = [await onEveryCore(), await onEveryCore(), await onEveryCore()].sort((a, b) => a - b);
  const ratio = Math.round((rounds[1]! / IDLE_MS) * 10) / 10;
  // An idle machine measures within a fifth of IDLE_MS either way: that is noise, not pace.
  return ratio < 1.25 ? 1 : ratio;
}

/** The run's pace: TEST_PACE, which vitest.config.ts sets for every test process. */
export const PACE = Math.max(1, Number(process.env.TEST_PACE) || 1);

/** A test-side bound of `ms` on an idle machine, stretched to the run's pace. */
export const paced = (ms: number): number => Math.round(ms * PACE);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads until `done` holds of what was read, or a paced `timeoutMs` has passed, and returns
 * the last value read: the caller asserts on it, so a bound that ran out fails with what was
 * seen last. Reads are 10 ms apart at first, then further apart.
 */
export async function until<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + paced(timeoutMs);
  for (let pause = 10; ; pause = Math.min(250, pause * 2)) {
    const value = await read();
    if (done(value) || Date.now() >= deadline) return value;
    await sleep(pause);
  }
}

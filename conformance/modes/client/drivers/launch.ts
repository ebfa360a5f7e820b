/**
 * Starting a driver and talking to it (protocol.ts): a command, spoken to in JSON lines, or
 * a JavaScript module, run in a worker thread. Either way a check sees a session that
 * answers each operation with the driver's outcome, or with why none came.
 *
 * The driver is the client under test, and is trusted with nothing: it gets the protocol's
 * variables and the few a program needs to run (not the suite's environment: a CI job's
 * secrets, the sandbox token), every line it writes is read up to a limit, a module runs
 * apart so that a busy loop cannot stop the suite, and whatever it started ends with it.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { moduleUrl } from '../../../adapters/load.ts';
import { SetupError } from '../../../core/outcome.ts';
import type { Redactor } from '../../../core/redact.ts';
import type { Answer, Ask, ClientError, DriverEnv, DriverFactory, ModuleDriver, Operation } from '../protocol.ts';

/** The driver under test: a shell command, or a module path (or its factory, from the library). */
export type DriverSpec = { command: string } | { module: string | DriverFactory };

/** Long enough for a client's whole retry budget around an answer the service withholds. */
export const OPERATION_TIMEOUT_MS = 90_000;
/** How long a command has to end once its standard input is closed. */
const EXIT_GRACE_MS = 5000;
/** How long a module has to load and make its driver. */
const LOAD_TIMEOUT_MS = 30_000;
/** How much of a command's standard error is kept, for the reason of a crash. */
const STDERR_KEPT = 64 * 1024;
/** How much of it a reason shows. */
const STDERR_SHOWN = 400;
/**
 * The longest outcome line read: an outcome carries a session, a link or a token, a few
 * kilobytes; a driver writing more is not speaking the protocol, and is not read further.
 */
export const LINE_LIMIT = 1024 * 1024;

/**
 * The variables of the suite's environment a driver gets besides the protocol's: what a
 * program needs to start and run (its interpreter's path, home, locale, temporary files,
 * the certificates it trusts). Nothing else reaches it (a CI job's secrets, SANDBOX_TOKEN,
 * a proxy that would send its requests elsewhere); `--driver-env` names more.
 */
export const DRIVER_ENV_ALLOWED = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TERM',
  'TMPDIR',
  'TEMP',
  'TMP',
  'NODE_PATH',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'PYTHONPATH',
  'PYTHONHOME',
  'VIRTUAL_ENV',
  'JAVA_HOME',
  'GOPATH',
  'GOROOT',
  'SYSTEMROOT',
  'COMSPEC',
  'PATHEXT',
  'WINDIR',
  'APPDATA',
  'LOCALAPPDATA',
  'USERPROFILE',
] as const;

/**
 * Marks every process of one driver: a descendant that leaves the driver's process group
 * (a new session, a daemon) still carries it in its environment, and is ended with it.
 */
const MARK = 'PAYMENT_CONFORMANCE_DRIVER';

export interface DriverSession {
  ask(operation: Ask): Promise<Answer>;
  /** Ends the driver (a command's standard input closed; a module's close()) and all it started. */
  close(): Promise<void>;
}

/** How a driver is started: its environment beyond the protocol's, and the run's redactor for what it writes. */
export interface DriverStart {
  /** Names of further variables of the suite's environment the driver gets (--driver-env). */
  passEnv: readonly string[];
  redactor: Redactor;
  /** How long one operation may take (OPERATION_TIMEOUT_MS unless the library caller says otherwise). */
  operationTimeoutMs?: number;
}

/** Describes a driver in reports: the command, or the module. */
export function describeDriver(spec: DriverSpec): string {
  if ('command' in spec) return spec.command;
  return typeof spec.module === 'string' ? spec.module : 'a driver module';
}

/** The environment a driver runs with: the protocol's variables, the allowed ones of the suite's, and its mark. */
export function driverEnvironment(env: DriverEnv, passEnv: readonly string[], mark: string): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of [...DRIVER_ENV_ALLOWED, ...passEnv]) {
    const value = process.env[name];
    if (value !== undefined) kept[name] = value;
  }
  return { ...kept, ...env, [MARK]: mark };
}

export function startDriver(spec: DriverSpec, env: DriverEnv, start: DriverStart): Promise<DriverSession> {
  if ('command' in spec) return Promise.resolve(commandDriver(spec.command, env, start));
  return typeof spec.module === 'string' ? workerDriver(spec.module, env, start) : inProcessDriver(spec.module, env);
}

/** A protocol error of the driver's own: the outcome it wrote cannot be read. */
function malformed(line: string, why: string, redactor: Redactor | undefined): Answer {
  const shown = redactor ? redactor.clip(line, 200) : line.slice(0, 200);
  return { broken: `the driver wrote ${JSON.stringify(shown)}, which is not an outcome: ${why}` };
}

function isClientError(value: unknown): value is ClientError {
  if (!value || typeof value !== 'object') return false;
  const e = value as Record<string, unknown>;
  return (
    (e.code === null || typeof e.code === 'string') &&
    (e.status === null || (typeof e.status === 'number' && Number.isInteger(e.status))) &&
    typeof e.retryable === 'boolean'
  );
}

/** The answer an outcome (without its id) gives, or why it is not one. */
export function answerOf(outcome: unknown, line = JSON.stringify(outcome), redactor?: Redactor): Answer {
  if (!outcome || typeof outcome !== 'object') return malformed(line, 'not a JSON object', redactor);
  const o = outcome as Record<string, unknown>;
  if (o.unsupported === true) return { unsupported: true };
  if (o.ok === true)
    return 'value' in o ? { ok: true, value: o.value } : malformed(line, '`ok: true` needs a `value`', redactor);
  if (o.ok === false)
    return isClientError(o.error)
      ? { ok: false, error: o.error }
      : malformed(
          line,
          '`error` needs `code` (string or null), `status` (integer or null) and `retryable` (boolean)',
          redactor,
        );
  return malformed(line, 'no `ok` (true or false) and no `unsupported: true`', redactor);
}

/**
 * The processes carrying a driver's mark (Linux, where /proc shows each process's
 * environment; elsewhere the process group is all there is to end).
 */
function marked(mark: string): number[] {
  if (process.platform !== 'linux') return [];
  const needle = `${MARK}=${mark}\0`;
  const found: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').includes(needle)) found.push(Number(name));
    } catch {
      // Gone, or another user's.
    }
  }
  return found;
}

/** Ends a driver's process group and every process that still carries its mark. */
function endAll(pid: number | undefined, mark: string): void {
  try {
    if (pid !== undefined) process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
  for (const other of marked(mark)) {
    try {
      process.kill(other, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
}

/** Lines of a stream, each up to `limit` characters: a longer one is reported once and not kept. */
function lineReader(limit: number, onLine: (line: string) => void, onTooLong: () => void) {
  let parts: string[] = [];
  let size = 0;
  let skipping = false;
  return (chunk: string) => {
    let from = 0;
    for (let end = chunk.indexOf('\n'); end >= 0; end = chunk.indexOf('\n', from)) {
      const piece = chunk.slice(from, end);
      from = end + 1;
      if (skipping || size + piece.length > limit) {
        if (!skipping) onTooLong();
        skipping = false;
      } else onLine(parts.join('') + piece);
      parts = [];
      size = 0;
    }
    if (from >= chunk.length || skipping) return;
    const rest = chunk.slice(from);
    if (size + rest.length > limit) {
      if (!skipping) onTooLong();
      skipping = true;
      parts = [];
      size = 0;
      return;
    }
    parts.push(rest);
    size += rest.length;
  };
}

function commandDriver(command: string, env: DriverEnv, start: DriverStart): DriverSession {
  const { redactor } = start;
  const limitMs = start.operationTimeoutMs ?? OPERATION_TIMEOUT_MS;
  const mark = randomUUID();
  let child: ChildProcessWithoutNullStreams;
  try {
    // A group of its own: the shell's children (`cd x && python3 driver.py`) end with it.
    child = spawn(command, {
      shell: true,
      detached: true,
      env: driverEnvironment(env, start.passEnv, mark),
      stdio: 'pipe',
    });
  } catch (error) {
    throw new SetupError(`--driver ${command}: cannot start it (${(error as Error).message}).`);
  }
  let errors = '';
  let ended: string | undefined;
  let nextId = 1;
  const waiting = new Map<number, (answer: Answer) => void>();
  /** The end of what it wrote on standard error, from a line's start, redacted before it is cut. */
  const lastErrors = () => {
    const whole = errors.length < STDERR_KEPT ? errors : errors.slice(errors.indexOf('\n') + 1);
    const shown = redactor.text(whole);
    return shown.length > STDERR_SHOWN ? `…${shown.slice(-STDERR_SHOWN)}` : shown;
  };
  const stop = (why: string) => {
    ended ??= why;
    for (const [id, resolve] of waiting) {
      waiting.delete(id);
      const written = errors ? `; it wrote on standard error: ${lastErrors()}` : '';
      resolve({ broken: `${why}${written}` });
    }
  };
  const kill = () => endAll(child.pid, mark);
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    errors = (errors + chunk).slice(-STDERR_KEPT);
  });
  // Decoded as a stream, so a character split between two chunks stays whole.
  child.stdout.setEncoding('utf8').on(
    'data',
    lineReader(
      LINE_LIMIT,
      (raw) => {
        const line = raw.trim();
        if (!line) return;
        let parsed: unknown;
        try {
          parsed = JSON.parse(line);
        } catch {
          stop(`the driver wrote ${JSON.stringify(redactor.clip(line, 200))} on standard output, which is not JSON`);
          return;
        }
        const id = (parsed as { id?: unknown })?.id;
        const resolve = typeof id === 'number' ? waiting.get(id) : undefined;
        if (!resolve) {
          stop(`the driver wrote an outcome for no operation waiting (${JSON.stringify(redactor.clip(line, 200))})`);
          return;
        }
        waiting.delete(id as number);
        resolve(answerOf(parsed, line, redactor));
      },
      () => {
        // Not an outcome of the protocol: the driver is not read further, and is ended.
        stop(`the driver wrote a line of more than ${LINE_LIMIT} characters on standard output`);
        kill();
      },
    ),
  );
  // A driver that ends, or cannot be started, leaves every waiting operation unanswered.
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      stop(`the driver ended (${signal ? `signal ${signal}` : `exit ${code}`})`);
      resolve();
    });
    child.once('error', (error) => {
      stop(`the driver could not run: ${error.message}`);
      resolve();
    });
  });
  child.stdin.on('error', () => undefined);
  return {
    ask(operation) {
      if (ended) return Promise.resolve({ broken: ended });
      const id = nextId++;
      return new Promise<Answer>((resolve) => {
        // A driver that gives no outcome is ended: a late one would be taken for the next operation's.
        const timer = setTimeout(() => {
          stop(`the driver gave no outcome within ${limitMs / 1000} s`);
          kill();
        }, limitMs);
        waiting.set(id, (answer) => {
          clearTimeout(timer);
          resolve(answer);
        });
        child.stdin.write(`${JSON.stringify({ id, ...operation } as Operation)}\n`);
      });
    },
    async close() {
      child.stdin.end();
      const timer = setTimeout(kill, EXIT_GRACE_MS);
      await exited;
      clearTimeout(timer);
      kill();
    },
  };
}

/**
 * What a module driver runs in: a worker thread that loads the module, makes its driver
 * from the environment it is given, and answers each operation it is sent. Written out as a
 * script so that it runs alike from the package's build and its sources.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const limit = workerData.limit;
const fail = (error) => (error instanceof Error ? error.name + ': ' + error.message : String(error));
(async () => {
  let driver;
  try {
    const loaded = await import(workerData.url);
    if (typeof loaded.default !== 'function') {
      parentPort.postMessage({ setup: 'its default export must be a function (env) => driver.' });
      return;
    }
    if (workerData.probe) return parentPort.postMessage({ ready: true });
    driver = await loaded.default(workerData.env);
  } catch (error) {
    parentPort.postMessage({ setup: fail(error) });
    return;
  }
  if (!driver || typeof driver.handle !== 'function') {
    parentPort.postMessage({ setup: 'the driver module gave no handle(operation).' });
    return;
  }
  parentPort.postMessage({ ready: true });
  parentPort.on('message', async (message) => {
    if (message.close) {
      try { await driver.close?.(); } catch {}
      parentPort.postMessage({ closed: true });
      return;
    }
    let said;
    try {
      said = JSON.stringify(await driver.handle(message.operation));
    } catch (error) {
      parentPort.postMessage({ id: message.operation.id, broken: 'the driver threw ' + fail(error) });
      return;
    }
    if (said === undefined) said = 'null';
    if (said.length > limit) {
      parentPort.postMessage({ id: message.operation.id, broken: 'the driver gave an outcome of more than ' + limit + ' characters' });
      return;
    }
    parentPort.postMessage({ id: message.operation.id, said });
  });
})();
`;

interface FromWorker {
  ready?: true;
  setup?: string;
  id?: number;
  said?: string;
  broken?: string;
  closed?: true;
}

/** A worker running WORKER for a module; `probe` only loads it and checks its default export. */
function moduleWorker(module: string, env: DriverEnv | undefined, start: DriverStart, probe: boolean): Worker {
  const url = moduleUrl(module, process.cwd(), '--driver-module');
  const mark = randomUUID();
  return new Worker(WORKER, {
    eval: true,
    workerData: { url, env, probe, limit: LINE_LIMIT },
    // The same isolation as a command's: the protocol's variables and the allowed ones.
    env: env ? driverEnvironment(env, start.passEnv, mark) : {},
    stdout: false,
    stderr: false,
  });
}

/** The first message of a worker (ready, or why it cannot run), within `ms`. */
function firstWord(worker: Worker, ms: number): Promise<FromWorker> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ setup: `it did not load within ${ms / 1000} s` }), ms);
    const done = (word: FromWorker) => {
      clearTimeout(timer);
      resolve(word);
    };
    worker.once('message', done);
    worker.once('error', (error) => done({ setup: error.message }));
    worker.once('exit', (code) => done({ setup: `it ended (exit ${code})` }));
  });
}

/** Loads a driver module once, apart, before any scenario: one that cannot be is a usage error. */
export async function checkDriverModule(module: string, start: DriverStart): Promise<void> {
  const worker = moduleWorker(module, undefined, start, true);
  const word = await firstWord(worker, LOAD_TIMEOUT_MS);
  await worker.terminate();
  if (word.setup) throw new SetupError(`--driver-module ${module}: cannot load it (${word.setup}).`);
}

async function workerDriver(module: string, env: DriverEnv, start: DriverStart): Promise<DriverSession> {
  const { redactor } = start;
  const limitMs = start.operationTimeoutMs ?? OPERATION_TIMEOUT_MS;
  const worker = moduleWorker(module, env, start, false);
  const word = await firstWord(worker, LOAD_TIMEOUT_MS);
  if (word.setup) {
    await worker.terminate();
    throw new SetupError(`the driver module could not make a driver: ${redactor.clip(word.setup, 300)}`);
  }
  let nextId = 1;
  let ended: string | undefined;
  const waiting = new Map<number, (answer: Answer) => void>();
  const stop = (why: string) => {
    ended ??= why;
    for (const [id, resolve] of waiting) {
      waiting.delete(id);
      resolve({ broken: why });
    }
  };
  worker.on('message', (message: FromWorker) => {
    const resolve = message.id === undefined ? undefined : waiting.get(message.id);
    if (!resolve || message.id === undefined) return;
    waiting.delete(message.id);
    if (message.broken !== undefined) return resolve({ broken: redactor.clip(message.broken, 1000) });
    let outcome: unknown;
    try {
      outcome = JSON.parse(message.said ?? 'null');
    } catch {
      outcome = undefined;
    }
    resolve(answerOf(outcome, message.said, redactor));
  });
  worker.on('error', (error) => stop(`the driver threw ${redactor.clip(`${error.name}: ${error.message}`, 1000)}`));
  worker.on('exit', (code) => stop(`the driver's worker ended (exit ${code})`));
  return {
    ask(operation) {
      // After an operation that never ended, its requests could be taken for the next one's.
      if (ended) return Promise.resolve({ broken: ended });
      const id = nextId++;
      return new Promise<Answer>((resolve) => {
        // A worker that gives no outcome in time is stopped, a busy loop included.
        const timer = setTimeout(() => {
          stop(`the driver gave no outcome within ${limitMs / 1000} s`);
          void worker.terminate();
        }, limitMs);
        waiting.set(id, (answer) => {
          clearTimeout(timer);
          resolve(answer);
        });
        worker.postMessage({ operation: { id, ...operation } as Operation });
      });
    },
    async close() {
      if (!ended) {
        worker.postMessage({ close: true });
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, EXIT_GRACE_MS);
          worker.once('message', () => {
            clearTimeout(timer);
            resolve();
          });
          worker.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      await worker.terminate();
    },
  };
}

/** A driver made by a factory the library was handed: it runs in this process, as the caller chose. */
async function inProcessDriver(factory: DriverFactory, env: DriverEnv): Promise<DriverSession> {
  let driver: ModuleDriver;
  try {
    driver = await factory(env);
  } catch (error) {
    throw new SetupError(`the driver module's factory threw: ${(error as Error).message}`);
  }
  if (typeof driver?.handle !== 'function') throw new SetupError('the driver module gave no handle(operation).');
  let nextId = 1;
  let ended: string | undefined;
  return {
    async ask(operation) {
      // After an operation that never ended, its requests could be taken for the next one's.
      if (ended) return { broken: ended };
      const id = nextId++;
      let timer: NodeJS.Timeout | undefined;
      try {
        return await Promise.race([
          Promise.resolve(driver.handle({ id, ...operation } as Operation)).then((outcome) => answerOf(outcome)),
          new Promise<Answer>((resolve) => {
            timer = setTimeout(() => {
              ended = `the driver gave no outcome within ${OPERATION_TIMEOUT_MS / 1000} s`;
              resolve({ broken: ended });
            }, OPERATION_TIMEOUT_MS);
          }),
        ]);
      } catch (error) {
        // What the client threw instead of answering: it crashed on this operation.
        return {
          broken: `the driver threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`,
        };
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      await driver.close?.();
    },
  };
}

/**
 * Starting a driver and talking to it (protocol.ts): a command, spoken to in JSON lines,
 * or a JavaScript module, called in this process. Either way a check sees a session that
 * answers each operation with the driver's outcome, or with why none came.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { moduleUrl } from '../../../adapters/load.ts';
import { SetupError } from '../../../core/outcome.ts';
import type { Answer, Ask, ClientError, DriverEnv, DriverFactory, ModuleDriver, Operation } from '../protocol.ts';

/** The driver under test: a shell command, or a module path (or its factory, from the library). */
export type DriverSpec = { command: string } | { module: string | DriverFactory };

/** Long enough for a client's whole retry budget around an answer the service withholds. */
export const OPERATION_TIMEOUT_MS = 90_000;
/** How long a command has to end once its standard input is closed. */
const EXIT_GRACE_MS = 5000;
/** How much of a command's standard error is kept, for the reason of a crash. */
const STDERR_KEPT = 4000;

export interface DriverSession {
  ask(operation: Ask): Promise<Answer>;
  /** Ends the driver (a command's standard input closed; a module's close()). */
  close(): Promise<void>;
}

/** Describes a driver in reports: the command, or the module. */
export function describeDriver(spec: DriverSpec): string {
  if ('command' in spec) return spec.command;
  return typeof spec.module === 'string' ? spec.module : 'a driver module';
}

export function startDriver(spec: DriverSpec, env: DriverEnv): Promise<DriverSession> {
  return 'command' in spec ? Promise.resolve(commandDriver(spec.command, env)) : moduleDriver(spec.module, env);
}

/** A protocol error of the driver's own: the outcome it wrote cannot be read. */
function malformed(line: string, why: string): Answer {
  return { broken: `the driver wrote ${JSON.stringify(line.slice(0, 200))}, which is not an outcome: ${why}` };
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
export function answerOf(outcome: unknown, line = JSON.stringify(outcome)): Answer {
  if (!outcome || typeof outcome !== 'object') return malformed(line, 'not a JSON object');
  const o = outcome as Record<string, unknown>;
  if (o.unsupported === true) return { unsupported: true };
  if (o.ok === true) return 'value' in o ? { ok: true, value: o.value } : malformed(line, '`ok: true` needs a `value`');
  if (o.ok === false)
    return isClientError(o.error)
      ? { ok: false, error: o.error }
      : malformed(line, '`error` needs `code` (string or null), `status` (integer or null) and `retryable` (boolean)');
  return malformed(line, 'no `ok` (true or false) and no `unsupported: true`');
}

function commandDriver(command: string, env: DriverEnv): DriverSession {
  let child: ChildProcessWithoutNullStreams;
  try {
    // A group of its own: the shell's children (`cd x && python3 driver.py`) end with it.
    child = spawn(command, { shell: true, detached: true, env: { ...process.env, ...env }, stdio: 'pipe' });
  } catch (error) {
    throw new SetupError(`--driver ${command}: cannot start it (${(error as Error).message}).`);
  }
  let errors = '';
  let ended: string | undefined;
  let nextId = 1;
  const waiting = new Map<number, (answer: Answer) => void>();
  const endAll = (why: string) => {
    ended ??= why;
    for (const [id, resolve] of waiting) {
      waiting.delete(id);
      resolve({ broken: `${why}${errors ? `; it wrote on standard error: ${errors.slice(-400)}` : ''}` });
    }
  };
  const kill = () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    errors = (errors + chunk).slice(-STDERR_KEPT);
  });
  let partial = '';
  // Decoded as a stream, so a character split between two chunks stays whole.
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines.map((l) => l.trim()).filter(Boolean)) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        endAll(`the driver wrote ${JSON.stringify(line.slice(0, 200))} on standard output, which is not JSON`);
        continue;
      }
      const id = (parsed as { id?: unknown })?.id;
      const resolve = typeof id === 'number' ? waiting.get(id) : undefined;
      if (!resolve) {
        endAll(`the driver wrote an outcome for no operation waiting (${JSON.stringify(line.slice(0, 200))})`);
        continue;
      }
      waiting.delete(id as number);
      resolve(answerOf(parsed, line));
    }
  });
  // A driver that ends, or cannot be started, leaves every waiting operation unanswered.
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      endAll(`the driver ended (${signal ? `signal ${signal}` : `exit ${code}`})`);
      resolve();
    });
    child.once('error', (error) => {
      endAll(`the driver could not run: ${error.message}`);
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
          endAll(`the driver gave no outcome within ${OPERATION_TIMEOUT_MS / 1000} s`);
          kill();
        }, OPERATION_TIMEOUT_MS);
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

/** The factory a driver module exports by default; a setup error when there is none. */
export async function loadDriverModule(module: string): Promise<DriverFactory> {
  let loaded: { default?: unknown };
  try {
    loaded = await import(moduleUrl(module, process.cwd(), '--driver-module'));
  } catch (error) {
    if (error instanceof SetupError) throw error;
    throw new SetupError(`--driver-module ${module}: cannot load it (${(error as Error).message}).`);
  }
  if (typeof loaded.default !== 'function')
    throw new SetupError(`--driver-module ${module}: its default export must be a function (env) => driver.`);
  return loaded.default as DriverFactory;
}

async function moduleDriver(module: string | DriverFactory, env: DriverEnv): Promise<DriverSession> {
  const factory = typeof module === 'function' ? module : await loadDriverModule(module);
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

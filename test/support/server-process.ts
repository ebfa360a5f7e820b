/**
 * The `payment-server` command as a user runs it (its bin, server/bin/payment-server.js),
 * for the tests
 * that need a process of its own: its flags and start lines, its signals, a descriptor
 * limit, several servers on one database, a SIGKILL. The in-process server of
 * `server.ts` serves every other test.
 */
import { type ChildProcess, type SpawnOptionsWithStdioTuple, spawn } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from './description.ts';

export const SERVER_BIN = path.join(repoRoot, 'server/bin/payment-server.js');
export const START_TIMEOUT_MS = 30_000;
/** The start line: the URL, then its host and port. */
export const LISTENING = /^payment-server listening on (http:\/\/(\S+?):(\d+))$/;
/** The server's own variables (server/README.md, "Flags"): a shell's settings must not change what a test starts. */
const SERVER_VARIABLES = ['SANDBOX_TOKEN', 'PORT', 'HOST', 'DATABASE_URL', 'PUBLIC_URL', 'DOCS_URL'];

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  child: ChildProcess;
  /** Every stdout line so far. */
  lines: string[];
  stderr: () => string;
  /** Resolves with the first stdout line matching, or rejects on exit or timeout. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<Exit>;
}

export interface StartedServer extends ServerProcess {
  url: string;
  host: string;
  port: number;
}

export interface ServerProcessOptions {
  /** Variables of the environment, over the test's own less the server's. */
  env?: Record<string, string>;
  cwd?: string;
  /** The process's open-file limit (`ulimit -n`). */
  descriptors?: number;
  /** The command's file when not the repository's: the bin of an installed package. */
  bin?: string;
}

/** Processes started here and still running: `killServerProcesses` ends them. */
const running = new Set<ChildProcess>();

/** Runs the command; its logs are silent unless `env` sets LOG_LEVEL. */
export function runServerProcess(args: string[], options: ServerProcessOptions = {}): ServerProcess {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of SERVER_VARIABLES) delete env[name];
  Object.assign(env, { LOG_LEVEL: 'silent' }, options.env);
  const spawnOptions: SpawnOptionsWithStdioTuple<'ignore', 'pipe', 'pipe'> = {
    cwd: options.cwd ?? repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  };
  const bin = options.bin ?? SERVER_BIN;
  const child =
    options.descriptors === undefined
      ? spawn(process.execPath, [bin, ...args], spawnOptions)
      : spawn(
          '/bin/sh',
          ['-c', `ulimit -n ${options.descriptors} && exec "$0" "$@"`, process.execPath, bin, ...args],
          spawnOptions,
        );
  running.add(child);
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    lines.push(...parts.map((l) => l.replace(/\r$/, '')));
    for (const wake of waiters) wake();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  let hasExited = false;
  const exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      hasExited = true;
      resolve({ code, signal });
      for (const wake of waiters) wake();
    });
  });

  function waitForLine(pattern: RegExp, timeoutMs = START_TIMEOUT_MS): Promise<RegExpMatchArray> {
    return new Promise((resolve, reject) => {
      const output = () => `\nstdout:\n${lines.join('\n')}\nstderr:\n${stderr}`;
      const done = (settle: () => void) => {
        clearTimeout(timer);
        waiters.delete(check);
        settle();
      };
      const check = () => {
        for (const line of lines) {
          const match = pattern.exec(line);
          if (match) return done(() => resolve(match));
        }
        if (hasExited || child.exitCode !== null)
          done(() => reject(new Error(`payment-server exited before printing ${pattern}${output()}`)));
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`no line ${pattern} within ${timeoutMs} ms${output()}`))),
        timeoutMs,
      );
      waiters.add(check);
      check();
    });
  }

  return { child, lines, stderr: () => stderr, waitForLine, exited };
}

/**
 * Starts the command and waits until it has printed everything it prints at start (the
 * docs line comes last) and has answered a request after that.
 */
export async function startServerProcess(args: string[], options: ServerProcessOptions = {}): Promise<StartedServer> {
  const server = runServerProcess(args, options);
  try {
    const [, url, host, port] = await server.waitForLine(LISTENING);
    await server.waitForLine(/^docs: /);
    await fetch(`${url}/healthz`);
    return { ...server, url: url!, host: host!, port: Number(port) };
  } catch (error) {
    server.child.kill('SIGKILL');
    throw error;
  }
}

/** Ends every process started here that still runs (a file's last clean-up). */
export function killServerProcesses(): void {
  for (const child of running) child.kill('SIGKILL');
}

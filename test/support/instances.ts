/**
 * `payment-server` processes for the tests of several servers on one database, started
 * as a user starts them (node server/dist/cli.js) and stopped, cleanly or by SIGKILL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from './description.ts';

export interface Instance {
  url: string;
  child: ChildProcess;
  /** Resolves when the process has ended, with how it ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const LISTENING = /^payment-server listening on (http:\/\/\S+)$/m;
const START_TIMEOUT_MS = 30_000;

/** The test's environment less the server's own variables: a shell's settings must not change what a test starts. */
function ownEnvironment(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['SANDBOX_TOKEN', 'PORT', 'HOST', 'DATABASE_URL', 'PUBLIC_URL', 'DOCS_URL']) delete env[name];
  return env;
}

export function startInstance(args: string[], env: Record<string, string> = {}): Promise<Instance> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'server/dist/cli.js'), '--port', '0', ...args], {
    cwd: repoRoot,
    env: { ...ownEnvironment(), LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let stdout = '';
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`payment-server did not start in time: ${stderr}`));
    }, START_TIMEOUT_MS);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = LISTENING.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      resolve({
        url: match[1]!,
        child,
        exited,
        async stop(signal = 'SIGTERM') {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          await exited;
        },
      });
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`payment-server exited before listening: ${stderr}`));
    });
  });
}

/** `count` servers on one database, with one sandbox token and one public URL (a proxy's). */
export function startInstances(
  count: number,
  options: { db: string; sandboxToken: string; publicUrl?: string },
): Promise<Instance[]> {
  const args = ['--db', options.db, '--sandbox-token', options.sandboxToken];
  if (options.publicUrl) args.push('--public-url', options.publicUrl);
  return Promise.all(Array.from({ length: count }, () => startInstance(args)));
}

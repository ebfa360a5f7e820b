/**
 * `payment-server` processes for the tests of several servers on one database, started
 * as a user starts them (server/bin/payment-server.js) and stopped, cleanly or by SIGKILL.
 */
import type { ChildProcess } from 'node:child_process';
import { type Exit, startServerProcess } from './server-process.ts';

export interface Instance {
  url: string;
  child: ChildProcess;
  /** Resolves when the process has ended, with how it ended. */
  exited: Promise<Exit>;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export async function startInstance(args: string[], env: Record<string, string> = {}): Promise<Instance> {
  const { url, child, exited } = await startServerProcess(['--port', '0', ...args], { env });
  return {
    url,
    child,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
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

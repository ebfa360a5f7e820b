/**
 * What the tests of the `payment-server` command share (cli.test.ts, cli-security.test.ts):
 * the command started and stopped as a user does, with a clean environment, and the few
 * requests they make of it.
 */
import { repoRoot } from '../support/description.ts';
import { type Exit, runServerProcess, type ServerProcess, startServerProcess } from '../support/server-process.ts';

export const STOP_TIMEOUT_MS = 5_000;

/** The command with a clean environment: none of the server's variables unless given, logs silent. */
export const run = (args: string[], env: Record<string, string> = {}, cwd = repoRoot) =>
  runServerProcess(args, { env, cwd });
export const start = (args: string[], env: Record<string, string> = {}, cwd = repoRoot) =>
  startServerProcess(args, { env, cwd });

export async function stop(server: ServerProcess, signal: NodeJS.Signals): Promise<Exit> {
  server.child.kill(signal);
  return withTimeout(
    server.exited,
    STOP_TIMEOUT_MS,
    `payment-server did not exit within ${STOP_TIMEOUT_MS} ms of ${signal}`,
  );
}

export function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms))),
  ]).finally(() => clearTimeout(timer));
}

export const printed = (lines: string[], pattern: RegExp) => lines.map((l) => pattern.exec(l)).find(Boolean)?.[1];

export async function getToken(url: string, clientId: string, clientSecret: string) {
  const res = await fetch(`${url}/api/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ clientId, clientSecret }).toString(),
  });
  return {
    status: res.status,
    body: (await res.json()) as { accessToken?: string; tokenType?: string; error?: string },
  };
}

export async function json(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: JSON.parse(text) as any };
}

const ORGANISATION = {
  settlementCurrency: 'NZD',
  cardEnabled: true,
  openBankingApproved: true,
  settlementAccount: true,
};

export function sandboxCreateOrganisation(url: string, token?: string) {
  return json(`${url}/sandbox/organisations`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(ORGANISATION),
  });
}

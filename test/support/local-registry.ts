/**
 * A real npm registry on loopback: Verdaccio (a devDependency of the repository) in a process
 * of its own, its configuration, storage and users in a folder the test gives, for the
 * release command to publish to and users' projects to install from. It has no uplink:
 * it serves only what was published to it, and only the scopes it is given, so nothing it
 * serves came from anywhere else. It logs every request, which `requests` reads.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './description.ts';

export interface LocalRegistry {
  /** `http://127.0.0.1:PORT/` */
  url: string;
  /** The requests it logged so far (`GET /@scope/name`), whatever their answer; its log comes in batches. */
  requests(): string[];
  /** Creates the user (as `npm adduser` does) and gives its token. */
  addUser(name: string, password: string): Promise<string>;
  stop(): Promise<void>;
}

/** Starts Verdaccio on a free port of 127.0.0.1, packages of `scopes` publishable by a signed-in user. */
export async function startLocalRegistry(dir: string, scopes: string[], timeoutMs: number): Promise<LocalRegistry> {
  const config = path.join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      'storage: ./storage',
      'auth:',
      '  htpasswd:',
      '    file: ./htpasswd',
      '    max_users: 1',
      // No uplink: a package it was not given is not found, rather than fetched from elsewhere.
      'uplinks: {}',
      'packages:',
      ...scopes.flatMap((scope) => [
        `  '${scope}/*':`,
        '    access: $all',
        '    publish: $authenticated',
        '    unpublish: $authenticated',
      ]),
      'web:',
      '  enable: false',
      'log: { type: stdout, format: pretty, level: http, colors: false }',
      '',
    ].join('\n'),
  );
  // Its programmatic start, so that it listens on a port the system chose and says which.
  const launcher = `import { runServer } from 'verdaccio';
const server = (await runServer(${JSON.stringify(config)})).listen(0, '127.0.0.1', () =>
  console.log('registry listening on http://127.0.0.1:' + server.address().port + '/'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));`;
  const child: ChildProcess = spawn(process.execPath, ['--input-type=module', '-e', launcher], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the registry did not start within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const check = () => {
      const match = /registry listening on (\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', check);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the registry exited at start:\n${output}`));
    });
  });

  return {
    url,
    requests: () => [
      ...new Set(
        [...output.matchAll(/^http <-- \d+, user: .*?, req: '([A-Z]+ \S+)'/gm)].map((m) => decodeURIComponent(m[1]!)),
      ),
    ],
    async addUser(name, password) {
      const res = await fetch(new URL(`-/user/org.couchdb.user:${encodeURIComponent(name)}`, url), {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ _id: `org.couchdb.user:${name}`, name, password, type: 'user', roles: [] }),
      });
      const body = (await res.json()) as { token?: string; error?: string };
      if (!res.ok || !body.token) throw new Error(`the registry refused the user ${name}: ${res.status} ${body.error}`);
      return body.token;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

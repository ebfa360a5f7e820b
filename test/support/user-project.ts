/**
 * A user's project outside the repository, for the tests of what users install (the
 * packaging test from tarballs, the registry test by name): commands run with the
 * environment of the user's shell, an empty project with its .npmrc, what an install
 * brought (packages, MB, seconds), and the prebuilt better-sqlite3 binary a server install
 * downloads, served from loopback.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { repoRoot } from './description.ts';

/** What the user's shell has: none of the variables npm sets for the script running these tests. */
export const userEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !/^(npm_|INIT_CWD$|NODE_OPTIONS$|VITEST)/i.test(name)),
) as NodeJS.ProcessEnv;

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = userEnv): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Runs the command; its stdout, or an error with everything it printed when it fails. */
export async function ok(command: string, args: string[], cwd: string, env?: NodeJS.ProcessEnv): Promise<string> {
  const ran = await run(command, args, cwd, env);
  if (ran.code !== 0)
    throw new Error(`${command} ${args.join(' ')} (in ${cwd}) exited ${ran.code}:\n${ran.stdout}\n${ran.stderr}`);
  return ran.stdout;
}

export interface Footprint {
  packages: string[];
  thirdParty: string[];
  megabytes: number;
  seconds: number;
  files: string[];
}

function walk(dir: string, found: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, found);
    else if (entry.isFile()) found.push(full);
  }
  return found;
}

/**
 * An empty project: its package.json (ESM, private) and an .npmrc as a user keeps one,
 * engine-strict, with any lines given (a registry for a scope).
 */
export function userProject(dir: string, packageJson: Record<string, unknown> = {}, npmrc: string[] = []): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify(
      { name: path.basename(dir), version: '1.0.0', private: true, type: 'module', ...packageJson },
      null,
      2,
    ),
  );
  writeFileSync(path.join(dir, '.npmrc'), ['engine-strict=true', 'fund=false', 'audit=false', ...npmrc, ''].join('\n'));
  return dir;
}

/** `npm <args>` in the project, timed, then what its node_modules holds. */
export async function npmInstall(dir: string, args: string[], env: NodeJS.ProcessEnv = userEnv): Promise<Footprint> {
  const started = Date.now();
  await ok('npm', args, dir, env);
  const seconds = (Date.now() - started) / 1000;
  const listed = (await ok('npm', ['ls', '--all', '--parseable'], dir))
    .split('\n')
    .filter((line) => line.includes('node_modules'));
  const installed = [
    ...new Set(listed.map((line) => line.slice(line.lastIndexOf('node_modules/') + 'node_modules/'.length))),
  ].sort();
  const all = walk(path.join(dir, 'node_modules'));
  const bytes = all.reduce((sum, file) => sum + statSync(file).size, 0);
  return {
    packages: installed,
    thirdParty: installed.filter((p) => !p.startsWith('@payment-service/')),
    megabytes: Math.round((bytes / 1e6) * 10) / 10,
    seconds,
    files: all,
  };
}

export function report(name: string, f: Footprint): void {
  console.log(
    `${name}: ${f.packages.length} packages, ${f.megabytes} MB, ${f.seconds.toFixed(1)} s; third-party (${f.thirdParty.length}): ${f.thirdParty.join(', ')}`,
  );
}

/**
 * A user's install of better-sqlite3 downloads its prebuilt binary for their Node and
 * platform (from GitHub, which this machine cannot reach, so it would compile from source
 * for a minute). The same download, served from loopback: the binary this repository's
 * own install built, packed as the release asset is. Gives the host to point npm at
 * (`npm_config_better_sqlite3_binary_host`); `close` stops serving it.
 */
export async function prebuiltSqlite(scratch: string): Promise<{ host: string; close: () => void }> {
  const stage = path.join(scratch, 'prebuild');
  mkdirSync(path.join(stage, 'build/Release'), { recursive: true });
  cpSync(
    path.join(repoRoot, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'),
    path.join(stage, 'build/Release/better_sqlite3.node'),
  );
  const asset = path.join(scratch, 'better-sqlite3-prebuild.tar.gz');
  await ok('tar', ['-czf', asset, '-C', stage, 'build/Release/better_sqlite3.node'], scratch);
  const body = readFileSync(asset);
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/gzip' }).end(body));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { host: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

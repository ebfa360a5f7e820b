/**
 * The packages as a user gets them: `npm pack` of every publishable package, the tarballs
 * installed in scratch projects outside the repository (one per kind of user: merchant,
 * validating team, sandbox user), then used there with plain Node and a strict TypeScript
 * compiler. Prints what each install brought (packages, MB, seconds).
 *
 * @tags long
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from './support/description.ts';
import { paced } from './support/pace.ts';

const scratch = mkdtempSync(path.join(tmpdir(), 'payment-packaging-'));
const tarballs = path.join(scratch, 'tarballs');
const tsc = path.join(repoRoot, 'node_modules/typescript/bin/tsc');

/** What the user's shell has: none of the variables npm sets for the script running these tests. */
const userEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !/^(npm_|INIT_CWD$|NODE_OPTIONS$|VITEST)/i.test(name)),
) as NodeJS.ProcessEnv;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = userEnv): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

async function ok(command: string, args: string[], cwd: string, env?: NodeJS.ProcessEnv): Promise<string> {
  const ran = await run(command, args, cwd, env);
  if (ran.code !== 0)
    throw new Error(`${command} ${args.join(' ')} (in ${cwd}) exited ${ran.code}:\n${ran.stdout}\n${ran.stderr}`);
  return ran.stdout;
}

interface Footprint {
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

/** A scratch project, and `npm install` of the given tarballs into it, measured. */
async function install(
  name: string,
  packages: string[],
  packageJson: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = userEnv,
): Promise<{ dir: string; footprint: Footprint }> {
  const dir = path.join(scratch, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', private: true, type: 'module', ...packageJson }, null, 2),
  );
  writeFileSync(path.join(dir, '.npmrc'), 'engine-strict=true\nfund=false\naudit=false\n');
  const files = packages.map((p) => path.join(tarballs, `payment-service-${p}-0.1.0.tgz`));
  const started = Date.now();
  await ok('npm', ['install', '--prefer-offline', ...files], dir, env);
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
    dir,
    footprint: {
      packages: installed,
      thirdParty: installed.filter((p) => !p.startsWith('@payment-service/')),
      megabytes: Math.round((bytes / 1e6) * 10) / 10,
      seconds,
      files: all,
    },
  };
}

function report(name: string, f: Footprint): void {
  console.log(
    `${name}: ${f.packages.length} packages, ${f.megabytes} MB, ${f.seconds.toFixed(1)} s; third-party (${f.thirdParty.length}): ${f.thirdParty.join(', ')}`,
  );
}

const SERVER_LIBRARIES = ['koa', '@koa/router', 'openapi-backend', 'better-sqlite3', 'pg', 'kysely', 'pino', 'jose'];
const LOADERS = ['tsx', 'esbuild', 'ts-node', 'typescript'];
const nativeFiles = (f: Footprint) => f.files.filter((file) => file.endsWith('.node') || file.endsWith('binding.gyp'));

/**
 * A user's install of better-sqlite3 downloads its prebuilt binary for their Node and
 * platform (from GitHub, which this machine cannot reach, so it would compile from source
 * for a minute). The same download, served from loopback: the binary this repository's
 * own install built, packed as the release asset is. Gives the host to point npm at.
 */
async function prebuiltSqlite(): Promise<string> {
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
  servers.add(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
const servers = new Set<http.Server>();

let client: { dir: string; footprint: Footprint };
let suite: { dir: string; footprint: Footprint };
let serverInstall: Promise<{ dir: string; footprint: Footprint }>;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  mkdirSync(tarballs);
  // prepack builds first (scripts share npm's stdout): the JSON is what follows its lines.
  const output = await ok(
    'npm',
    [
      'pack',
      '--json',
      '--pack-destination',
      tarballs,
      '-w',
      'generated',
      '-w',
      'client',
      '-w',
      'conformance',
      '-w',
      'server',
    ],
    repoRoot,
  );
  const packed = JSON.parse(output.slice(output.search(/^\[/m))) as Array<{
    name: string;
    files: Array<{ path: string }>;
  }>;
  expect(packed.map((p) => p.name).sort()).toEqual([
    '@payment-service/client',
    '@payment-service/conformance',
    '@payment-service/contract',
    '@payment-service/server',
  ]);
  for (const p of packed) {
    const files = p.files.map((f) => f.path);
    // What a user needs, and nothing of the repository's own: tests, benches, CI, build state.
    expect(
      files.filter((f) => /(^|\/)(test|bench|\.ci)\/|\.test\.|\.tsbuildinfo$|^tsconfig/.test(f)),
      p.name,
    ).toEqual([]);
    expect(files, p.name).toContain('README.md');
  }
  // The server's install compiles a native module: it runs while the others are checked.
  serverInstall = prebuiltSqlite().then((host) =>
    install(
      'sandbox-user',
      ['contract', 'client', 'server'],
      { allowScripts: { 'better-sqlite3': true } },
      { ...userEnv, npm_config_better_sqlite3_binary_host: host },
    ),
  );
  client = await install('merchant', ['contract', 'client']);
  suite = await install('validating-team', ['contract', 'client', 'conformance']);
}, paced(300_000));

afterAll(async () => {
  for (const server of servers) server.close();
  for (const child of children) child.kill('SIGKILL');
  await serverInstall?.catch(() => undefined);
  rmSync(scratch, { recursive: true, force: true });
});

const vectors = () =>
  JSON.parse(
    readFileSync(
      path.join(client.dir, 'node_modules/@payment-service/contract/webhook-signature-vectors.json'),
      'utf8',
    ),
  ) as {
    vectors: Array<{ name: string; secret: string; body: string; header: string; now: string; valid: boolean }>;
  };

describe('the client, installed from its tarball', () => {
  it('brings no native module, server library or loader, and at most 8 third-party packages', () => {
    report('client install', client.footprint);
    expect(nativeFiles(client.footprint)).toEqual([]);
    expect(client.footprint.packages.filter((p) => SERVER_LIBRARIES.includes(p) || LOADERS.includes(p))).toEqual([]);
    expect(client.footprint.thirdParty.length).toBeLessThanOrEqual(8);
  });

  it.each([
    ['ESM', 'module', "import { verifyWebhook, createPaymentClient } from '@payment-service/client';"],
    ['require', 'commonjs', "const { verifyWebhook, createPaymentClient } = require('@payment-service/client');"],
  ])('is loaded by plain node (%s) and verifies a signature vector', async (label, inputType, load) => {
    const valid = vectors().vectors.find((v) => v.name === 'plain' && v.valid)!;
    const script = `${load}
      const v = ${JSON.stringify(valid)};
      const delivery = verifyWebhook(v.body, v.header, v.secret, { now: Number(v.now) });
      console.log(typeof createPaymentClient, delivery.kind, delivery.event.transactionId);`;
    const out = await ok(process.execPath, [`--input-type=${inputType}`, '-e', script], client.dir);
    console.log(`node (${label}): ${out.trim()}`);
    expect(out).toMatch(/^function event \S+\n$/);
  });

  it('@payment-service/client/webhooks loads no HTTP client', async () => {
    // The same install without openapi-fetch: the webhooks entry still loads, the main one cannot.
    const bare = path.join(scratch, 'merchant-without-openapi-fetch');
    cpSync(client.dir, bare, { recursive: true });
    rmSync(path.join(bare, 'node_modules/openapi-fetch'), { recursive: true, force: true });
    const webhooks = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const w = await import('@payment-service/client/webhooks'); console.log(Object.keys(w).length)",
      ],
      bare,
    );
    expect(webhooks.code, webhooks.stderr).toBe(0);
    const main = await run(
      process.execPath,
      ['--input-type=module', '-e', "await import('@payment-service/client')"],
      bare,
    );
    expect(main.code).not.toBe(0);
    expect(main.stderr).toContain("Cannot find package 'openapi-fetch'");
  });

  it.each([
    ['nodenext', { module: 'nodenext', moduleResolution: 'nodenext' }],
    ['bundler', { module: 'esnext', moduleResolution: 'bundler' }],
  ])(
    'type-checks a strict TypeScript consumer (%s, skipLibCheck off)',
    async (name, resolution) => {
      const dir = path.join(scratch, `typescript-${name}`);
      cpSync(client.dir, dir, { recursive: true });
      await ok('npm', ['install', '--prefer-offline', '--no-save', `@types/node@${readTypesNodeVersion()}`], dir);
      writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            ...resolution,
            target: 'es2022',
            strict: true,
            noEmit: true,
            skipLibCheck: false,
            types: ['node'],
          },
          files: ['consumer.ts'],
        }),
      );
      writeFileSync(
        path.join(dir, 'consumer.ts'),
        `import { createPaymentClient, type CheckoutSessionCreated } from '@payment-service/client';
import { verifyWebhook } from '@payment-service/client/webhooks';
import type { components } from '@payment-service/contract';

const client = createPaymentClient({ baseUrl: 'http://127.0.0.1:4010', clientId: 'ck_test_1', clientSecret: 'sk_1' });

export function create(): Promise<CheckoutSessionCreated> {
  return client.createCheckoutSession({ type: 'single', amount: { total: 25 }, creditorReference: { reference: 'ORDER-1' }, checkoutMethod: 'card', redirectUrl: 'https://shop.example/done' });
}

export function wrongMethod() {
  // @ts-expect-error checkoutMethod is open_banking, card or both
  return client.createCheckoutSession({ type: 'single', amount: { total: 25 }, creditorReference: { reference: 'ORDER-1' }, checkoutMethod: 'cash', redirectUrl: 'https://shop.example/done' });
}

export const status: components['schemas']['CheckoutSession']['status'] = 'some_future_status';
export const verify = (body: Buffer, header: string) => verifyWebhook(body, header, 'whsec_x');
`,
      );
      const checked = await run(process.execPath, [tsc, '-p', dir], dir);
      console.log(
        `tsc (${name}): exit ${checked.code}${checked.stdout.trim() ? `\n${checked.stdout}` : ', no errors'}`,
      );
      expect(checked.stdout).toBe('');
      expect(checked.code).toBe(0);
    },
    paced(120_000),
  );
});

function readTypesNodeVersion(): string {
  return (
    JSON.parse(readFileSync(path.join(repoRoot, 'node_modules/@types/node/package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
}

/**
 * The two CI recipes of the conformance README (GitHub Actions, GitLab CI): their install
 * and check steps, which must be the same in both, and where both keep the reports.
 */
function ciRecipe(readme: string): { install: string; check: string; client: string; artifacts: string } {
  const start = readme.indexOf('## In CI');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  const blocks = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => parseYaml(m[1]!));
  expect(blocks).toHaveLength(2);
  const [github, gitlab] = blocks as [any, any];
  const steps = github.jobs.conformance.steps as Array<{ name?: string; run?: string; uses?: string; with?: any }>;
  const install = steps.find((s) => s.name === 'Install the suite')!.run!;
  const check = steps.find((s) => s.name === 'Check the test environment')!.run!;
  const client = steps.find((s) => s.name === 'Check our API client')!.run!;
  expect(gitlab.conformance.script).toEqual([install, check, client]);
  expect(check).toContain('--require-capabilities all');
  expect(check).toMatch(/^npx --no -- payment-conformance /);
  const artifacts = steps.find((s) => s.uses?.startsWith('actions/upload-artifact'))!.with.path as string;
  expect(gitlab.conformance.artifacts.paths).toEqual([artifacts]);
  expect(gitlab.conformance.artifacts.reports.junit).toEqual([
    `${artifacts}/conformance.junit.xml`,
    `${artifacts}/client/conformance.junit.xml`,
  ]);
  expect(check).toContain(`--out ${artifacts}`);
  expect(client).toContain(`--out ${artifacts}/client`);
  return { install, check, client, artifacts };
}

describe('the conformance suite and the server, each installed from its tarball', () => {
  it('the suite brings no server code, TypeScript loader or native module', () => {
    report('conformance install', suite.footprint);
    expect(nativeFiles(suite.footprint)).toEqual([]);
    expect(
      suite.footprint.packages.filter(
        (p) => p === '@payment-service/server' || SERVER_LIBRARIES.includes(p) || LOADERS.includes(p),
      ),
    ).toEqual([]);
  });

  it('every link of the installed suite’s README and reference pages resolves inside the package, anchors included', () => {
    const dir = path.join(suite.dir, 'node_modules/@payment-service/conformance');
    const pages = ['README.md', ...readdirSync(path.join(dir, 'docs')).map((f) => `docs/${f}`)];
    // An anchor is an explicit `<a id>` (checks, clauses, capabilities, commands) or a
    // heading, by the id GitHub gives it.
    const anchorsOf = (text: string) =>
      new Set([
        ...[...text.matchAll(/<a id="([^"]+)"><\/a>/g)].map((m) => m[1]!),
        ...[...text.matchAll(/^#+ (.+)$/gm)].map((m) =>
          m[1]!
            .replace(/<[^>]+>/g, '')
            .trim()
            .toLowerCase()
            .replace(/[^\p{L}\p{N}\s_-]/gu, '')
            .replace(/\s/g, '-'),
        ),
      ]);
    const links = pages.flatMap((page) =>
      [...readFileSync(path.join(dir, page), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)]
        .map((m) => m[1]!)
        .filter((l) => !/^(https?:|mailto:)/.test(l))
        .map((link) => ({ page, link })),
    );
    expect(links.length).toBeGreaterThan(1000);
    // The README leads to every reference page.
    const fromReadme = links.filter((l) => l.page === 'README.md').map((l) => l.link.split('#')[0]);
    expect(pages.filter((p) => p !== 'README.md' && !fromReadme.includes(p))).toEqual([]);
    const broken = links.filter(({ page, link }) => {
      const [file, anchor] = link.split('#');
      const target = file ? path.join(dir, path.dirname(page), file) : path.join(dir, page);
      if (!existsSync(target)) return true;
      return anchor !== undefined && !anchorsOf(readFileSync(target, 'utf8')).has(anchor);
    });
    expect(broken).toEqual([]);
  });

  it('the installed payment-conformance lists every check', async () => {
    const out = await ok(path.join(suite.dir, 'node_modules/.bin/payment-conformance'), ['list'], suite.dir);
    const ids = out
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(/\s+/)[0]);
    console.log(`payment-conformance list: ${ids.length} checks (${ids[0]} … ${ids.at(-1)})`);
    expect(ids.length).toBeGreaterThanOrEqual(100);
    expect(ids.every((id) => /^[A-Z]+-\d{3}$/.test(id!))).toBe(true);
  });

  it(
    'the CI recipes run as written against the payment-server started from its own installed tarball, and pass',
    async () => {
      const server = await serverInstall;
      report('server install', server.footprint);
      const child = spawn(
        path.join(server.dir, 'node_modules/.bin/payment-server'),
        ['--port', '0', '--db', ':memory:', '--sandbox-token', 'sbx-packaging'],
        {
          cwd: server.dir,
          env: { ...userEnv, LOG_LEVEL: 'warn' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      children.add(child);
      let printed = '';
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (printed += chunk));
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`payment-server did not start:\n${printed}`)), 30_000);
        child.stdout!.on('data', () => {
          const match = /listening on (\S+)/.exec(printed);
          if (match && printed.includes('docs: ')) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
        child.once('exit', (code) => reject(new Error(`payment-server exited ${code}:\n${printed}`)));
      });
      try {
        expect((await fetch(`${url}/docs/`)).headers.get('content-type')).toContain('text/html');
        // The CI recipes of the installed README, run as written by bash in an empty runner
        // directory: the install step (the tarballs standing for the registry's package), then
        // the check step, with the pipeline's variables set.
        const recipe = ciRecipe(
          readFileSync(path.join(suite.dir, 'node_modules/@payment-service/conformance/README.md'), 'utf8'),
        );
        const runner = path.join(scratch, 'ci-runner');
        mkdirSync(runner);
        const packed = ['contract', 'client', 'conformance']
          .map((p) => path.join(tarballs, `payment-service-${p}-0.1.0.tgz`))
          .join(' ');
        await ok('bash', ['-c', recipe.install.replace('@payment-service/conformance', packed)], runner);
        const ran = await run('bash', ['-c', recipe.check], runner, {
          ...userEnv,
          NO_COLOR: '1',
          TARGET_URL: url,
          SANDBOX_TOKEN: 'sbx-packaging',
        });
        const summary = ran.stdout.split('\n').filter((line) => /passed|must checks judged/.test(line));
        console.log(`the CI recipe's check step: exit ${ran.code}; ${summary.join('; ')}`);
        expect(ran.code, `${ran.stdout}\n${ran.stderr}`).toBe(0);
        expect(ran.stdout).toContain('PASSED: no must check failed');
        expect(ran.stdout.trim().split('\n').at(-1)).toMatch(/^(\d+) of \1 must checks judged$/);
        const junit = readFileSync(path.join(runner, recipe.artifacts, 'conformance.junit.xml'), 'utf8');
        expect(junit).toMatch(/<testsuites [^>]*failures="0"/);
        expect(existsSync(path.join(runner, recipe.artifacts, 'conformance.html'))).toBe(true);
        // The client step, with the examples' Python client committed where the recipe has it.
        cpSync(path.join(repoRoot, 'examples/clients/python'), path.join(runner, 'clients/python'), {
          recursive: true,
        });
        const clientRan = await run('bash', ['-c', recipe.client], runner, {
          ...userEnv,
          NO_COLOR: '1',
          TARGET_URL: url,
          SANDBOX_TOKEN: 'sbx-packaging',
        });
        expect(clientRan.code, `${clientRan.stdout}\n${clientRan.stderr}`).toBe(0);
        expect(clientRan.stdout).toContain('PASSED: no must check failed');
        const clientJunit = readFileSync(path.join(runner, recipe.artifacts, 'client/conformance.junit.xml'), 'utf8');
        expect(clientJunit).toMatch(/<testsuites [^>]*failures="0"/);
      } finally {
        child.kill('SIGTERM');
        children.delete(child);
      }
    },
    paced(300_000),
  );
});

/**
 * The packages as a user gets them before they are on a registry: `npm run release:pack`
 * (README.md, Install), and in scratch projects outside the repository (one per kind of
 * user: merchant, validating team, sandbox user) the install command it prints for each,
 * then the packages used there with plain Node and a strict TypeScript compiler. Prints
 * what each install brought (packages, MB, seconds).
 *
 * @tags long
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from './support/description.ts';
import { paced } from './support/pace.ts';
import {
  type Footprint,
  npmInstall,
  ok,
  prebuiltSqlite,
  report,
  run,
  userEnv,
  userProject,
} from './support/user-project.ts';

const scratch = mkdtempSync(path.join(tmpdir(), 'payment-packaging-'));
const tarballs = path.join(scratch, 'tarballs');
const tsc = path.join(repoRoot, 'node_modules/typescript/bin/tsc');

/** The four tarballs by package (`client`, `contract`, ...), as `npm pack` names them. */
const TARBALL = /^payment-service-(client|conformance|contract|server)-\d+\.\d+\.\d+(?:-[\w.]+)?\.tgz$/;

/** What `npm run release:pack` printed, and the install command it gave for each package. */
let packed: string;
const commands = new Map<string, string[]>();

/** A scratch project, and the install command `release:pack` printed for the package, run there with the tarballs, measured. */
async function install(
  name: string,
  pkg: string,
  packageJson: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = userEnv,
): Promise<{ dir: string; footprint: Footprint }> {
  const dir = userProject(path.join(scratch, name), packageJson);
  const command = commands.get(pkg);
  if (!command) throw new Error(`release:pack printed no install command for ${pkg}:\n${packed}`);
  return { dir, footprint: await npmInstall(dir, [...command.slice(1), '--prefer-offline'], env) };
}

const SERVER_LIBRARIES = ['koa', '@koa/router', 'openapi-backend', 'better-sqlite3', 'pg', 'kysely', 'pino', 'jose'];
const LOADERS = ['tsx', 'esbuild', 'ts-node', 'typescript'];
const nativeFiles = (f: Footprint) => f.files.filter((file) => file.endsWith('.node') || file.endsWith('binding.gyp'));
const closers = new Set<() => void>();

let client: { dir: string; footprint: Footprint };
let suite: { dir: string; footprint: Footprint };
let serverInstall: Promise<{ dir: string; footprint: Footprint }>;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  // The tarballs as a maintainer makes them (README.md, Install): the script builds what changed first.
  packed = await ok('npm', ['run', '--silent', 'release:pack', '--', '--out', tarballs], repoRoot);
  for (const line of packed.split('\n')) {
    const words = line.trim().split(/\s+/);
    if (words[0] !== 'npm' || words[1] !== 'install') continue;
    // The package a command installs is its last tarball: the others are its dependencies.
    const pkg = TARBALL.exec(path.basename(words.at(-1)!))?.[1];
    if (pkg) commands.set(pkg, words);
  }
  const files = readdirSync(tarballs).sort();
  expect(files.map((f) => TARBALL.exec(f)?.[1])).toEqual(['client', 'conformance', 'contract', 'server']);
  expect([...commands.keys()].sort()).toEqual(['client', 'conformance', 'contract', 'server']);
  for (const file of files) {
    const listed = (await ok('tar', ['-tzf', path.join(tarballs, file)], scratch))
      .split('\n')
      .filter(Boolean)
      .map((f) => f.replace(/^package\//, ''));
    // What a user needs, and nothing of the repository's own: tests, benches, CI, build state.
    expect(
      listed.filter((f) => /(^|\/)(test|bench|\.ci)\/|\.test\.|\.tsbuildinfo$|^tsconfig/.test(f)),
      file,
    ).toEqual([]);
    expect(listed, file).toContain('README.md');
  }
  // The server's install compiles a native module: it runs while the others are checked.
  serverInstall = prebuiltSqlite(scratch).then(({ host, close }) => {
    closers.add(close);
    return install(
      'sandbox-user',
      'server',
      { allowScripts: { 'better-sqlite3': true } },
      { ...userEnv, npm_config_better_sqlite3_binary_host: host },
    );
  });
  client = await install('merchant', 'client');
  suite = await install('validating-team', 'conformance');
}, paced(300_000));

afterAll(async () => {
  for (const close of closers) close();
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

describe('npm run release:pack', () => {
  it('prints each tarball with its size, and for each kind of user the install command README.md gives', () => {
    for (const file of readdirSync(tarballs))
      expect(packed).toMatch(new RegExp(`${file.replace(/\./g, '\\.')} +[\\d.]+ kB`));
    // README.md's commands name the tarballs copied into the project; the version aside
    // (the script prints the one it packed), they are the script's own.
    const sameVersion = (command: string) => command.replace(/-\d+\.\d+\.\d+(?:-[\w.]+)?\.tgz/g, '-<version>.tgz');
    const printed = [...packed.matchAll(/^ *(npm install .*)$/gm)].map((m) =>
      sameVersion(m[1]!.replace(/\S+\/(payment-service-\S+\.tgz)/g, './$1')),
    );
    const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
    const start = readme.indexOf('\n## Install\n');
    const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
    const documented = [...section.matchAll(/^(npm install .*\.tgz)$/gm)].map((m) => sameVersion(m[1]!));
    expect(printed).toHaveLength(4);
    expect(documented).toEqual(printed);
  });
});

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

  it('the suite leaves out its optional certificate library (selfsigned, for --receiver-tls) and its X.509 libraries', () => {
    expect(suite.footprint.packages.filter((p) => /^(selfsigned|pkijs|asn1js|@peculiar\/)/.test(p))).toEqual([]);
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
        const suiteTarballs = commands
          .get('conformance')!
          .filter((word) => word.endsWith('.tgz'))
          .join(' ');
        await ok('bash', ['-c', recipe.install.replace('@payment-service/conformance', suiteTarballs)], runner);
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

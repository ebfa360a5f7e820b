/**
 * A release as users get it from a registry: the four packages published with the
 * maintainers' release command (`npm run release:publish`, which is `changeset publish`) to a
 * real registry on loopback (Verdaccio, test/support/local-registry.ts), then installed by
 * name, one empty project per kind of user (README.md, Install), whose .npmrc takes the
 * @payment-service scope from that registry and everything else from the public one, as a
 * private scope's registry is used. There the installed server starts, the SDK creates a
 * checkout session on it, and the installed suite checks it; the suite's `--receiver-tls`
 * names the command that installs its optional certificate library, and works once that
 * ran. Prints what each install brought (packages, MB, seconds). Needs `npm run build` (npm
 * test runs it first): the packages are published as built.
 *
 * @tags long
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from './support/description.ts';
import { type LocalRegistry, startLocalRegistry } from './support/local-registry.ts';
import { paced } from './support/pace.ts';
import { type StartedServer, startServerProcess } from './support/server-process.ts';
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

const scratch = mkdtempSync(path.join(tmpdir(), 'payment-registry-'));
const FOLDERS = ['generated', 'client', 'conformance', 'server'];
const SANDBOX_TOKEN = 'sbx-registry-test-0123456789abcdef';

interface Manifest {
  name: string;
  version: string;
  peerDependencies?: Record<string, string>;
}
const manifest = (folder: string) =>
  JSON.parse(readFileSync(path.join(repoRoot, folder, 'package.json'), 'utf8')) as Manifest;
const PACKAGES = FOLDERS.map(manifest);
const versionOf = (name: string) => PACKAGES.find((p) => p.name === name)!.version;

const tagsOf = (dir: string) =>
  execFileSync('git', ['tag', '--list', '@payment-service/*'], { cwd: dir, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .sort();

let registry: LocalRegistry;
const closers = new Set<() => void>();
const children = new Set<ChildProcess>();
/** What the release command printed, each time it ran. */
const published: string[] = [];
let releaseCopy: string;
let repoTagsBefore: string[];
let tagsPublished: string[];
let server: StartedServer;
const installs = new Map<string, { dir: string; footprint: Footprint }>();

/** An empty project that takes the scope from the local registry, and `npm install` of the package by name. */
async function installByName(
  name: string,
  args: string[],
  packageJson: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = userEnv,
): Promise<{ dir: string; footprint: Footprint }> {
  const dir = userProject(path.join(scratch, name), packageJson, [`@payment-service:registry=${registry.url}`]);
  const installed = { dir, footprint: await npmInstall(dir, ['install', ...args], env) };
  installs.set(name, installed);
  return installed;
}

beforeAll(async () => {
  for (const folder of FOLDERS)
    if (!existsSync(path.join(repoRoot, folder, 'dist')))
      throw new Error(`${folder}/dist is missing: run \`npm run build\` first.`);
  const registryDir = path.join(scratch, 'registry');
  mkdirSync(registryDir);
  registry = await startLocalRegistry(registryDir, ['@payment-service'], paced(30_000));
  const token = await registry.addUser('maintainer', 'release-rehearsal-password');
  const userconfig = path.join(scratch, 'maintainer.npmrc');
  writeFileSync(userconfig, `//${new URL(registry.url).host}/:_authToken=${token}\n`);

  // The release command runs in a copy: `changeset publish` tags the repository it runs in.
  // The copy holds the packages as built, not what their prepack builds them from, so
  // the scripts are off (`npm run` still runs the one it is told to).
  releaseCopy = path.join(scratch, 'release');
  for (const folder of FOLDERS)
    cpSync(path.join(repoRoot, folder), path.join(releaseCopy, folder), {
      recursive: true,
      filter: (source) => path.basename(source) !== 'node_modules',
    });
  cpSync(path.join(repoRoot, 'package.json'), path.join(releaseCopy, 'package.json'));
  cpSync(path.join(repoRoot, '.changeset'), path.join(releaseCopy, '.changeset'), { recursive: true });
  writeFileSync(path.join(releaseCopy, '.gitignore'), 'node_modules\n');
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(releaseCopy, 'node_modules'));
  const git = (...args: string[]) =>
    ok('git', ['-c', 'user.name=Release', '-c', 'user.email=release@example.invalid', ...args], releaseCopy);
  await git('init', '--quiet', '--initial-branch', 'main');
  await git('config', 'tag.gpgSign', 'false');
  await git('add', '--all');
  await git('commit', '--quiet', '--no-gpg-sign', '--message', 'Release');
  repoTagsBefore = tagsOf(repoRoot);
  const maintainerEnv = {
    ...userEnv,
    NPM_CONFIG_USERCONFIG: userconfig,
    npm_config_registry: registry.url,
    npm_config_ignore_scripts: 'true',
    NO_COLOR: '1',
  };
  // A publish that stopped halfway: the contract went up, the rest did not.
  await ok('npm', ['publish', path.join(releaseCopy, 'generated'), '--access', 'public'], releaseCopy, maintainerEnv);
  for (let i = 0; i < 2; i++) {
    const ran = await run('npm', ['run', 'release:publish'], releaseCopy, maintainerEnv);
    published.push(`exit ${ran.code}\n${ran.stdout}\n${ran.stderr}`);
  }
  console.log(`npm run release:publish, after a publish that stopped halfway:\n${published[0]}`);
  tagsPublished = tagsOf(releaseCopy);
  // The tag of what went up before the stop, made afterwards as RELEASING.md says.
  await ok('npx', ['--no', '--', 'changeset', 'tag'], releaseCopy, maintainerEnv);
}, paced(120_000));

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  for (const close of closers) close();
  await registry?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** `payment-conformance run` against the installed server, from a user's project, as the user types it. */
const suiteRun = (dir: string, args: string[]) =>
  run(
    'npx',
    ['--no', '--', 'payment-conformance', 'run', '--base-url', server.url, '--sandbox-token', SANDBOX_TOKEN, ...args],
    dir,
    { ...userEnv, NO_COLOR: '1' },
  );

describe('npm run release:publish to a registry', () => {
  it('publishes what is not there yet, skips what is, tags each package it published, there only', async () => {
    const [first, again] = published as [string, string];
    expect(first, first).toMatch(/^exit 0\n/);
    expect(first).toMatch(/@payment-service\/contract is not being published because version \S+ is already published/);
    for (const name of ['@payment-service/client', '@payment-service/conformance', '@payment-service/server'])
      expect(first).toContain(`New tag:  ${name}@${versionOf(name)}`);
    expect(first).not.toContain('New tag:  @payment-service/contract@');
    expect(tagsPublished).toEqual(
      ['@payment-service/client', '@payment-service/conformance', '@payment-service/server'].map(
        (name) => `${name}@${versionOf(name)}`,
      ),
    );
    // `changeset tag` made the one missing.
    expect(tagsOf(releaseCopy)).toEqual(PACKAGES.map(({ name, version }) => `${name}@${version}`).sort());
    // Run again, it finds everything there: nothing to publish, and not a failure.
    expect(again, again).toMatch(/^exit 0\n/);
    expect(again).toContain('No unpublished projects to publish');
    // The developer's repository is left as it was.
    expect(tagsOf(repoRoot)).toEqual(repoTagsBefore);
    for (const { name, version } of PACKAGES) {
      const packument = (await (await fetch(new URL(name.replace('/', '%2f'), registry.url))).json()) as {
        'dist-tags': Record<string, string>;
      };
      expect(packument['dist-tags'], name).toEqual({ latest: version });
    }
  });
});

describe('installed by name from the registry', () => {
  beforeAll(async () => {
    // The server's install compiles a native module: it runs while the others install.
    const serverInstall = prebuiltSqlite(scratch).then(({ host, close }) => {
      closers.add(close);
      return installByName(
        'sandbox-user',
        ['@payment-service/server'],
        { allowScripts: { 'better-sqlite3': true } },
        { ...userEnv, npm_config_better_sqlite3_binary_host: host },
      );
    });
    await installByName('tool-builder', ['@payment-service/contract']);
    await installByName('merchant', ['@payment-service/client']);
    await installByName('validating-team', ['-D', '@payment-service/conformance']);
    const { dir } = await serverInstall;
    server = await startServerProcess(['--port', '0', '--db', ':memory:', '--sandbox-token', SANDBOX_TOKEN], {
      bin: path.join(dir, 'node_modules/.bin/payment-server'),
      cwd: dir,
    });
    children.add(server.child);
  }, paced(300_000));

  it('each install brings our packages from the local registry, each at its published version', async () => {
    for (const [name, { dir, footprint }] of installs) {
      report(`${name} install`, footprint);
      const ours = footprint.packages.filter((p) => p.startsWith('@payment-service/'));
      expect(ours.length, name).toBeGreaterThan(0);
      for (const p of ours)
        expect(
          (JSON.parse(readFileSync(path.join(dir, 'node_modules', p, 'package.json'), 'utf8')) as Manifest).version,
        ).toBe(versionOf(p));
    }
    // npm asked the local registry for each of ours: nothing else could have answered it.
    await expect
      .poll(() => registry.requests().filter((r) => r.startsWith('GET /@payment-service/')))
      .toEqual(expect.arrayContaining(PACKAGES.map((p) => `GET /${p.name}`)));
  });

  it('the contract: the description and its version, by plain node', async () => {
    const out = await ok(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "import d from '@payment-service/contract/openapi.json' with { type: 'json' }; console.log(d.info.version, Object.keys(d.paths).length)",
      ],
      installs.get('tool-builder')!.dir,
    );
    console.log(`contract: ${out.trim()}`);
    expect(out).toMatch(new RegExp(`^${versionOf('@payment-service/contract').replace(/\./g, '\\.')} [1-9]\\d*\\n$`));
    expect(installs.get('tool-builder')!.footprint.thirdParty).toEqual([]);
  });

  it('the server: npx payment-server --help and --version; started, it prints the demo organisation', async () => {
    const dir = installs.get('sandbox-user')!.dir;
    const help = await ok('npx', ['--no', '--', 'payment-server', '--help'], dir);
    expect(help).toContain('--sandbox-token');
    expect((await ok('npx', ['--no', '--', 'payment-server', '--version'], dir)).trim()).toBe(
      versionOf('@payment-service/server'),
    );
    expect(server.lines.join('\n')).toMatch(/test clientId: +ck_test_/);
  });

  it('the SDK, imported by plain node, gets a token and creates and reads back a checkout session', async () => {
    const lines = server.lines.join('\n');
    const clientId = /test clientId: +(\S+)/.exec(lines)![1]!;
    const clientSecret = /test clientSecret: +(\S+)/.exec(lines)![1]!;
    const script = `import { createPaymentClient } from '@payment-service/client';
const pay = createPaymentClient({ baseUrl: ${JSON.stringify(server.url)}, clientId: ${JSON.stringify(clientId)}, clientSecret: process.env.CLIENT_SECRET });
const token = await pay.getAccessToken();
const created = await pay.createCheckoutSession(
  { type: 'single', amount: { total: 25.5 }, creditorReference: { reference: 'ORDER-1001' }, checkoutMethod: 'both', redirectUrl: 'https://shop.example/thanks' },
  { idempotencyKey: 'order-1001' },
);
const read = await pay.getCheckoutSession(created.id);
console.log(token.length > 0, created.id, read.id === created.id, read.status);`;
    const out = await ok(process.execPath, ['--input-type=module', '-e', script], installs.get('merchant')!.dir, {
      ...userEnv,
      CLIENT_SECRET: clientSecret,
    });
    console.log(`SDK: ${out.trim()}`);
    expect(out).toMatch(/^true cs_\S+ true \w+\n$/);
  });

  it('the suite: npx payment-conformance --version, and a run against the installed server passes', async () => {
    const dir = installs.get('validating-team')!.dir;
    expect((await ok('npx', ['--no', '--', 'payment-conformance', '--version'], dir)).trim()).toBe(
      versionOf('@payment-service/conformance'),
    );
    const ran = await suiteRun(dir, ['--only', 'TOKEN-*,AUTH-*']);
    const summary = ran.stdout.split('\n').filter((line) => /passed|must checks judged/.test(line));
    console.log(`payment-conformance run --only 'TOKEN-*,AUTH-*': exit ${ran.code}; ${summary.join('; ')}`);
    expect(ran.code, `${ran.stdout}\n${ran.stderr}`).toBe(0);
    expect(ran.stdout).toContain('PASSED: no must check failed');
  });

  it(
    'the suite: --receiver-tls without selfsigned stops at setup naming the install command; after it, serves HTTPS',
    async () => {
      const { dir, footprint } = installs.get('validating-team')!;
      expect(footprint.packages).not.toContain('selfsigned');
      const tlsRun = () => suiteRun(dir, ['--only', 'TOKEN-001', '--receiver-tls']);
      const refused = await tlsRun();
      console.log(`payment-conformance run --receiver-tls without selfsigned: exit ${refused.code}\n${refused.stderr}`);
      expect(refused.code).toBe(2);
      const install = `npm install -D selfsigned@${manifest('conformance').peerDependencies!.selfsigned}`;
      expect(refused.stderr).toContain(`--receiver-tls`);
      expect(refused.stderr).toContain(install);
      expect(existsSync(path.join(dir, 'reports/conformance/receiver-ca.pem'))).toBe(false);
      // The command as the message gives it.
      const withTls = await npmInstall(dir, install.split(' ').slice(1));
      report('validating-team install with selfsigned', withTls);
      const served = await tlsRun();
      expect(served.code, `${served.stdout}\n${served.stderr}`).toBe(0);
      expect(served.stdout).toMatch(/receiver: https:\/\/\S+ over HTTPS/);
      expect(existsSync(path.join(dir, 'reports/conformance/receiver-ca.pem'))).toBe(true);
    },
    paced(120_000),
  );
});

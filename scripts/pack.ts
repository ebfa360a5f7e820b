/**
 * `npm run release:pack`: the four packages as tarballs, for installing them from files
 * while they are not on a registry (README.md, "Install").
 *
 *   npm run release:pack                  write them to .packs/
 *   npm run release:pack -- --out DIR     write them to DIR
 *
 * Each package's prepack builds first what changed (`npm run build`). The packages name
 * each other by exact version, as `changeset publish` uploads them, and npm installs a
 * tarball's dependencies from the registry unless the same `npm install` is given a tarball
 * of that name and version. So a package installs from the tarballs of it and of every
 * package of ours it depends on, in one command, which this prints for each kind of user.
 * The packages' versions of each other must agree (they do after `npm run release:version`):
 * a set that could not install together is refused before anything is packed.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCOPE = '@payment-service/';

/** Who installs which package, as README.md's Install table says. */
const KINDS = [
  { who: 'merchants integrating (SDK)', name: '@payment-service/client', dev: false },
  { who: 'teams validating an implementation', name: '@payment-service/conformance', dev: true },
  { who: 'anyone who needs the sandbox server', name: '@payment-service/server', dev: false },
  { who: 'tool builders (description, types, vectors)', name: '@payment-service/contract', dev: false },
] as const;

interface Workspace {
  name: string;
  version: string;
  folder: string;
  /** The packages of ours it depends on, with the version it asks for. */
  ours: Record<string, string>;
}

function workspaces(): Workspace[] {
  const rootJson = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { workspaces: string[] };
  return rootJson.workspaces.map((folder) => {
    const pkg = JSON.parse(readFileSync(path.join(root, folder, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
      dependencies?: Record<string, string>;
    };
    const ours = Object.fromEntries(Object.entries(pkg.dependencies ?? {}).filter(([dep]) => dep.startsWith(SCOPE)));
    return { name: pkg.name, version: pkg.version, folder, ours };
  });
}

/** Every way the set would fail to install together: a dependency on a version of ours not in it. */
function mismatches(packages: readonly Workspace[]): string[] {
  const versions = new Map(packages.map((p) => [p.name, p.version]));
  return packages.flatMap((p) =>
    Object.entries(p.ours)
      .filter(([dep, range]) => versions.get(dep) !== range)
      .map(
        ([dep, range]) =>
          `${p.name} depends on ${dep}@${range}, but ${dep} is ${versions.get(dep) ?? 'not one of the packages'}`,
      ),
  );
}

/** The package and every package of ours it depends on, dependencies first. */
function closure(name: string, packages: readonly Workspace[]): Workspace[] {
  const byName = new Map(packages.map((p) => [p.name, p]));
  const ordered: Workspace[] = [];
  const visit = (n: string) => {
    const p = byName.get(n)!;
    if (ordered.includes(p)) return;
    for (const dep of Object.keys(p.ours)) visit(dep);
    ordered.push(p);
  };
  visit(name);
  return ordered;
}

/** `npm pack`'s name for a package's tarball. */
const tarballName = (p: { name: string; version: string }) =>
  `${p.name.replace(/^@/, '').replace('/', '-')}-${p.version}.tgz`;

/** The install command of each kind of user, the tarballs found in `dir`. */
function installCommands(
  packages: readonly Workspace[],
  dir: string,
): Array<{ who: string; name: string; command: string }> {
  return KINDS.map(({ who, name, dev }) => {
    const files = closure(name, packages).map((p) => path.join(dir, tarballName(p)));
    return { who, name, command: `npm install ${dev ? '-D ' : ''}${files.join(' ')}` };
  });
}

function npmPack(out: string, folders: string[]): Promise<Array<{ name: string; filename: string }>> {
  const args = ['pack', '--json', '--pack-destination', out, ...folders.flatMap((f) => ['-w', f])];
  return new Promise((resolve, reject) => {
    execFile('npm', args, { cwd: root, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      // The prepack build shares npm's stdout: the JSON is what follows its lines. Its
      // lines (a type error, say) go to stderr, without npm's JSON account of a failure.
      const at = error ? -1 : stdout.search(/^\[/m);
      process.stderr.write((at < 0 ? stdout : stdout.slice(0, at)).replace(/^\{\n {2}"error"[\s\S]*?^\}\n/gm, ''));
      process.stderr.write(stderr);
      if (at < 0) reject(new Error(`npm ${args.join(' ')} failed: its output is above`));
      else resolve(JSON.parse(stdout.slice(at)) as Array<{ name: string; filename: string }>);
    });
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string', default: '.packs' } } });
  // A relative --out is taken from where the command was typed, not the root npm runs it in.
  const out = path.resolve(process.env.INIT_CWD ?? process.cwd(), values.out);
  const packages = workspaces();
  const wrong = mismatches(packages);
  if (wrong.length > 0) {
    console.error(`release:pack: these tarballs could not be installed together:\n  ${wrong.join('\n  ')}`);
    process.exit(1);
  }
  mkdirSync(out, { recursive: true });
  const packed = await npmPack(
    out,
    packages.map((p) => p.folder),
  );
  const relative = path.relative(process.cwd(), out);
  const shown = relative.startsWith('..') || path.isAbsolute(relative) ? out : relative || '.';
  console.log(`\nPacked into ${shown}${path.sep}:`);
  const width = Math.max(...packed.map((p) => p.filename.length));
  for (const p of packed) {
    const kB = statSync(path.join(out, p.filename)).size / 1000;
    console.log(`  ${p.filename.padEnd(width)}  ${kB.toFixed(1).padStart(7)} kB`);
  }
  console.log(
    '\nInstall in a project, each package with the tarballs of ours it depends on, in one command\n' +
      '(npm would look for those on the registry otherwise):',
  );
  for (const { who, command } of installCommands(packages, out)) console.log(`\n  # ${who}\n  ${command}`);
}

await main().catch((error: Error) => {
  console.error(`release:pack: ${error.message}`);
  process.exit(1);
});

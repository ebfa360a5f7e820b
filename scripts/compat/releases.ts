/**
 * The releases kept in the repository (releases/): each release of the contract keeps the
 * description and sandbox API it shipped, each release of the client the Pact contract
 * its consumer tests wrote; the newest contract release is what the compatibility gate
 * compares the working tree with. And the change files (.changeset/) not yet released.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import parseChangeset from '@changesets/parse';
import { parse as parseYaml } from 'yaml';
import { changelogOf } from './changelog.ts';
import { type Change, type Contract, compareContracts } from './contract-diff.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const RELEASES = path.join(ROOT, 'releases');
export const CONTRACT_PACKAGE = '@payment-service/contract';
export const CLIENT_PACKAGE = '@payment-service/client';

const parts = (v: string) => v.split('.').map(Number);
/** Semantic versions, oldest first. */
export const byVersion = (a: string, b: string) => {
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return 0;
};

/** The versions released of `kind` (contract, client), oldest first. */
export function releases(kind: 'contract' | 'client', root = ROOT): string[] {
  const dir = path.join(root, 'releases', kind);
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((v) => /^\d+\.\d+\.\d+$/.test(v))
        .sort(byVersion)
    : [];
}

const json = (file: string) => JSON.parse(readFileSync(file, 'utf8'));
type Json = any;

/** A description that cannot be compared: a file that is not JSON, a $ref that leads nowhere. */
export class UnreadableDescription extends Error {}

/** A released description's JSON, or why it cannot be read (the file named). */
function readJson(file: string, root: string): Json {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new UnreadableDescription(`${path.relative(root, file)}: ${(error as Error).message}`);
  }
}

/**
 * The contract as released at `version`, or as generated/ has it (`current`, which the
 * release workflow keeps): each description checked for $refs that lead nowhere.
 */
export function contractAt(version: string | 'current', root = ROOT): Contract {
  const dir = version === 'current' ? path.join(root, 'generated') : path.join(root, 'releases', 'contract', version);
  const [openapi, sandbox] = ['openapi.json', 'sandbox.json'].map((name) => {
    const file = path.join(dir, name);
    const doc = readJson(file, root);
    const broken = unresolvedRefs(doc);
    if (broken.length > 0) throw new UnreadableDescription(`${path.relative(root, file)}: ${broken.join('; ')}`);
    return doc;
  });
  return { openapi, sandbox };
}

/**
 * The contract as openapi/ holds it now, bundled as `npm run generate` bundles it: what the
 * gate compares, whether or not generated/ was rebuilt. A description redocly cannot bundle
 * (a $ref to no file, a YAML error) is unreadable, the file and line named.
 */
export function contractInTree(root = ROOT): Contract {
  const dir = mkdtempSync(path.join(tmpdir(), 'compat-'));
  try {
    const [openapi, sandbox] = ['openapi', 'sandbox'].map((name) => {
      const source = path.join(root, 'openapi', `${name}.yaml`);
      const out = path.join(dir, `${name}.json`);
      try {
        execFileSync(path.join(ROOT, 'node_modules/.bin/redocly'), ['bundle', source, '--output', out], {
          cwd: ROOT,
          env: { ...process.env, REDOCLY_SUPPRESS_NOTIFICATIONS: 'true' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      } catch (error) {
        const said = `${(error as { stdout?: Buffer }).stdout ?? ''}${(error as { stderr?: Buffer }).stderr ?? ''}`;
        // Redocly's own lines that name where and what: "[1] paths/x.yaml:20:13 at #/...", "Can't resolve $ref: ...".
        const lines = said.split('\n').filter((l) => /^\[\d+\] |Can't resolve|Error|error/.test(l.trim()));
        throw new UnreadableDescription(
          `${path.relative(root, source)} cannot be bundled:\n  ${lines.map((l) => l.trim()).join('\n  ') || said.trim()}`,
        );
      }
      const doc = readJson(out, root);
      const broken = unresolvedRefs(doc);
      if (broken.length > 0) throw new UnreadableDescription(`${path.relative(root, source)}: ${broken.join('; ')}`);
      return doc;
    });
    return { openapi, sandbox };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The local $refs of a description that lead nowhere: to a pointer with no value, or round
 * a circle of references that never reaches a value (a recursive schema, through its
 * properties, is a value and is fine).
 */
export function unresolvedRefs(doc: Json): string[] {
  const found: string[] = [];
  const lookup = (ref: string): Json =>
    ref
      .slice(2)
      .split('/')
      .reduce(
        (v: Json, key) => (v === undefined || v === null ? undefined : v[key.replace(/~1/g, '/').replace(/~0/g, '~')]),
        doc,
      );
  const walk = (value: Json, at: string) => {
    if (!value || typeof value !== 'object') return;
    if (typeof value.$ref === 'string' && value.$ref.startsWith('#/')) {
      const seen = new Set<string>();
      let ref: string = value.$ref;
      for (;;) {
        if (seen.has(ref)) {
          found.push(`the $ref at ${at} goes round a circle of references (${[...seen].join(' → ')})`);
          break;
        }
        seen.add(ref);
        const target = lookup(ref);
        if (target === undefined) {
          found.push(`the $ref at ${at} (${ref}) leads nowhere`);
          break;
        }
        if (typeof target?.$ref !== 'string' || !target.$ref.startsWith('#/')) break;
        ref = target.$ref;
      }
    }
    for (const [key, inner] of Object.entries(value))
      walk(inner, `${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
  };
  walk(doc, '#');
  return found;
}

/** The Pact contracts a client release wrote. */
export function pactsOf(version: string, root = ROOT): string[] {
  const dir = path.join(root, 'releases', 'client', version);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => path.join(dir, f));
}

export type Bump = 'major' | 'minor' | 'patch' | 'none';

export interface ChangeFile {
  file: string;
  /** Package name to its bump. */
  bumps: Record<string, Bump>;
  summary: string;
}

/** How much a bump is, to compare two. */
export const BUMP_ORDER: Record<Bump, number> = { none: 0, patch: 1, minor: 2, major: 3 };

/**
 * The change files waiting for the next release (.changeset/*.md), read as Changesets reads
 * them (@changesets/parse, the parser `changeset version` uses): what it cannot read, the
 * gate cannot take for an acknowledgement, and the release would fail on later.
 */
export function pendingChanges(root = ROOT): {
  files: ChangeFile[];
  unreadable: Array<{ file: string; why: string }>;
} {
  const dir = path.join(root, '.changeset');
  if (!existsSync(dir)) return { files: [], unreadable: [] };
  const files: ChangeFile[] = [];
  const unreadable: Array<{ file: string; why: string }> = [];
  for (const f of readdirSync(dir).filter((name) => name.endsWith('.md') && name !== 'README.md')) {
    const file = path.join('.changeset', f);
    try {
      const { releases: bumped, summary } = parseChangeset(readFileSync(path.join(dir, f), 'utf8'));
      files.push({ file, bumps: Object.fromEntries(bumped.map((r) => [r.name, r.type])), summary });
    } catch (error) {
      const why = String((error as Error).message)
        .split('\n')
        .slice(0, 3)
        .join(' ');
      unreadable.push({ file, why });
    }
  }
  return { files, unreadable };
}

/** The largest bump the change files make of a package ('none' when none names it). */
export function bumpOf(files: readonly ChangeFile[], pkg: string): Bump {
  return files.reduce<Bump>((most, f) => {
    const bump = f.bumps[pkg] ?? 'none';
    return BUMP_ORDER[bump] > BUMP_ORDER[most] ? bump : most;
  }, 'none');
}

/** A description's info.version, as YAML reads it. */
export function infoVersion(file: string): string | undefined {
  const version = (parseYaml(readFileSync(file, 'utf8')) as { info?: { version?: unknown } })?.info?.version;
  return version === undefined ? undefined : String(version);
}

/** Sets a description's info.version in place, leaving every other line as it was. */
export function setInfoVersion(file: string, version: string): void {
  const text = readFileSync(file, 'utf8');
  const next = text.replace(/^(info:\n(?:[ \t]+.*\n)*?[ \t]+version:[ \t]*)(["']?)[^"'\s]+\2/m, `$1$2${version}$2`);
  if (infoVersion(file) !== version && next === text) throw new Error(`${file}: no info.version line to set`);
  writeFileSync(file, next);
}

/** The contract package's version, which the descriptions' info.version follows. */
export function contractVersion(root = ROOT): string {
  return json(path.join(root, 'generated/package.json')).version;
}

/** The changes between two releases (or a release and the working tree, `current`), in words. */
export function changelogBetween(
  from: string,
  to: string | 'current',
  root = ROOT,
): { changes: Change[]; text: string } {
  const changes = compareContracts(contractAt(from, root), contractAt(to, root));
  return { changes, text: changelogOf(changes) };
}

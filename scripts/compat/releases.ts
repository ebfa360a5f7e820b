/**
 * The releases kept in the repository (releases/): each release of the contract keeps the
 * description and sandbox API it shipped, each release of the client the Pact contract
 * its consumer tests wrote; the newest contract release is what the compatibility gate
 * compares the working tree with. And the change files (.changeset/) not yet released.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { type Change, type Contract, changelogOf, compareContracts } from './contract-diff.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const RELEASES = path.join(ROOT, 'releases');
export const CONTRACT_PACKAGE = '@payment-service/contract';

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

/** The contract as released at `version`, or as the working tree has it (`current`). */
export function contractAt(version: string | 'current', root = ROOT): Contract {
  const dir = version === 'current' ? path.join(root, 'generated') : path.join(root, 'releases', 'contract', version);
  return { openapi: json(path.join(dir, 'openapi.json')), sandbox: json(path.join(dir, 'sandbox.json')) };
}

/** The Pact contracts a client release wrote. */
export function pactsOf(version: string, root = ROOT): string[] {
  const dir = path.join(root, 'releases', 'client', version);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => path.join(dir, f));
}

export interface ChangeFile {
  file: string;
  /** Package name to its bump. */
  bumps: Record<string, 'major' | 'minor' | 'patch'>;
  summary: string;
}

/** The change files waiting for the next release (.changeset/*.md, their front matter). */
export function pendingChanges(root = ROOT): ChangeFile[] {
  const dir = path.join(root, '.changeset');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md') && f !== 'README.md')
    .map((f) => {
      const text = readFileSync(path.join(dir, f), 'utf8').replace(/\r\n/g, '\n');
      const [, front = '', summary = ''] = /^---\n([\s\S]*?)\n---\n?([\s\S]*)$/.exec(text) ?? [];
      const bumps = Object.fromEntries(
        [...front.matchAll(/^\s*["']?([^"':]+)["']?\s*:\s*(major|minor|patch)\s*$/gm)].map((m) => [m[1]!, m[2]!]),
      ) as ChangeFile['bumps'];
      return { file: path.join('.changeset', f), bumps, summary: summary.trim() };
    });
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

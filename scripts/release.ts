/**
 * The second half of `npm run release:version`, after `changeset version` has bumped the
 * packages and written their CHANGELOG.md from the change files (RELEASING.md):
 *
 * 1. the descriptions' info.version follows the contract package's new version, and
 *    generated/ is rebuilt, with the client's version constant (its User-Agent) from its
 *    new package.json; a major of the contract without a major of the client is refused;
 * 2. the contract's CHANGELOG.md gets the description's changes since the last release in
 *    words, under the new version (the docs site shows the same on its changelog page);
 * 3. the release is kept: releases/contract/<version> the description and sandbox API as
 *    released (what the compatibility gate compares the next changes with), and
 *    releases/client/<version> the client's Pact contract (verified against every later
 *    server, for as long as that client release is supported).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { breaking } from './compat/contract-diff.ts';
import { changelogBetween, contractVersion, RELEASES, ROOT, releases, setInfoVersion } from './compat/releases.ts';

const version = contractVersion();
const last = releases('contract').at(-1);
const clientVersion = JSON.parse(readFileSync(path.join(ROOT, 'client/package.json'), 'utf8')).version as string;
const lastClient = releases('client').at(-1);
const majorOf = (v: string) => Number(v.split('.')[0]);

// RELEASING.md: the client follows a major of the contract with a major of its own (the gate
// asks the change files for it; Changesets alone gives a dependent a patch).
if (last && lastClient && majorOf(version) > majorOf(last) && majorOf(clientVersion) <= majorOf(lastClient))
  throw new Error(
    `release: the contract goes from ${last} to ${version}, but the client only from ${lastClient} to ${clientVersion}: it follows a major of the contract with a major (RELEASING.md).`,
  );

for (const file of ['openapi/openapi.yaml', 'openapi/sandbox.yaml']) setInfoVersion(path.join(ROOT, file), version);
execFileSync(process.execPath, ['--import', 'tsx', 'scripts/generate.ts'], { cwd: ROOT, stdio: 'inherit' });

const contractDir = path.join(RELEASES, 'contract', version);
if (!existsSync(contractDir)) {
  if (last) {
    const { changes, text: words } = changelogBetween(last, 'current');
    // The gate holds breaking changes to a major version; a release must not slip one into a minor.
    if (breaking(changes).length > 0 && Number(version.split('.')[0]) <= Number(last.split('.')[0]))
      throw new Error(
        `release: the description breaks someone since ${last}, but the contract's new version is ${version}: a major version is needed (RELEASING.md).`,
      );
    const changelog = path.join(ROOT, 'generated/CHANGELOG.md');
    const section = `### Description changes since ${last}\n\n${words.replace(/^### /gm, '#### ')}\n`;
    const text = readFileSync(changelog, 'utf8');
    const heading = new RegExp(`^## ${version.replace(/\./g, '\\.')}\\n`, 'm').exec(text);
    const title = /^# .*\n/.exec(text);
    // Under the version's heading, which changeset version wrote; else a heading of its own, newest first.
    const at = heading ? heading.index + heading[0].length : (title?.[0].length ?? 0);
    writeFileSync(
      changelog,
      `${text.slice(0, at)}${heading ? '\n' : `\n## ${version}\n\n`}${section}${text.slice(at)}`,
    );
  }
  mkdirSync(contractDir, { recursive: true });
  for (const file of ['openapi.json', 'sandbox.json'])
    copyFileSync(path.join(ROOT, 'generated', file), path.join(contractDir, file));
  console.log(`release: kept the contract ${version} in ${path.relative(ROOT, contractDir)}`);
}

const clientDir = path.join(RELEASES, 'client', clientVersion);
if (!existsSync(clientDir)) {
  mkdirSync(clientDir, { recursive: true });
  for (const file of readdirSync(path.join(ROOT, 'contracts')).filter((f) => f.endsWith('.json')))
    copyFileSync(path.join(ROOT, 'contracts', file), path.join(clientDir, file));
  console.log(`release: kept the Pact contract of client ${clientVersion} in ${path.relative(ROOT, clientDir)}`);
}

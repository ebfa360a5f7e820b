/**
 * The contract's compatibility, for contributors and CI (RELEASING.md):
 *
 *   npm run compat:check      the description against the last release: every change, for whom
 *                             it breaks; fails on a breaking change no change file acknowledges
 *                             with a major version of @payment-service/contract
 *   npm run compat:changelog  the changes since the last release in words (-- --from V --to V)
 *   npm run compat:matrix -- --base-url URL --sandbox-token T
 *                             every supported client release's Pact contract verified against a
 *                             server, as a matrix (the answer can-i-deploy gives)
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { breaking, compareContracts, PARTIES } from './compat/contract-diff.ts';
import {
  changelogBetween,
  CONTRACT_PACKAGE,
  infoVersion,
  contractAt,
  contractVersion,
  pactsOf,
  pendingChanges,
  ROOT,
  releases,
} from './compat/releases.ts';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    from: { type: 'string' },
    to: { type: 'string' },
    'base-url': { type: 'string' },
    'sandbox-token': { type: 'string' },
    /** Another tree than this repository's (the tests' scratch copies). */
    root: { type: 'string' },
  },
});
const command = positionals[0] ?? 'check';
const root = path.resolve(values.root ?? ROOT);

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** The descriptions' info.version follows the contract package's version. */
function versionsAgree(): string[] {
  const version = contractVersion(root);
  return ['openapi/openapi.yaml', 'openapi/sandbox.yaml'].flatMap((file) => {
    const found = infoVersion(path.join(root, file));
    return found === version ? [] : [`${file}: info.version is ${found}, but ${CONTRACT_PACKAGE} is ${version}`];
  });
}

function check(): number {
  const last = releases('contract', root).at(-1);
  if (!last) {
    console.error('compat: no release of the contract in releases/contract: nothing to compare with.');
    return 1;
  }
  const changes = compareContracts(contractAt(last, root), contractAt('current', root));
  const counted = changes.filter((c) => c.kind !== 'annotation');
  console.log(
    `contract ${last} → the working tree: ${counted.length} change(s), ${changes.length - counted.length} of documentation only`,
  );
  if (counted.length > 0)
    console.log(
      table([
        ['party', 'kind', 'where', 'change'],
        ...counted.map((c) => [c.party, c.kind, c.where, `${c.description}${c.why ? ` (${c.why})` : ''}`]),
      ]),
    );
  const problems = versionsAgree();
  const broken = breaking(changes);
  const files = pendingChanges(root);
  if (broken.length > 0) {
    const parties = PARTIES.filter((p) => broken.some((c) => c.party === p)).join(', ');
    const major = files.filter((c) => c.bumps[CONTRACT_PACKAGE] === 'major');
    if (major.length === 0)
      problems.push(
        `${broken.length} change(s) break ${parties}, and no change file makes a major version of ${CONTRACT_PACKAGE}: run \`npx changeset\`, choose major for it and say what breaks for whom (RELEASING.md).`,
      );
    else console.log(`breaking for ${parties}: acknowledged by ${major.map((c) => c.file).join(', ')} (major).`);
  } else if (counted.length > 0) {
    // Every change users will notice is told in a change file, so that the release says it.
    const told = files.filter((c) => c.bumps[CONTRACT_PACKAGE] !== undefined);
    if (told.length === 0)
      problems.push(
        `${counted.length} change(s) since ${last}, and no change file names ${CONTRACT_PACKAGE}: run \`npx changeset\` (minor: they break nobody) and say what changed.`,
      );
  }
  for (const problem of problems) console.error(`compat: ${problem}`);
  return problems.length > 0 ? 1 : 0;
}

async function matrix(): Promise<number> {
  const baseUrl = values['base-url'];
  const sandboxToken = values['sandbox-token'];
  if (!baseUrl || !sandboxToken) {
    console.error('compat matrix: give --base-url and --sandbox-token of the server to verify against.');
    return 2;
  }
  const { verifyContracts } = await import('./verify-contracts.ts');
  const rows: string[][] = [['client release', 'pact', 'server', 'result']];
  let red = false;
  for (const version of releases('client', root)) {
    for (const pact of pactsOf(version, root)) {
      const interactions = (JSON.parse(readFileSync(pact, 'utf8')) as { interactions: unknown[] }).interactions.length;
      let result: string;
      try {
        await verifyContracts({ baseUrl, sandboxToken, pactUrls: [pact], logLevel: 'error' });
        result = `verified (${interactions} interactions)`;
      } catch (error) {
        red = true;
        result = `FAILED: ${String((error as Error).message).split('\n')[0]}`;
      }
      rows.push([version, path.relative(root, pact), baseUrl, result]);
    }
  }
  console.log(table(rows));
  console.log(
    red
      ? 'can deploy: no, a supported client release would break'
      : 'can deploy: yes, every supported client release is verified',
  );
  return red ? 1 : 0;
}

if (command === 'check') process.exitCode = check();
else if (command === 'changelog') {
  const from = values.from ?? releases('contract', root).at(-1);
  if (!from) throw new Error('no release of the contract to start from');
  console.log(changelogBetween(from, values.to ?? 'current', root).text);
} else if (command === 'matrix') process.exitCode = await matrix();
else {
  console.error(`compat: unknown command ${command} (check, changelog, matrix)`);
  process.exitCode = 2;
}

/**
 * The contract's compatibility, for contributors and CI (RELEASING.md):
 *
 *   npm run compat:check      the description against the last release: every change, for whom
 *                             it breaks; fails on a breaking change no change file acknowledges
 *                             with a major version of @payment-service/contract
 *   npm run compat:changelog  the changes since the last release in sentences, as the docs'
 *                             changelog page and the contract's CHANGELOG.md say them
 *                             (-- --from V --to V)
 *   SANDBOX_TOKEN=T npm run compat:matrix -- --base-url URL
 *                             every supported client release's Pact contract verified against a
 *                             server, as a matrix (the answer can-i-deploy gives); exit 2 when
 *                             the server cannot be verified at all (unreachable, token refused)
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { breaking, type Change, compareContracts, PARTIES } from './compat/contract-diff.ts';
import {
  BUMP_ORDER,
  type Bump,
  bumpOf,
  CLIENT_PACKAGE,
  CONTRACT_PACKAGE,
  changelogBetween,
  contractAt,
  contractInTree,
  contractVersion,
  infoVersion,
  pactsOf,
  pendingChanges,
  ROOT,
  releases,
  UnreadableDescription,
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

/** The bump the gate's finding calls for: major for what breaks, minor for what a user notices, else none. */
function needed(changes: readonly Change[]): Bump {
  if (breaking(changes).length > 0) return 'major';
  return changes.some((c) => c.kind !== 'annotation') ? 'minor' : 'none';
}

function check(): number {
  const last = releases('contract', root).at(-1);
  if (!last) {
    console.error('compat: no release of the contract in releases/contract: nothing to compare with.');
    return 1;
  }
  let changes: Change[];
  try {
    // The description as openapi/ holds it: an edit without `npm run generate` is compared too.
    changes = compareContracts(contractAt(last, root), contractInTree(root));
  } catch (error) {
    if (!(error instanceof UnreadableDescription)) throw error;
    console.error(`compat: cannot compare the description: ${error.message}`);
    return 1;
  }
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
  const { files, unreadable } = pendingChanges(root);
  for (const { file, why } of unreadable)
    problems.push(
      `${file}: Changesets cannot read this change file (${why}), so it acknowledges nothing and the release would fail on it.`,
    );
  const broken = breaking(changes);
  const undecided = changes.filter((c) => c.kind === 'undecided');
  const wanted = needed(changes);
  const made = bumpOf(files, CONTRACT_PACKAGE);
  const by = (bump: Bump) => files.filter((f) => f.bumps[CONTRACT_PACKAGE] === bump).map((f) => f.file);
  if (broken.length > 0) {
    const parties = PARTIES.filter((p) => broken.some((c) => c.party === p)).join(', ');
    if (made !== 'major')
      problems.push(
        `${broken.length} change(s) break ${parties}, and no change file makes a major version of ${CONTRACT_PACKAGE}: run \`npx changeset\`, choose major for it and say what breaks for whom (RELEASING.md).`,
      );
    else console.log(`breaking for ${parties}: acknowledged by ${by('major').join(', ')} (major).`);
  } else if (wanted === 'minor' && BUMP_ORDER[made] < BUMP_ORDER.minor) {
    // Every change users will notice is told in a change file, so that the release says it.
    problems.push(
      made === 'none'
        ? `${counted.length} change(s) since ${last}, and no change file names ${CONTRACT_PACKAGE}: run \`npx changeset\` (minor: they break nobody) and say what changed.`
        : `${counted.length} change(s) since ${last} that users notice, but the change files make only a ${made} of ${CONTRACT_PACKAGE} (${by(made).join(', ')}): a minor is the least for them (RELEASING.md).`,
    );
  }
  if (undecided.length > 0)
    console.log(
      `the gate could not decide whether ${undecided.length} change(s) break someone (marked undecided): judge them, and make the bump they call for (major if they break).`,
    );
  // RELEASING.md: the client follows a major of the contract with a major of its own.
  const client = bumpOf(files, CLIENT_PACKAGE);
  if (made === 'major' && client !== 'major')
    problems.push(
      `the change files make a major version of ${CONTRACT_PACKAGE}, but ${client === 'none' ? 'do not name' : `make only a ${client} of`} ${CLIENT_PACKAGE}: the client follows a major of the contract with a major (RELEASING.md); add \`"${CLIENT_PACKAGE}": major\` to a change file.`,
    );
  for (const problem of problems) console.error(`compat: ${problem}`);
  return problems.length > 0 ? 1 : 0;
}

/**
 * Why the server cannot be verified at all, or undefined: unreachable, or its sandbox API
 * refusing the token. A setup problem, not a verdict on the server (exit 2, not "can deploy: no").
 */
async function unusable(baseUrl: string, sandboxToken: string): Promise<string | undefined> {
  let answer: Response;
  try {
    answer = await fetch(new URL('/sandbox/webhook-deliveries?checkoutSessionId=cs_matrix_preflight', baseUrl), {
      headers: { authorization: `Bearer ${sandboxToken}` },
      signal: AbortSignal.timeout(10_000),
    });
    await answer.arrayBuffer();
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string; errors?: Array<{ code?: string }> } }).cause;
    const why = cause?.code ?? cause?.errors?.[0]?.code ?? cause?.message ?? (error as Error).message;
    return `the server at ${baseUrl} is unreachable (${why})`;
  }
  if (answer.status === 401) return `the server's sandbox API refused the sandbox token (401)`;
  if (answer.status === 405 || answer.status >= 500)
    return `the server at ${baseUrl} offers no usable sandbox API (status ${answer.status})`;
  return undefined;
}

async function matrix(): Promise<number> {
  const baseUrl = values['base-url'];
  // From the environment, where ps and npm's echo of the command do not show it.
  const sandboxToken = values['sandbox-token'] ?? process.env.SANDBOX_TOKEN;
  if (!baseUrl || !sandboxToken) {
    console.error(
      'compat matrix: give --base-url of the server to verify against, and its sandbox token in SANDBOX_TOKEN.',
    );
    return 2;
  }
  const problem = await unusable(baseUrl, sandboxToken);
  if (problem) {
    console.error(`compat matrix: ${problem}: nothing was verified.`);
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

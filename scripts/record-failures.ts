/**
 * The example failures of conformance/docs/checks.md, recorded as the console prints them.
 * Each comes from a real run of the suite against something broken on purpose, the same
 * things the checks are tested against: a variant of the reference server made by a
 * mutating proxy (test/support/mutants.ts, clause-mutants.ts, clause-part-mutants.ts,
 * exploration-mutants.ts), a broken merchant receiver (test/support/merchant-receivers.ts),
 * or the SDK's driver with one rule broken (test/support/client-mutants.ts). An example is
 * therefore a message the suite really prints, never one written by hand.
 *
 * Writes scripts/recorded-failures.json; `npm run readme` renders it into the page and
 * `npm run readme:check` (in `npm test`) fails when the page and the file part.
 *
 *   npm run docs:failures                     every check; a variant runs only while it may
 *                                             still give a check its first example
 *   npm run docs:failures -- --only 'HOOK-*'  record these checks again, keep the others
 *   --parallel <n>                            variants at once (default 2)
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, stripVTControlCharacters } from 'node:util';
import { MODES } from '../conformance/modes/index.ts';
import { createRegistry } from '../conformance/modes/run/checks/index.ts';
import { CLAUSE_REGISTER_VERSION } from '../conformance/core/clauses.ts';
import { executeClient } from '../conformance/modes/client/command.ts';
import { TOOL_VERSION } from '../conformance/core/version.ts';
import { clauseMutants, selectionFor } from '../test/support/clause-mutants.ts';
import { clausePartMutants } from '../test/support/clause-part-mutants.ts';
import { clientMutants } from '../test/support/client-mutants.ts';
import { cli } from '../test/support/conformance-cli.ts';
import { runVariant, type Variant } from '../test/support/conformance-variants.ts';
import { explorationMutants } from '../test/support/exploration-mutants.ts';
import {
  BROKEN_RECEIVERS,
  type BrokenReceiver,
  correctReceiver,
  type Handler,
  startMerchantReceiver,
} from '../test/support/merchant-receivers.ts';
import { mutants } from '../test/support/mutants.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../test/support/server.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RECORDED_FAILURES = path.join(root, 'scripts/recorded-failures.json');

/** One check's example (scripts/readme-tables.ts renders it): the block the console prints under "Failures". */
interface RecordedFailure {
  /** What the run was against: the broken variant, receiver or client, by its name. */
  against: string;
  /** The day it was recorded and the suite's version then. */
  recorded: string;
  suite: string;
  console: string;
}

function readRecordedFailures(): Record<string, RecordedFailure> {
  if (!existsSync(RECORDED_FAILURES)) return {};
  return (JSON.parse(readFileSync(RECORDED_FAILURES, 'utf8')) as { failures: Record<string, RecordedFailure> })
    .failures;
}

/**
 * The failure blocks of a console report, by check id: under "Failures" and "Differences
 * from our modelling", each block from its "ID title" line to the next.
 */
function failureBlocks(stdout: string): Map<string, string> {
  const blocks = new Map<string, string>();
  let inSection = false;
  let current: string[] = [];
  const flush = () => {
    const id = /^([A-Z]+-\d{3}) /.exec(current[0] ?? '')?.[1];
    if (id && !blocks.has(id)) blocks.set(id, current.join('\n').trimEnd());
    current = [];
  };
  for (const line of stripVTControlCharacters(stdout).split('\n')) {
    if (line === 'Failures' || line.startsWith('Differences from our modelling')) {
      flush();
      inSection = true;
    } else if (/^Errors \(/.test(line) || /^(PASSED|FAILED|ERROR):/.test(line)) {
      flush();
      inSection = false;
    } else if (inSection && /^[A-Z]+-\d{3} /.test(line)) {
      flush();
      current = [line];
    } else if (inSection && current.length > 0) current.push(line);
  }
  flush();
  return blocks;
}

/**
 * A block as a reader's own run prints it: the report a variant's run wrote to a scratch
 * folder named by the default folder of its mode, and the run's tokens by their variables.
 */
function asPrinted(block: string): string {
  return block
    .replace(/repro \S*\/conformance-[^/\s]+\/conformance\.json/g, 'repro reports/conformance/conformance.json')
    .replace(/repro \S*\/client-conformance-[^/\s]+\/conformance\.json/g, 'repro reports/client/conformance.json')
    .replaceAll(SANDBOX_TOKEN, '$SANDBOX_TOKEN');
}

interface Candidate {
  against: string;
  /** The checks it is meant to fail: it runs only while one of them has no example. */
  targets: string[];
  /** The console report of its run. */
  run(): Promise<string>;
}

const RECEIVER_SECRET = 'whsec_recorded_failures_receiver_secret';
const secrets = [SANDBOX_TOKEN, RECEIVER_SECRET];

async function receiverRun(handler: Handler, args: string[]): Promise<string> {
  const receiver = await startMerchantReceiver(handler);
  try {
    const run = await cli(['receiver', '--url', receiver.url, '--secret', RECEIVER_SECRET, ...args]);
    return run.stdout;
  } finally {
    await receiver.close();
  }
}

function candidates(server: () => TestServer): Candidate[] {
  const withConsole = ['--reporter', 'console,json'];
  const variantRun = (variant: Variant) => async () => (await runVariant(server().url, variant)).stdout;
  const named: Candidate[] = mutants.map((m) => ({
    against: `a variant of the reference server: ${m.name}`,
    targets: m.caughtBy,
    run: variantRun({ ...m, args: [...(m.args ?? []), ...withConsole] }),
  }));
  // A clause mutant is meant to fail the checks citing a clause it breaks (its run selects
  // those and a baseline the response checks judge).
  const citing = (clauses: string[]) =>
    createRegistry()
      .all()
      .filter((c) => !c.explores && c.clauses.some((id) => clauses.includes(id)))
      .map((c) => c.id);
  const clauses: Candidate[] = [...clauseMutants, ...clausePartMutants].map((m) => {
    const only = selectionFor(m);
    return {
      against: `a variant of the reference server that breaks ${m.clauses.join(', ')}: ${m.name}`,
      targets: citing(m.clauses),
      run: variantRun({
        name: m.name,
        ...(m.api ? { api: m.api } : {}),
        ...(m.hook ? { hook: m.hook } : {}),
        only,
        args: withConsole,
      }),
    };
  });
  // The exploration draws its cases from a seed and a budget in cases, so that it finds the
  // same thing on any machine (as its own test runs it).
  const exploring = ['--explore-cases', '200', '--seed', '1', ...withConsole];
  const sequences: Candidate[] = explorationMutants.map((m) => ({
    against: `a variant of the reference server that breaks ${m.clauses.join(', ')}: ${m.name}`,
    targets: ['EXPL-001'],
    run: variantRun({ name: m.name, api: m.api, only: 'EXPL-001', args: exploring }),
  }));
  const boundaries: Candidate[] = clauseMutants
    .filter((m) => m.api && selectionFor(m).split(',').includes('EXPL-002'))
    .map((m) => ({
      against: `a variant of the reference server that breaks ${m.clauses.join(', ')}: ${m.name}`,
      targets: ['EXPL-002'],
      run: variantRun({ name: m.name, api: m.api!, only: 'EXPL-002', args: exploring }),
    }));
  // The broken merchant receivers the receiver tests run, one that refuses every delivery,
  // and the lenient legacy one under --legacy reject.
  const receivers: BrokenReceiver[] = [
    { name: 'refuses every delivery', handler: () => () => 400, caughtBy: ['RCV-001'] },
    ...BROKEN_RECEIVERS,
    {
      name: 'takes unsigned legacy bodies under --legacy reject',
      handler: (secret) => correctReceiver(secret, { allowLegacy: true }),
      caughtBy: ['RCV-014'],
      args: ['--legacy', 'reject'],
    },
  ];
  const receiverCandidates: Candidate[] = receivers.map(({ name, handler, caughtBy, args }) => ({
    against: `a merchant receiver that ${name}`,
    targets: caughtBy,
    run: () => receiverRun(handler(RECEIVER_SECRET), args ?? []),
  }));
  const clients: Candidate[] = clientMutants.map((m) => ({
    against: `the SDK's driver with ${m.clause} broken: ${m.name}`,
    targets: m.caughtBy,
    run: async () => {
      const chunks: string[] = [];
      await executeClient(
        {
          baseUrl: server().url,
          sandboxToken: SANDBOX_TOKEN,
          driverModule: m.driver,
          only: m.caughtBy.join(','),
          reporter: 'console',
          out: mkdtempSync(path.join(tmpdir(), 'recorded-failures-')),
          seed: 1,
          // A check of our modelling shows its failure to a client mutant only when held strictly.
          strictAssumptions: true,
        },
        { write: (chunk) => void chunks.push(chunk) },
      );
      return chunks.join('');
    },
  }));
  const all = [...named, ...clauses, ...sequences, ...boundaries, ...receiverCandidates, ...clients];
  const unknown = all.flatMap((c) => c.targets).filter((id) => !knownIds().has(id));
  if (unknown.length > 0) throw new Error(`no check of these ids: ${[...new Set(unknown)].join(', ')}`);
  return all;
}

function knownIds(): Set<string> {
  return new Set(MODES.flatMap((mode) => mode.checks().map((c) => c.id)));
}

const glob = (pattern: string) =>
  new RegExp(
    `^(?:${pattern
      .split(',')
      .map((p) =>
        p
          .trim()
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')
          .replace(/\?/g, '.'),
      )
      .join('|')})$`,
  );

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { only: { type: 'string' }, parallel: { type: 'string', default: '2' } },
  });
  const ids = knownIds();
  const wanted = values.only ? [...ids].filter((id) => glob(values.only!).test(id)) : [...ids];
  if (wanted.length === 0) throw new Error(`--only ${values.only}: no check id matches`);
  // Kept: the examples of checks that still exist and are not being recorded again.
  const failures: Record<string, RecordedFailure> = Object.fromEntries(
    Object.entries(readRecordedFailures()).filter(([id]) => ids.has(id) && !wanted.includes(id)),
  );
  const open = new Set(wanted);
  const claimed = new Set<string>();
  const recorded = new Date().toISOString().slice(0, 10);

  let testServer: TestServer | undefined;
  const server = () => testServer!;
  testServer = await startTestServer({ webhookPollIntervalMs: 25 });
  const list = candidates(server);
  const skipped: Candidate[] = [];
  const take = (candidate: Candidate, stdout: string) => {
    for (const [id, block] of failureBlocks(stdout)) {
      if (!open.has(id)) continue;
      const leaked = secrets.find((s) => block.includes(s));
      if (leaked) throw new Error(`${id}: the console printed a secret; nothing is recorded`);
      failures[id] = { against: candidate.against, recorded, suite: TOOL_VERSION, console: asPrinted(block) };
      open.delete(id);
    }
  };
  const runOne = async (candidate: Candidate) => {
    const mine = candidate.targets.filter((id) => open.has(id));
    for (const id of mine) claimed.add(id);
    try {
      take(candidate, await candidate.run());
    } catch (error) {
      process.stderr.write(`  ${candidate.against}: ${(error as Error).message}\n`);
    } finally {
      for (const id of mine) claimed.delete(id);
    }
    const got = mine.filter((id) => !open.has(id));
    process.stderr.write(`${got.length > 0 ? got.join(', ') : 'nothing new'} <- ${candidate.against}\n`);
  };
  try {
    // First every variant that may give an example no running variant is after; then again,
    // for the checks a first variant did not fail, those skipped meanwhile.
    for (const pass of [0, 1]) {
      const queue = pass === 0 ? list : skipped.splice(0);
      let next = 0;
      await Promise.all(
        Array.from({ length: Number(values.parallel) }, async () => {
          while (next < queue.length) {
            const candidate = queue[next++]!;
            const worth = candidate.targets.some((id) => open.has(id) && (pass === 1 || !claimed.has(id)));
            if (worth) await runOne(candidate);
            else if (pass === 0 && candidate.targets.some((id) => open.has(id))) skipped.push(candidate);
          }
        }),
      );
    }
  } finally {
    await testServer.close();
  }
  const ordered = Object.fromEntries([...ids].filter((id) => failures[id]).map((id) => [id, failures[id]!]));
  const text = `${JSON.stringify({ clauseRegisterVersion: CLAUSE_REGISTER_VERSION, failures: ordered }, null, 2)}\n`;
  writeFileSync(
    RECORDED_FAILURES,
    execFileSync(path.join(root, 'node_modules/.bin/biome'), ['format', `--stdin-file-path=${RECORDED_FAILURES}`], {
      input: text,
      encoding: 'utf8',
    }),
  );
  const missing = [...ids].filter((id) => !failures[id]);
  console.log(
    `${Object.keys(ordered).length} of ${ids.size} checks have an example; none for: ${missing.join(', ') || 'none'}`,
  );
}

await main();

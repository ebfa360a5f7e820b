/**
 * The `payment-conformance` command line: `run` checks an implementation at a base URL,
 * `receiver` checks a merchant's webhook receiver, `client` an API client, `replay` runs
 * the failed checks of a report again, `list` prints every check.
 * Exit status: 0 every must check passed, 1 a must check failed, 2 usage or setup error.
 * The bin (cli.ts) only calls `main`; the package's README lists the flags from here.
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { ADAPTER_TEMPLATE } from './adapters/template.ts';
import { createRegistry } from './modes/run/checks/index.ts';
import { CLAUSE_REGISTER_VERSION } from './core/clauses.ts';
import { SetupError } from './core/outcome.ts';
import { createClientRegistry } from './modes/client/checks/index.ts';
import { clientCommand } from './modes/client/command.ts';
import { createReceiverRegistry } from './modes/receiver/checks/index.ts';
import { receiverCommand } from './modes/receiver/command.ts';
import { DEFAULT_EXPLORE_S, DEFAULT_MANUAL_TIMEOUT_MS, runCommand } from './modes/run/command.ts';
import { replayCommand } from './modes/run/replay.ts';
import { DEFAULT_OUT, DEFAULT_SETTLE_TIMEOUT_S } from './runner/flags.ts';
import { TOOL_VERSION } from './core/version.ts';

const out = { write: (text: string) => void process.stdout.write(text) };

const STRICT_ASSUMPTIONS =
  'fail the run when a check of our modelling (level assumption) fails, instead of reporting it apart as differs';

/** The flags of run that name the target and the way to it, which replay takes as run does. */
const REPLAY_TARGET_FLAGS = [
  '--base-url',
  '--sandbox-token',
  '--adapter',
  '--config',
  '--require-capabilities',
  '--manual-timeout',
  '--receiver-host',
  '--receiver-port',
  '--receiver-public-url',
  '--receiver-tls',
];

function integer(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('expected a whole number');
  return n;
}

function percentage(value: string): number {
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || n > 100) throw new InvalidArgumentError('expected a percentage from 0 to 100');
  return n;
}

export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('payment-conformance')
    .description(
      'Checks an implementation of the payment service, or a merchant webhook receiver, against the service document.',
    )
    .version(TOOL_VERSION, '--version', 'print the version of payment-conformance')
    .exitOverride()
    .showHelpAfterError();

  program
    .command('run')
    .description('check the implementation at --base-url')
    .requiredOption('--base-url <url>', 'base URL of the implementation')
    .option('--sandbox-token <token>', 'bearer token of the target’s sandbox API: its built-in adapter')
    .option(
      '--adapter <module>',
      'ES module of a target adapter (its default export), or manual: a person pays on the hosted page',
    )
    .option(
      '--config <file>',
      'JSON file of organisation profiles, for a target whose organisations the adapter cannot make',
    )
    .option(
      '--require-capabilities <list>',
      'all, or capabilities (comma-separated) whose absence is a setup error rather than skipped checks; all leaves out paymentLinks and legacyTransactions, for which the modelled requests stand in, and makes any must check left unjudged an error',
    )
    .option(
      '--manual-timeout <seconds>',
      'with --adapter manual: how long to wait for each payment',
      integer,
      DEFAULT_MANUAL_TIMEOUT_MS / 1000,
    )
    .option(
      '--only <glob>',
      'run only the checks whose id matches (comma-separated globs, e.g. "IDEM-*,AUTH-003"; !glob excludes, e.g. "!HOOK-*")',
    )
    .option('--reporter <list>', 'console, json, junit, html, har, ndjson (comma-separated)', 'console')
    .option('--out <dir>', 'directory for the file reports', DEFAULT_OUT.run)
    .option('--strict-assumptions', STRICT_ASSUMPTIONS, false)
    .option('--receiver-host <host>', 'host the suite’s webhook receiver listens on', '127.0.0.1')
    .option('--receiver-port <port>', 'port of the suite’s webhook receiver (0: any free port)', integer, 0)
    .option('--receiver-public-url <url>', 'address the target must call to reach the receiver (a tunnel)')
    .option(
      '--receiver-tls',
      'serve the receiver over HTTPS with a certificate made at start; its CA is written to <out>/receiver-ca.pem for the target to trust',
      false,
    )
    .option(
      '--settle-timeout <seconds>',
      'how long a payment is awaited to settle, and a webhook to arrive, after an attempt',
      integer,
      DEFAULT_SETTLE_TIMEOUT_S,
    )
    .option(
      '--explore <seconds>',
      'how long the exploration checks (EXPL-*) search: random operation sequences against a model of the document, and boundary inputs from the description (0 turns them off)',
      integer,
      DEFAULT_EXPLORE_S,
    )
    .option(
      '--explore-cases <n>',
      'the exploration’s budget in cases instead of seconds: each lane draws n cases (operation sequences, combinations of boundary values), so that with --seed the same cases are drawn on any machine, however fast',
      integer,
    )
    .option(
      '--seed <n>',
      'the exploration’s seed (printed by every run): the same seed replays the same sequences',
      integer,
    )
    .option('--concurrency <n>', 'checks run at once', integer, 8)
    .option(
      '--min-coverage <percent>',
      'exit 2 when the run exercised less than this percentage of the description (its documented statuses, error codes, webhook events and request constraints, each one item)',
      percentage,
    )
    .action(async (o, command: Command) => {
      setExit(
        await runCommand(
          {
            baseUrl: o.baseUrl,
            sandboxToken: o.sandboxToken,
            adapter: o.adapter,
            config: o.config,
            requireCapabilities: o.requireCapabilities,
            manualTimeoutMs: o.manualTimeout * 1000,
            only: o.only,
            reporter: o.reporter,
            out: o.out,
            strictAssumptions: Boolean(o.strictAssumptions),
            receiverHost: o.receiverHost,
            receiverPort: o.receiverPort,
            receiverPublicUrl: o.receiverPublicUrl,
            receiverTls: Boolean(o.receiverTls),
            settleTimeoutS: o.settleTimeout,
            // Its default stands only when --explore-cases does not give the budget instead.
            exploreS: command.getOptionValueSource('explore') === 'default' ? undefined : o.explore,
            exploreCases: o.exploreCases,
            seed: o.seed,
            concurrency: o.concurrency,
            minCoverage: o.minCoverage,
          },
          out,
        ),
      );
    });

  const run = program.commands.find((c) => c.name() === 'run')!;
  const replay = program
    .command('replay')
    .description(
      'run the checks that failed in a JSON report of run again, with its seed and budget: FIXED, STILL FAILING or NOT JUDGED',
    )
    .argument('<report>', 'the JSON report (conformance.json) of a run');
  // The target's flags are run's own, so that they read and check alike; the report gives the rest.
  for (const option of run.options) if (REPLAY_TARGET_FLAGS.includes(option.long ?? '')) replay.addOption(option);
  replay
    .option('--settle-timeout <seconds>', 'as for run (default: the report’s)', integer)
    .option('--reporter <list>', 'console, json, junit, html, har, ndjson (comma-separated)', 'console')
    .option('--out <dir>', 'directory for the file reports of the replay', DEFAULT_OUT.replay)
    .action(async (report: string, o) => {
      setExit(
        await replayCommand(
          {
            report,
            baseUrl: o.baseUrl,
            sandboxToken: o.sandboxToken,
            adapter: o.adapter,
            config: o.config,
            requireCapabilities: o.requireCapabilities,
            manualTimeoutMs: o.manualTimeout * 1000,
            reporter: o.reporter,
            out: o.out,
            receiverHost: o.receiverHost,
            receiverPort: o.receiverPort,
            receiverPublicUrl: o.receiverPublicUrl,
            receiverTls: Boolean(o.receiverTls),
            settleTimeoutS: o.settleTimeout,
          },
          out,
        ),
      );
    });

  program
    .command('receiver')
    .description("check a merchant's webhook receiver at --url")
    .requiredOption('--url <url>', 'the receiver’s address (its webhookUrl)')
    .requiredOption('--secret <whsec>', 'the webhook signing secret the receiver verifies with')
    .option(
      '--legacy <mode>',
      'legacy two-field bodies: accept or reject (not given: either answer passes, handling them is optional)',
    )
    .option(
      '--only <glob>',
      'run only the checks whose id matches (comma-separated globs, e.g. "RCV-00?"; !glob excludes)',
    )
    .option('--reporter <list>', 'console, json, junit, html, har, ndjson (comma-separated)', 'console')
    .option('--out <dir>', 'directory for the file reports', DEFAULT_OUT.receiver)
    .option(
      '--base-url <url>',
      'a target that makes real payments for the events (without it, they name made-up payments)',
    )
    .option('--sandbox-token <token>', 'with --base-url: bearer token of the target’s sandbox API, to pay')
    .option('--adapter <module>', 'with --base-url: ES module of a target adapter offering attempt, to pay')
    .option('--client-id <id>', 'with --base-url: an API key of the receiver’s organisation (the payments are its own)')
    .option('--client-secret <secret>', 'with --base-url: that key’s secret')
    .option(
      '--settle-timeout <seconds>',
      'with --base-url: how long a payment is awaited to complete',
      integer,
      DEFAULT_SETTLE_TIMEOUT_S,
    )
    .option('--strict-assumptions', STRICT_ASSUMPTIONS, false)
    .action(async (o) => {
      if (o.legacy !== undefined && !['accept', 'reject'].includes(o.legacy))
        throw new SetupError('--legacy must be accept or reject.');
      setExit(
        await receiverCommand(
          {
            url: o.url,
            secret: o.secret,
            legacy: o.legacy,
            only: o.only,
            reporter: o.reporter,
            out: o.out,
            baseUrl: o.baseUrl,
            sandboxToken: o.sandboxToken,
            adapter: o.adapter,
            clientId: o.clientId,
            clientSecret: o.clientSecret,
            settleTimeoutS: o.settleTimeout,
            strictAssumptions: Boolean(o.strictAssumptions),
          },
          out,
        ),
      );
    });

  program
    .command('client')
    .description('check an API client, through its driver, against the document’s rules for clients')
    .requiredOption(
      '--base-url <url>',
      'the target the client is put in front of (the reference server, or any implementation)',
    )
    .option('--sandbox-token <token>', 'bearer token of the target’s sandbox API: the built-in adapter for it')
    .option('--adapter <module>', 'ES module of a target adapter offering createOrganisation (attempt, for CLIENT-021)')
    .option(
      '--driver <command>',
      'the client under test: a shell command speaking the driver protocol on its standard input and output',
    )
    .option(
      '--driver-module <module>',
      'the client under test as a JavaScript module whose default export makes a driver (e.g. @payment-service/conformance/drivers/sdk)',
    )
    .option(
      '--only <glob>',
      'run only the checks whose id matches (comma-separated globs, e.g. "CLIENT-00?"; !glob excludes)',
    )
    .option('--reporter <list>', 'console, json, junit, html, har, ndjson (comma-separated)', 'console')
    .option('--out <dir>', 'directory for the file reports', DEFAULT_OUT.client)
    .option('--concurrency <n>', 'scenarios at once, each with a driver of its own', integer, 4)
    .option('--seed <n>', 'what the scenarios draw (amounts) comes from it: the same seed sends the same', integer)
    .option('--strict-assumptions', STRICT_ASSUMPTIONS, false)
    .action(async (o) => {
      setExit(
        await clientCommand(
          {
            baseUrl: o.baseUrl,
            sandboxToken: o.sandboxToken,
            adapter: o.adapter,
            driver: o.driver,
            driverModule: o.driverModule,
            only: o.only,
            reporter: o.reporter,
            out: o.out,
            concurrency: o.concurrency,
            seed: o.seed,
            strictAssumptions: Boolean(o.strictAssumptions),
          },
          out,
        ),
      );
    });

  program
    .command('adapter')
    .description('target adapters')
    .command('init')
    .description(
      'write a commented starter adapter (an ES module Node loads as it is, typed with JSDoc), every capability stubbed',
    )
    .option('--out <file>', 'where to write it', 'payment-adapter.mjs')
    .option('--force', 'overwrite the file if it exists', false)
    .action((o) => {
      if (existsSync(o.out) && !o.force) throw new SetupError(`${o.out} exists; pass --force to overwrite it.`);
      writeFileSync(o.out, ADAPTER_TEMPLATE);
      out.write(`wrote ${o.out}: fill in what your implementation offers, then run\n`);
      out.write(
        `  npx --no -- payment-conformance run --base-url <url> --adapter ${path.isAbsolute(o.out) ? o.out : `./${o.out}`}\n`,
      );
      setExit(0);
    });

  program
    .command('list')
    .description('print every check of run, receiver and client: id, level, the clauses it enforces, title')
    .option('--json', 'print them as JSON, { tool, checks }: each check with its command, section and requires')
    .action((o: { json?: boolean }) => {
      const checks = [
        ...createRegistry()
          .all()
          .map((c) => ({ ...c, command: 'run' })),
        ...createReceiverRegistry(undefined)
          .all()
          .map((c) => ({ ...c, command: 'receiver' })),
        ...createClientRegistry()
          .all()
          .map((c) => ({ ...c, command: 'client' })),
      ];
      if (o.json) {
        const listed = checks.map((c) => ({
          id: c.id,
          command: c.command,
          level: c.level,
          clauses: c.clauses,
          section: c.section,
          title: c.title,
          requires: c.requires ?? [],
          ...(c.assumption ? { assumption: c.assumption } : {}),
        }));
        out.write(
          `${JSON.stringify({ tool: { name: 'payment-conformance', version: TOOL_VERSION, clauseRegisterVersion: CLAUSE_REGISTER_VERSION }, checks: listed }, null, 2)}\n`,
        );
        setExit(0);
        return;
      }
      const width = (f: (c: (typeof checks)[number]) => string) => Math.max(...checks.map((c) => f(c).length));
      const [wi, wl, wr] = [
        width((c) => c.id),
        width((c) => c.level),
        Math.min(
          48,
          width((c) => c.rule),
        ),
      ];
      for (const c of checks)
        out.write(`${c.id.padEnd(wi)}  ${c.level.padEnd(wl)}  ${c.rule.padEnd(wr)}  ${c.title}\n`);
      setExit(0);
    });
  return program;
}

export async function main(argv: string[]): Promise<number> {
  let code = 0;
  const program = buildProgram((c) => (code = c));
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end "successfully"; anything else is a usage error.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof SetupError) {
      process.stderr.write(`payment-conformance: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(`payment-conformance: ${(error as Error).stack ?? String(error)}\n`);
    return 2;
  }
}

/**
 * The `run` mode as a record: its flags, its checks, and how a command line becomes a run
 * (command.ts); and `replay`, which runs a report's failed checks again with run's flags
 * for the target.
 */
import { FLAGS, integer, percentage } from '../../runner/flags.ts';
import type { CommandRecord, Flag, Mode } from '../../runner/mode.ts';
import { createRegistry } from './checks/index.ts';
import { DEFAULT_EXPLORE_S, DEFAULT_MANUAL_TIMEOUT_MS, runCommand } from './command.ts';
import type { CheckContext } from './context/check-context.ts';
import { replayCommand } from './replay.ts';

/** run's flags by their camel-case names, as the command line gives them. */
interface RunFlags {
  baseUrl: string;
  sandboxToken?: string;
  adapter?: string;
  config?: string;
  requireCapabilities?: string;
  manualTimeout: number;
  only?: string;
  reporter: string;
  out: string;
  strictAssumptions: boolean;
  receiverHost: string;
  receiverPort: number;
  receiverPublicUrl?: string;
  receiverTls: boolean;
  settleTimeout: number;
  explore: number;
  exploreCases?: number;
  seed?: number;
  concurrency: number;
  minCoverage?: number;
  minInputCoverage?: number;
}

/** The flags that name the target and the way to it: replay takes them as run does. */
const TARGET_FLAGS = {
  baseUrl: { flags: '--base-url <url>', description: 'base URL of the implementation', required: true },
  sandboxToken: FLAGS.sandboxToken('bearer token of the target’s sandbox API: its built-in adapter'),
  adapter: FLAGS.adapter(
    'ES module of a target adapter (its default export), or manual: a person pays on the hosted page',
  ),
  config: {
    flags: '--config <file>',
    description: 'JSON file of organisation profiles, for a target whose organisations the adapter cannot make',
  },
  requireCapabilities: {
    flags: '--require-capabilities <list>',
    description:
      'all, or capabilities (comma-separated) whose absence is a setup error rather than skipped checks; all leaves out paymentLinks and legacyTransactions, for which the modelled requests stand in, and makes any must check left unjudged an error',
  },
  manualTimeout: {
    flags: '--manual-timeout <seconds>',
    description: 'with --adapter manual: how long to wait for each payment',
    parse: integer,
    default: DEFAULT_MANUAL_TIMEOUT_MS / 1000,
  },
  receiverHost: {
    flags: '--receiver-host <host>',
    description: 'host the suite’s webhook receiver listens on',
    default: '127.0.0.1',
  },
  receiverPort: {
    flags: '--receiver-port <port>',
    description: 'port of the suite’s webhook receiver (0: any free port)',
    parse: integer,
    default: 0,
  },
  receiverPublicUrl: {
    flags: '--receiver-public-url <url>',
    description: 'address the target must call to reach the receiver (a tunnel)',
  },
  receiverTls: {
    flags: '--receiver-tls',
    description:
      'serve the receiver over HTTPS with a certificate made at start; its CA is written to <out>/receiver-ca.pem for the target to trust',
    default: false,
  },
} as const satisfies Record<string, Flag>;

const T = TARGET_FLAGS;

type ReplayFlags = Pick<
  RunFlags,
  | 'baseUrl'
  | 'sandboxToken'
  | 'adapter'
  | 'config'
  | 'requireCapabilities'
  | 'manualTimeout'
  | 'receiverHost'
  | 'receiverPort'
  | 'receiverPublicUrl'
  | 'receiverTls'
  | 'reporter'
  | 'out'
> & { settleTimeout?: number };

const replayMode: CommandRecord<ReplayFlags> = {
  name: 'replay',
  description:
    'run the checks that failed in a JSON report of run again, with its seed and budget: FIXED, STILL FAILING or NOT JUDGED',
  arguments: [{ name: 'report', description: 'the JSON report (conformance.json) of a run' }],
  // The target's flags are run's own, so that they read and check alike; the report gives the rest.
  flags: [
    ...Object.values(TARGET_FLAGS),
    FLAGS.settleTimeout('as for run (default: the report’s)', false),
    FLAGS.reporter,
    FLAGS.out('replay', 'directory for the file reports of the replay'),
  ],
  run: (o, { args, out }) =>
    replayCommand(
      {
        report: args[0]!,
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
        receiverTls: o.receiverTls,
        settleTimeoutS: o.settleTimeout,
      },
      out,
    ),
};

export const runMode: Mode<RunFlags, CheckContext> = {
  name: 'run',
  description: 'check the implementation at --base-url',
  judges: 'an implementation at a base URL',
  flags: [
    T.baseUrl,
    T.sandboxToken,
    T.adapter,
    T.config,
    T.requireCapabilities,
    T.manualTimeout,
    FLAGS.only('"IDEM-*,AUTH-003"; !glob excludes, e.g. "!HOOK-*"'),
    FLAGS.reporter,
    FLAGS.out('run'),
    FLAGS.strictAssumptions,
    FLAGS.verbose,
    T.receiverHost,
    T.receiverPort,
    T.receiverPublicUrl,
    T.receiverTls,
    FLAGS.settleTimeout('how long a payment is awaited to settle, and a webhook to arrive, after an attempt'),
    {
      flags: '--explore <seconds>',
      description:
        'how long the exploration checks (EXPL-*) search: random operation sequences against a model of the document, and boundary inputs from the description (0 turns them off)',
      parse: integer,
      default: DEFAULT_EXPLORE_S,
    },
    {
      flags: '--explore-cases <n>',
      description:
        'the exploration’s budget in cases instead of seconds: each lane draws n cases (operation sequences, combinations of boundary values), so that with --seed the same cases are drawn on any machine, however fast',
      parse: integer,
    },
    FLAGS.seed('the exploration’s seed (printed by every run): the same seed replays the same sequences'),
    // Most checks wait (on deliveries, on the five-second answer wait), not compute: more at
    // once shortens a full run until the longest waits alone set it (bench/README.md).
    FLAGS.concurrency('checks run at once', 16),
    {
      flags: '--min-coverage <percent>',
      description:
        'exit 2 when the run exercised less than this percentage of the description (its documented statuses, error codes, webhook events and request constraints, each one item)',
      parse: percentage,
    },
    {
      flags: '--min-input-coverage <percent>',
      description:
        'exit 2 when the run exercised less than this percentage of the input space (each class of input the document allows, on every operation, and each cell of the configuration table)',
      parse: percentage,
    },
  ],
  checks: () => createRegistry().all(),
  also: [replayMode],
  run: (o, { isDefault, out, targetFlags }) =>
    runCommand(
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
        strictAssumptions: o.strictAssumptions,
        receiverHost: o.receiverHost,
        receiverPort: o.receiverPort,
        receiverPublicUrl: o.receiverPublicUrl,
        receiverTls: o.receiverTls,
        settleTimeoutS: o.settleTimeout,
        // Its default stands only when --explore-cases does not give the budget instead.
        exploreS: isDefault('explore') ? undefined : o.explore,
        exploreCases: o.exploreCases,
        seed: o.seed,
        concurrency: o.concurrency,
        minCoverage: o.minCoverage,
        minInputCoverage: o.minInputCoverage,
        targetFlags,
      },
      out,
    ),
};

/** The `client` mode as a record: its flags, its checks, and how a command line becomes a run (command.ts). */
import { FLAGS } from '../../runner/flags.ts';
import type { Mode } from '../../runner/mode.ts';
import { createClientRegistry } from './checks/index.ts';
import { clientCommand } from './command.ts';
import type { ClientRun } from './context.ts';

/** client's flags by their camel-case names, as the command line gives them. */
interface ClientFlags {
  baseUrl: string;
  sandboxToken?: string;
  adapter?: string;
  driver?: string;
  driverModule?: string;
  only?: string;
  reporter: string;
  out: string;
  concurrency: number;
  seed?: number;
  strictAssumptions: boolean;
  requireCapabilities?: string;
  driverEnv?: string;
}

export const clientMode: Mode<ClientFlags, ClientRun> = {
  name: 'client',
  description: 'check an API client, through its driver, against the document’s rules for clients',
  judges: 'an API client, through its driver',
  flags: [
    {
      flags: '--base-url <url>',
      description: 'the target the client is put in front of (the reference server, or any implementation)',
      required: true,
    },
    FLAGS.sandboxToken('bearer token of the target’s sandbox API: the built-in adapter for it'),
    FLAGS.adapter('ES module of a target adapter offering createOrganisation (attempt, for CLIENT-021)'),
    {
      flags: '--driver <command>',
      description:
        'the client under test: a shell command speaking the driver protocol on its standard input and output',
    },
    {
      flags: '--driver-module <module>',
      description:
        'the client under test as a JavaScript module whose default export makes a driver (e.g. @payment-service/conformance/drivers/sdk)',
    },
    FLAGS.only('"CLIENT-00?"; !glob excludes'),
    FLAGS.reporter,
    FLAGS.out('client'),
    FLAGS.concurrency('scenarios at once, each with a driver of its own', 4),
    FLAGS.seed('what the scenarios draw (amounts) comes from it: the same seed sends the same'),
    FLAGS.strictAssumptions,
    FLAGS.verbose,
    {
      flags: '--require-capabilities <list>',
      description:
        'all, or operations of the driver and capabilities of the adapter (comma-separated) whose absence is a setup error rather than skipped checks; all also makes any must check left unjudged an error',
    },
    {
      flags: '--driver-env <names>',
      description:
        'variables of this environment the driver also gets (comma-separated); it always gets the protocol’s and those a program needs to run (PATH, HOME, the locale, temporary folders, certificates), no other',
    },
  ],
  checks: () => createClientRegistry().all(),
  run: (o, { out, targetFlags }) =>
    clientCommand(
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
        strictAssumptions: o.strictAssumptions,
        requireCapabilities: o.requireCapabilities,
        driverEnv: o.driverEnv,
        targetFlags,
      },
      out,
    ),
};

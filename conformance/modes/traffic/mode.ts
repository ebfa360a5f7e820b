/** The `traffic` mode as a record: its flags, its checks, and how a command line becomes a judgement (command.ts). */
import { FLAGS } from '../../runner/flags.ts';
import type { Mode } from '../../runner/mode.ts';
import { trafficChecks } from './checks/index.ts';
import { trafficCommand } from './command.ts';
import type { TrafficRun } from './context.ts';
import { proxyCommand } from './proxy.ts';

interface TrafficFlags {
  har?: string;
  ndjson?: string;
  webhookSecret?: string;
  only?: string;
  reporter: string;
  out: string;
  strictAssumptions: boolean;
}

export const trafficMode: Mode<TrafficFlags, TrafficRun> = {
  name: 'traffic',
  description:
    'judge recorded traffic (HAR or NDJSON) of any client and any implementation: both parties, by the clauses',
  judges: 'recorded traffic between clients and an implementation',
  flags: [
    { flags: '--har <file>', description: 'HAR 1.2, as browsers, Playwright, mitmproxy and this suite write it' },
    { flags: '--ndjson <file>', description: 'HAR entries one a line, as --reporter ndjson writes them' },
    {
      flags: '--webhook-secret <whsec>',
      description: 'the signing secret of the deliveries in the traffic: their digests are verified with it',
      secret: '$WEBHOOK_SECRET',
    },
    FLAGS.only('"TRAFFIC-00?"; !glob excludes'),
    FLAGS.reporter,
    FLAGS.out('traffic'),
    FLAGS.strictAssumptions,
    FLAGS.verbose,
  ],
  checks: trafficChecks,
  also: [proxyCommand],
  run: (o, { out, targetFlags }) =>
    trafficCommand(
      {
        har: o.har,
        ndjson: o.ndjson,
        webhookSecret: o.webhookSecret,
        only: o.only,
        reporter: o.reporter,
        out: o.out,
        strictAssumptions: o.strictAssumptions,
        targetFlags,
      },
      out,
    ),
};

/** The `receiver` mode as a record: its flags, its checks, and how a command line becomes a run (command.ts). */
import { SetupError } from '../../core/outcome.ts';
import { FLAGS } from '../../runner/flags.ts';
import type { Mode } from '../../runner/mode.ts';
import { receiverChecks } from './checks/index.ts';
import { receiverCommand } from './command.ts';
import type { ReceiverContext } from './context.ts';

/** receiver's flags by their camel-case names, as the command line gives them. */
interface ReceiverFlags {
  url: string;
  secret: string;
  legacy?: string;
  only?: string;
  reporter: string;
  out: string;
  baseUrl?: string;
  sandboxToken?: string;
  adapter?: string;
  clientId?: string;
  clientSecret?: string;
  settleTimeout: number;
  strictAssumptions: boolean;
}

export const receiverMode: Mode<ReceiverFlags, ReceiverContext> = {
  name: 'receiver',
  description: "check a merchant's webhook receiver at --url",
  judges: 'a merchant’s webhook receiver',
  flags: [
    { flags: '--url <url>', description: 'the receiver’s address (its webhookUrl)', required: true },
    {
      flags: '--secret <whsec>',
      description: 'the webhook signing secret the receiver verifies with',
      required: true,
      secret: '$WEBHOOK_SECRET',
    },
    {
      flags: '--legacy <mode>',
      description:
        'legacy two-field bodies: accept or reject (not given: either answer passes, handling them is optional)',
    },
    FLAGS.only('"RCV-00?"; !glob excludes'),
    FLAGS.reporter,
    FLAGS.out('receiver'),
    {
      flags: '--base-url <url>',
      description: 'a target that makes real payments for the events (without it, they name made-up payments)',
    },
    FLAGS.sandboxToken('with --base-url: bearer token of the target’s sandbox API, to pay'),
    FLAGS.adapter('with --base-url: ES module of a target adapter offering attempt, to pay'),
    {
      flags: '--client-id <id>',
      description: 'with --base-url: an API key of the receiver’s organisation (the payments are its own)',
    },
    { flags: '--client-secret <secret>', description: 'with --base-url: that key’s secret', secret: '$CLIENT_SECRET' },
    FLAGS.settleTimeout('with --base-url: how long a payment is awaited to complete'),
    FLAGS.strictAssumptions,
    FLAGS.verbose,
  ],
  // Every check, with the legacy check as it reads when --legacy is not given.
  checks: () => receiverChecks({}),
  run: (o, { out, targetFlags }) => {
    if (o.legacy !== undefined && o.legacy !== 'accept' && o.legacy !== 'reject')
      throw new SetupError('--legacy must be accept or reject.');
    return receiverCommand(
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
        strictAssumptions: o.strictAssumptions,
        targetFlags,
      },
      out,
    );
  },
};

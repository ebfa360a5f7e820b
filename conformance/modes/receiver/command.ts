/**
 * `payment-conformance receiver`: checks a merchant's webhook receiver the way the
 * service would call it (service document: Events, Signature header, Receiver
 * verification steps, Response and retry behaviour, Legacy payload). The checks
 * (checks/) are registered like the `run` checks (ids, clauses, levels, `--only`), judged
 * and reported by the same runner, each failure with the delivery sent, the receiver's
 * answer and a curl line that replays the delivery byte for byte.
 *
 * Every delivery is made for a transaction of its own, so deduplication cannot hide a
 * wrong answer. Without --base-url the transactions are made up; with it (and the
 * receiver's organisation's credentials) each is a real card payment on the target whose
 * webhookUrl is the receiver (payments.ts).
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { CAPABILITIES, type Capability, type TargetAdapter } from '../../core/adapter.ts';
import { baseUrlOf, targetAdapter } from '../../adapters/load.ts';
import { Redactor } from '../../core/redact.ts';
import { outOf, reportersOf, selectChecks, settleTimeoutMsOf } from '../../runner/flags.ts';
import { defaultCheckTimeoutMs, judgeAll } from '../../runner/judge.ts';
import { SetupError, type Output } from '../../core/outcome.ts';
import { type Reported, Reporting } from '../../runner/reporting.ts';
import { byStart, type TrafficEntry } from '../../core/traffic.ts';
import { createReceiverRegistry } from './checks/index.ts';
import { ANSWER_LIMIT_MS, ReceiverContext, type ReceiverUnderTest } from './context.ts';
import { Payments } from './payments.ts';

export interface ReceiverOptions extends ReceiverUnderTest {
  /** The target's flags as given, secrets as shell variables (invocation.targetFlags). */
  targetFlags?: string;
  only?: string;
  /** console, json, junit, html (comma-separated); console when not given. */
  reporter?: string;
  out?: string;
  /** The target that makes real payments for the events (with a way to pay: sandbox or adapter). */
  baseUrl?: string;
  sandboxToken?: string;
  adapter?: string | TargetAdapter;
  /** An API key of the receiver's own organisation: the payments are that organisation's. */
  clientId?: string;
  clientSecret?: string;
  settleTimeoutS?: number;
  /** Fail the run when an assumption check fails, instead of reporting it as `differs`. */
  strictAssumptions?: boolean;
}

async function paymentsFor(
  options: ReceiverOptions,
  settleTimeoutMs: number,
  redactor: Redactor,
): Promise<{ payments?: Payments; name: string }> {
  const wanted = [options.sandboxToken, options.adapter, options.clientId, options.clientSecret].some(
    (v) => v !== undefined,
  );
  if (options.baseUrl === undefined) {
    if (wanted)
      throw new SetupError('--sandbox-token, --adapter, --client-id and --client-secret need --base-url (the target).');
    return { name: 'made-up events (no --base-url)' };
  }
  const baseUrl = baseUrlOf(options.baseUrl);
  if (options.adapter !== undefined && options.sandboxToken !== undefined)
    throw new SetupError('--adapter and --sandbox-token both name the way to the target: give one.');
  if (options.clientId === undefined || options.clientSecret === undefined)
    throw new SetupError(
      '--base-url needs --client-id and --client-secret of the receiver’s organisation: the payments must be the ones the receiver can read back, signed with its --secret.',
    );
  if (options.adapter === 'manual')
    throw new SetupError(
      '--adapter manual cannot pay for the receiver checks: give --sandbox-token or an adapter module.',
    );
  const chosen = await targetAdapter(options, baseUrl);
  if (!chosen) throw new SetupError('--base-url needs --sandbox-token or --adapter: the suite pays through it.');
  const { adapter, name } = chosen;
  if (!adapter.capabilities.includes('attempt'))
    throw new SetupError(`The ${name} adapter does not offer attempt: the suite cannot pay for the events.`);
  redactor.remember(options.clientSecret, '$CLIENT_SECRET');
  const payments = new Payments(
    {
      baseUrl,
      clientId: options.clientId,
      clientSecret: options.clientSecret,
      adapter,
      receiverUrl: options.url,
      settleTimeoutMs,
    },
    redactor,
  );
  // Token and a session first: credentials or a webhookUrl the target refuses are setup errors, once.
  try {
    await payments.session(`conformance-preflight-${randomUUID().slice(0, 8)}`);
  } catch (error) {
    await adapter.close?.().catch(() => undefined);
    throw error;
  }
  return { payments, name: `${name}: real payments on ${baseUrl}` };
}

/** What a receiver run produced (the same report as `run`'s). */
export type ReceiverOutcome = Reported;

/**
 * Why no TCP connection can be made to the receiver's host and port, or undefined when one
 * can. Nothing is sent: how a receiver treats a stray request (an answer, a closed
 * connection) is for the checks to judge, not a reason to stop.
 */
function connectionProblem(url: URL): Promise<string | undefined> {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: ANSWER_LIMIT_MS });
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(`no connection within ${ANSWER_LIMIT_MS / 1000} s`);
    });
    socket.once('error', (error) => resolve(error.message));
  });
}

export async function executeReceiver(options: ReceiverOptions, out: Output): Promise<ReceiverOutcome> {
  try {
    new URL(options.url);
  } catch {
    throw new SetupError(`--url ${options.url} is not an absolute URL.`);
  }
  if (!options.secret.startsWith('whsec_')) throw new SetupError('--secret must be the whsec_... signing secret.');
  const reporters = reportersOf(options.reporter);
  const settleTimeoutMs = settleTimeoutMsOf(options.settleTimeoutS);
  const checks = selectChecks(createReceiverRegistry(options.legacy), options.only);
  const redactor = new Redactor(options.sandboxToken);
  redactor.remember(options.secret, '$WEBHOOK_SECRET');
  const unreachable = await connectionProblem(new URL(options.url));
  if (unreachable) throw new SetupError(`The receiver ${options.url} is unreachable: ${unreachable}.`);
  const { payments, name } = await paymentsFor(options, settleTimeoutMs, redactor);
  try {
    const traffic: TrafficEntry[] = [];
    const strictAssumptions = options.strictAssumptions ?? false;
    const offers = payments && ((c: Capability) => payments.adapter.capabilities.includes(c));
    const capabilities = offers ? CAPABILITIES.filter(offers) : [];
    const reporting = new Reporting(reporters, out, checks.length, strictAssumptions);
    const startedAt = new Date();
    reporting.start(options.url, name, capabilities);
    // Every check delivers for a transaction of its own, so they run at once: a slow
    // receiver costs one answer limit, not one per check.
    const results = await judgeAll(
      checks,
      {
        contextFor: (check, signal) => new ReceiverContext(options, payments, (e) => traffic.push(e), check.id, signal),
        // Capabilities matter only with a target: made-up events skip for want of one instead.
        offers,
        redactor,
        strictAssumptions,
        // A check sends a few deliveries, each answered within seconds; with a target, it
        // also awaits its payments to settle and their deliveries to be recorded.
        timeLimitMs: () => defaultCheckTimeoutMs(0, payments?.settleTimeoutMs ?? 0),
      },
      { concurrency: checks.length, onResult: (r) => reporting.result(r) },
    );
    return reporting.finish(
      {
        target: options.url,
        startedAt,
        adapter: { name, capabilities },
        strictAssumptions,
        invocation: {
          command: 'receiver',
          ...(options.targetFlags !== undefined ? { targetFlags: options.targetFlags } : {}),
          ...(options.only !== undefined ? { only: options.only } : {}),
          ...(options.legacy !== undefined ? { legacy: options.legacy } : {}),
          strictAssumptions,
        },
      },
      results,
      outOf(options.out, 'receiver'),
      { entries: () => byStart(traffic), redactor },
    );
  } finally {
    await payments?.adapter.close?.().catch(() => undefined);
  }
}

/** `payment-conformance receiver`; throws SetupError for a problem of the run itself (exit 2). */
export async function receiverCommand(options: ReceiverOptions, out: Output): Promise<number> {
  return (await executeReceiver(options, out)).exitCode;
}

/**
 * `payment-conformance traffic --har FILE` (or `--ndjson FILE`): judges traffic the suite
 * did not make, recorded by a browser, Playwright, mitmproxy, this suite, or its proxy.
 * Both parties are judged: the service's answers and the deliveries it sent by the rules
 * for the service, the clients' requests, alone and in sequence, by the rules for clients
 * (checks/). A rule the traffic holds nothing for is skipped with the reason, never passed.
 */
import { Redactor } from '../../core/redact.ts';
import { type Output, SetupError } from '../../core/outcome.ts';
import { outOf, reportersOf, selectChecks } from '../../runner/flags.ts';
import { judgeAll } from '../../runner/judge.ts';
import { type Reported, Reporting } from '../../runner/reporting.ts';
import { createTrafficRegistry } from './checks/index.ts';
import { jsonOf, TrafficRun } from './context.ts';
import { type Observed, readHar, readNdjson } from './read.ts';

export interface TrafficOptions {
  har?: string;
  ndjson?: string;
  webhookSecret?: string;
  only?: string;
  reporter?: string;
  out?: string;
  strictAssumptions?: boolean;
  /** The target's flags as given, secrets as shell variables (invocation.targetFlags). */
  targetFlags?: string;
}

/** What the console's head says of the traffic read: how much of it the rules can judge. */
export function describeTraffic(observed: readonly Observed[], run: TrafficRun): string {
  const probes = observed.filter((o) => o.suiteProbe).length;
  const parties = run.byParty(run.sent).size;
  return [
    `${observed.length} exchanges: ${run.api.length} answers of the API, ${run.deliveries.length} webhook deliveries, ${run.other.length} other (pages, sandbox, assets: not judged)`,
    `${parties} client${parties === 1 ? '' : 's'} told apart by clientId or token${probes > 0 ? `; ${probes} requests are a test suite's probes (no rule for clients judges them)` : ''}`,
  ].join('\n');
}

/** Judges exchanges already read: the traffic command's files, and the proxy's traffic when it stops. */
export async function judgeTraffic(
  observed: Observed[],
  options: TrafficOptions & { source: string; redactor?: Redactor },
  out: Output,
): Promise<Reported> {
  const reporters = reportersOf(options.reporter);
  const checks = selectChecks(createTrafficRegistry(), options.only);
  const redactor = options.redactor ?? new Redactor();
  redactor.remember(options.webhookSecret, '$WEBHOOK_SECRET');
  // A recording holds credentials by value (a browser's HAR does): every one is known
  // before anything is judged, so that no reason or evidence shows it.
  for (const { entry } of observed) {
    const type = entry.request.headers['content-type'] ?? '';
    const form = /x-www-form-urlencoded/i.test(type)
      ? Object.fromEntries(new URLSearchParams(entry.request.body ?? ''))
      : undefined;
    redactor.rememberFromRequest(entry.request.headers, form);
    redactor.rememberFromJson(jsonOf(entry.request.body));
    redactor.rememberFromJson(jsonOf(entry.response?.body));
  }
  const run = new TrafficRun(observed, options.webhookSecret, options.source);
  const strictAssumptions = options.strictAssumptions ?? false;
  const reporting = new Reporting(reporters, out, checks.length, strictAssumptions);
  const startedAt = new Date();
  reporting.start(options.source, 'recorded traffic', [], describeTraffic(observed, run));
  // Every check reads the same traffic and changes nothing: they run at once.
  const results = await judgeAll(
    checks,
    {
      contextFor: () => run,
      offers: undefined,
      redactor,
      strictAssumptions,
      timeLimitMs: () => undefined,
    },
    { concurrency: checks.length, onResult: (r) => reporting.result(r) },
  );
  return reporting.finish(
    {
      target: options.source,
      startedAt,
      adapter: { name: 'recorded traffic', capabilities: [] },
      strictAssumptions,
      invocation: {
        command: 'traffic',
        ...(options.targetFlags !== undefined ? { targetFlags: options.targetFlags } : {}),
        ...(options.only !== undefined ? { only: options.only } : {}),
        strictAssumptions,
      },
    },
    results,
    outOf(options.out, 'traffic'),
    { entries: () => observed.map((o) => o.entry), redactor },
  );
}

export async function trafficCommand(options: TrafficOptions, out: Output): Promise<number> {
  if ((options.har === undefined) === (options.ndjson === undefined))
    throw new SetupError('traffic: give the recorded traffic as --har FILE or as --ndjson FILE (one of them).');
  if (options.webhookSecret !== undefined && !options.webhookSecret.startsWith('whsec_'))
    throw new SetupError('--webhook-secret must be the whsec_... signing secret.');
  const file = (options.har ?? options.ndjson)!;
  const observed = options.har !== undefined ? readHar(file) : readNdjson(file);
  if (observed.length === 0) throw new SetupError(`traffic: ${file} holds no exchange.`);
  return (await judgeTraffic(observed, { ...options, source: file }, out)).exitCode;
}

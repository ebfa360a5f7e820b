/**
 * The traffic of a run, for the traffic reports (reporters/har.ts, reporters/ndjson.ts):
 * each HTTP exchange whole, with the check that made or received it. Nothing here is
 * redacted: the reporters redact at writing time, when the run's redactor has seen every
 * secret of the run (a token issued late in a run may appear in an early exchange's answer).
 */
import type { Recorded } from './exchange.ts';
import type { Exchange } from './exchange.ts';
import type { Redactor } from './redact.ts';
import type { Received } from './exchange.ts';

/**
 * `api`: the suite's request to the target (`run`). `delivery`: a webhook delivery, made by
 * the target to the suite's receiver (`run`) or by the suite to the receiver under test
 * (`receiver`). `client`: a request of the client under test to the scripted service
 * (`client`), with what the client got.
 */
export type TrafficKind = 'api' | 'delivery' | 'client';

export interface TrafficEntry {
  kind: TrafficKind;
  /** The check that made or received it; `PREFLIGHT` for the delivery preflight of `run`. */
  checkId: string;
  /** ms since the epoch. */
  startedAt: number;
  /** Until the answer arrived whole; undefined when that is not known. */
  durationMs: number | undefined;
  request: { method: string; url: string; headers: Record<string, string>; body: string | undefined };
  /** Undefined when no answer came (`error` says why). */
  response: { status: number; headers: Record<string, string>; body: string } | undefined;
  error?: string;
  /** client: who gave the answer (the target, the target's answer edited, or the suite in its place). */
  answeredBy?: string;
}

/** What a mode gives the traffic reporters: its entries (made only when a traffic report is asked for) and its redactor. */
export interface Traffic {
  entries(): TrafficEntry[];
  redactor: Redactor;
}

export function exchangeEntry(e: Exchange): TrafficEntry {
  return {
    kind: 'api',
    checkId: e.checkId,
    startedAt: e.startedAt ?? 0,
    durationMs: e.durationMs,
    request: { method: e.request.method, url: e.request.url, headers: e.request.headers, body: e.request.body },
    response: { status: e.status, headers: e.headers, body: e.text },
  };
}

/** Receiver paths are `/hooks/<check id>/...` (RunContext.nextHookPath, the exploration's World). */
export function checkIdOfHookPath(path: string): string {
  return path.split('/')[2] || 'unknown';
}

/** The receiver's answers are `{}` as JSON (modes/run/capture-receiver.ts); a held one is 200 once its time is up. */
export function deliveryEntry(d: Received, receiverUrl: string): TrafficEntry {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(d.headers))
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  const status = d.answer === undefined ? undefined : 'status' in d.answer ? d.answer.status : 200;
  return {
    kind: 'delivery',
    checkId: checkIdOfHookPath(d.path),
    startedAt: d.receivedAt,
    durationMs: d.answeredAt === undefined ? undefined : d.answeredAt - d.receivedAt,
    request: { method: d.method, url: `${receiverUrl}${d.path}`, headers, body: d.raw.toString('utf8') },
    response:
      status === undefined || d.answeredAt === undefined
        ? undefined
        : { status, headers: { 'content-type': 'application/json' }, body: '{}' },
    ...(d.answeredAt === undefined ? { error: 'not answered: the run ended first' } : {}),
  };
}

/** The traffic of `run`: its exchanges with the target and the deliveries its receiver took, in the order they began. */
export function runTraffic(exchanges: readonly Exchange[], deliveries: readonly Received[], receiverUrl: string) {
  return byStart([...exchanges.map(exchangeEntry), ...deliveries.map((d) => deliveryEntry(d, receiverUrl))]);
}

/** A request of the client under test to the scripted service at `serviceUrl`, and what it got. */
export function clientEntry(r: Recorded, serviceUrl: string, checkId: string): TrafficEntry {
  return {
    kind: 'client',
    checkId,
    startedAt: r.at,
    durationMs: r.gotAt === undefined ? undefined : r.gotAt - r.at,
    request: { method: r.method, url: `${serviceUrl}${r.url}`, headers: r.headers, body: r.body },
    response: r.got,
    ...(r.got === undefined ? { error: `no answer (${r.plan})` } : {}),
    answeredBy: r.plan === 'forward' ? 'the target' : r.plan === 'rewrite' ? 'the target, edited' : 'the suite',
  };
}

export function byStart(entries: TrafficEntry[]): TrafficEntry[] {
  return entries.sort((a, b) => a.startedAt - b.startedAt);
}

/**
 * The traffic of `run` for the traffic reports: its exchanges with the target and the
 * deliveries its receiver took, each an entry named after the check that made or received it.
 */
import type { Exchange, Received } from '../../core/exchange.ts';
import { byStart, type TrafficEntry } from '../../core/traffic.ts';

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
export function runTraffic(
  exchanges: readonly Exchange[],
  deliveries: readonly Received[],
  receiverUrl: string,
  adapterCalls: readonly TrafficEntry[] = [],
) {
  return byStart([
    ...exchanges.map(exchangeEntry),
    ...deliveries.map((d) => deliveryEntry(d, receiverUrl)),
    ...adapterCalls,
  ]);
}

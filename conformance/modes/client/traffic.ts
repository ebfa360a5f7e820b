/** The traffic of `client` for the traffic reports: each request of the client under test, and what it got. */
import type { Recorded } from '../../core/exchange.ts';
import type { TrafficEntry } from '../../core/traffic.ts';

/** A request of the client under test to the scripted service at `serviceUrl`, and what it got. */
export function clientEntry(r: Recorded, serviceUrl: string, checkId: string): TrafficEntry {
  return {
    kind: 'client',
    checkId,
    startedAt: r.at,
    durationMs: r.gotAt === undefined ? undefined : r.gotAt - r.at,
    request: {
      method: r.method,
      url: `${serviceUrl}${r.url}`,
      headers: r.headers,
      body: r.body,
      ...(r.bodyBytes !== undefined ? { bodySize: r.bodyBytes } : {}),
    },
    response: r.got,
    ...(r.got === undefined ? { error: `no answer (${r.plan})` } : {}),
    answeredBy: r.plan === 'forward' ? 'the target' : r.plan === 'rewrite' ? 'the target, edited' : 'the suite',
  };
}

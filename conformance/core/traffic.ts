/**
 * The traffic of a run, for the traffic reports (reporters/har.ts, reporters/ndjson.ts):
 * each HTTP exchange whole, with the check that made or received it. Nothing here is
 * redacted: the reporters redact at writing time, when the run's redactor has seen every
 * secret of the run (a token issued late in a run may appear in an early exchange's answer).
 */
import { createHash } from 'node:crypto';
import type { Redactor } from './redact.ts';

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
  request: {
    method: string;
    url: string;
    headers: Record<string, string>;
    body: string | undefined;
    /** The body's whole size in bytes, when `body` holds only its start (the client mode keeps bodies to a limit). */
    bodySize?: number;
  };
  /** Undefined when no answer came (`error` says why). */
  response:
    | {
        status: number;
        headers: Record<string, string>;
        body: string;
        /** The body's whole size in bytes, when `body` holds only its start (the proxy keeps bodies to --max-body). */
        bodySize?: number;
      }
    | undefined;
  error?: string;
  /** client: who gave the answer (the target, the target's answer edited, or the suite in its place). */
  answeredBy?: string;
}

/** What a mode gives the traffic reporters: its entries (made only when a traffic report is asked for) and its redactor. */
export interface Traffic {
  entries(): TrafficEntry[];
  redactor: Redactor;
}

export function byStart(entries: TrafficEntry[]): TrafficEntry[] {
  return entries.sort((a, b) => a.startedAt - b.startedAt);
}

/** What the traffic reports write beside an entry, no secret among it, so that a reader can tell credentials apart. */
export interface Credentials {
  /** The clientId the request's credentials belong to (a clientId is no secret). */
  client?: string;
  /**
   * A fingerprint of the token the request carries, or a token request's answer issued: the
   * start of its SHA-256, which tells tokens apart and gives none away.
   */
  token?: string;
}

export const tokenFingerprint = (token: string): string =>
  createHash('sha256').update(token).digest('hex').slice(0, 12);

/**
 * Whose credentials each exchange carries: a token request names its clientId, and a token
 * its answer issued names it on the requests that carry the token. The traffic reports
 * write it beside each entry (`_client`, `_token`), since they show every token by a
 * placeholder, so that a reader of the file (`traffic`) can still tell clients and tokens apart.
 */
export function credentialsOf(entries: readonly TrafficEntry[]): Map<TrafficEntry, Credentials> {
  const owners = new Map<string, string>();
  const found = new Map<TrafficEntry, Credentials>();
  for (const e of entries) {
    const { pathname } = URL.canParse(e.request.url) ? new URL(e.request.url) : { pathname: '' };
    if (e.request.method === 'POST' && pathname.endsWith('/api/token')) {
      const client = new URLSearchParams(e.request.body ?? '').get('clientId') ?? undefined;
      const token = e.response?.status === 200 ? /"accessToken"\s*:\s*"([^"]+)"/.exec(e.response.body)?.[1] : undefined;
      if (token && client) owners.set(token, client);
      if (client || token)
        found.set(e, { ...(client ? { client } : {}), ...(token ? { token: tokenFingerprint(token) } : {}) });
      continue;
    }
    const bearer = /^Bearer\s+(\S+)$/i.exec(
      Object.entries(e.request.headers).find(([name]) => name.toLowerCase() === 'authorization')?.[1] ?? '',
    )?.[1];
    if (!bearer) continue;
    const owner = owners.get(bearer);
    found.set(e, { ...(owner ? { client: owner } : {}), token: tokenFingerprint(bearer) });
  }
  return found;
}

/**
 * The traffic of a run, for the traffic reports (reporters/har.ts, reporters/ndjson.ts):
 * each HTTP exchange whole, with the check that made or received it. Nothing here is
 * redacted: the reporters redact at writing time, when the run's redactor has seen every
 * secret of the run (a token issued late in a run may appear in an early exchange's answer).
 */
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

export function byStart(entries: TrafficEntry[]): TrafficEntry[] {
  return entries.sort((a, b) => a.startedAt - b.startedAt);
}

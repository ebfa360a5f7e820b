/** One HTTP exchange with the target, kept whole so that a failure can show it and reproduce it. */

export interface SentRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export interface Exchange {
  request: SentRequest;
  status: number;
  headers: Record<string, string>;
  text: string;
  /** The parsed JSON body, or undefined when the body is not JSON. Nothing about its shape is assumed. */
  json: unknown;
  /** Id of the check that made it (for the response conformance checks). */
  checkId: string;
  /** When it was sent (ms since the epoch), and how long its answer took to arrive whole: for the traffic reports. */
  startedAt?: number;
  durationMs?: number;
}

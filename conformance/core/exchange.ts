/**
 * The traffic every mode records, as the modes and the reports share it: an exchange of
 * the suite with a target, a delivery the suite's receiver took, a request of a client
 * under test with the answer it got.
 */
import type { IncomingHttpHeaders } from 'node:http';

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

/** One delivery as the suite's receiver got it. */
export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  /** Parsed JSON, or undefined. Nothing about its shape is assumed. */
  body: unknown;
  receivedAt: number;
  /** 1 for the first delivery to this path, 2 for the next... (other event kinds counted apart). */
  attempt: number;
  /** How the receiver answered: a status at once, or held past the service's wait. */
  answer?: Answer;
  /**
   * When the receiver answered (or would have, had the target not hung up): a held
   * answer goes when its timer fires, which on a busy machine is later than asked for.
   */
  answeredAt?: number;
}

/**
 * How to answer the n-th delivery to a path: a status, or hold the answer this long (ms)
 * and then answer 200. A status goes with a JSON `{}` unless `body` says otherwise (`null`:
 * no body at all), and with a `Location` when given: receivers answer every class of
 * status, each with or without a body, and the document judges a delivery by the status alone.
 */
export type Answer = { status: number; body?: AnswerBody; location?: string } | { holdMs: number };
export type AnswerBody = { type: string; text: string } | null;

/** An answer as the client receives it. */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A request of the client under test, as the scripted service recorded it. */
export interface Recorded {
  /** Its place among the scenario's requests, from 1. */
  seq: number;
  /** Date.now() when it arrived. */
  at: number;
  method: string;
  /** Path and query. */
  url: string;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** The body as kept: whole, or its start when it was longer than what is kept (`bodyBytes`). */
  body: string;
  /** The body's whole size in bytes, when `body` holds only its start. */
  bodyBytes?: number;
  plan: string;
  /** The target's answer, when the request reached it. */
  target?: Reply;
  /** What the client got: an answer, or none (reset, or it went away while an answer was withheld). */
  got?: Reply;
  /** Date.now() when the answer was sent. */
  gotAt?: number;
}

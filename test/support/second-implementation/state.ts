/**
 * What the second implementation holds in memory (organisations, keys, tokens, payments,
 * idempotency records, deliveries and the card queue), the clocks it reads, and how it
 * answers (JSON always; the error envelope).
 */
import type http from 'node:http';
import type { ServerResponse } from 'node:http';
import {
  type SecondImplementationOptions,
  type Stored,
  type Organisation,
  type ApiKey,
  type Token,
  type Payable,
  type Session,
  type Payment,
  type Delivery,
  type Job,
  ApiError,
} from './types.ts';

export class State {
  readonly orgs = new Map<string, Organisation>();
  readonly keys = new Map<string, ApiKey>();
  readonly tokens = new Map<string, Token>();
  readonly sessions = new Map<string, Session>();
  readonly payments = new Map<string, Payment>(); // by transaction id
  readonly idempotency = new Map<string, { request: string; storedAt: number; response: unknown }>();
  readonly deliveries: Delivery[] = [];
  readonly queue = new Set<Job>();
  readonly timers = new Set<NodeJS.Timeout>();
  readonly inFlight = new Set<http.ClientRequest>();
  baseUrl = '';

  constructor(readonly options: SecondImplementationOptions) {}

  readonly docsUrl = () => `${this.baseUrl}/docs`;

  /** Each organisation's clock: real time plus what advanceClock added (ours). */
  readonly now = (org: Organisation) => Date.now() + org.clockOffsetMs;
  readonly orgOf = (p: Payable) => this.orgs.get(p.orgId)!;

  /** A session unpaid 24 hours after creation reads `expired` (state.expired, limit.session). */
  readonly statusOf = (p: Payment): Stored | 'expired' => {
    if (
      p.kind === 'session' &&
      (p.status === 'created' || p.status === 'failed') &&
      this.now(this.orgOf(p)) >= p.expiresAt
    )
      return 'expired';
    return p.status;
  };
}

/** How the implementation answers. */
export function makeResponses(st: State) {
  const { docsUrl } = st;
  function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    // conv.response-body: every answer is JSON, errors included.
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
    res.end(JSON.stringify(body));
  }

  function sendError(res: ServerResponse, e: ApiError): void {
    // conv.error-body, err.doc-url; details only on validation_failed (err.details).
    const error = {
      code: e.code,
      message: e.message,
      param: e.param,
      doc_url: `${docsUrl()}/errors/#${e.code}`,
      ...(e.details ? { details: e.details } : {}),
    };
    // RFC 6750 3: the scheme to use, and error="invalid_token" when a token was sent and refused.
    const challenge =
      e.code === 'unauthorized' ? 'Bearer realm="payments"' : 'Bearer realm="payments", error="invalid_token"';
    const headers: Record<string, string> = e.status === 401 ? { 'www-authenticate': challenge } : {};
    send(res, e.status, { error }, headers);
  }

  const notFound = (what: string) => new ApiError(404, 'not_found', `No ${what} with that id.`);
  const noRoute = () => new ApiError(404, 'not_found', 'No such route.');

  return { send, sendError, notFound, noRoute };
}

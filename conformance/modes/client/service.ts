/**
 * The scripted service: what the client under test talks to in a scenario. It stands in
 * front of the real target and passes each request through, except where the scenario's
 * script answers for it: an error the target would give only by chance (a 500 after the
 * create was committed, an expired token in the middle of a sequence, a code the document
 * may add later), a connection reset, an answer withheld. Every request is recorded with
 * when it came and what the client got, for the checks to judge.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Recorded, Reply } from '../../core/exchange.ts';

/** What to do with one request. */
export type Plan =
  /** Pass it to the target and its answer back. */
  | 'forward'
  /** Close the connection without an answer; the target never sees the request. */
  | 'reset'
  /** Answer it here; the target never sees it. */
  | { answer: Reply }
  /** Pass it to the target (it commits), then give the client this instead of the target's answer. */
  | { commit: Reply }
  /** Pass it to the target (it commits), then close the client's connection without an answer. */
  | { commitThenReset: true }
  /** Pass it to the target, and withhold its answer this long or until the client gives up. */
  | { commitThenHold: number }
  /** Pass it to the target and give back its answer edited. */
  | { rewrite: (reply: Reply) => Reply };

/** Picks the plan for a request, given the scenario's requests so far (this one last). */
export type Script = (request: Recorded, all: readonly Recorded[]) => Plan;

export interface ScriptedService {
  /** The base URL the driver is given: the service's port, and a path of the run's own. */
  url: string;
  readonly requests: readonly Recorded[];
  /** Requests that came to the port outside `url`: not the client's to be judged on. */
  strays(): number;
  /** Requests of the client past REQUESTS_RECORDED: answered, counted, not kept. */
  dropped(): number;
  close(): Promise<void>;
}

/** Headers that belong to one hop, not to the request or answer passed on. */
const HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

/**
 * The largest request body the service takes: the reference target's own limit. A longer
 * one is answered 413 by the service, which keeps its start and its size, not the rest.
 */
export const BODY_LIMIT = 1024 * 1024;
/**
 * Requests of one scenario kept whole (headers, bodies, answers): a client that sends more
 * is hammering the service, and the rest are kept as their method, path, time and status.
 */
export const REQUESTS_KEPT = 2000;
/** Requests of one scenario kept at all: past them, a request is counted and answered, not kept. */
export const REQUESTS_RECORDED = 10_000;
/** Body bytes of one scenario kept in all; past them, each body's first kilobytes only. */
const BODY_BYTES_KEPT = 16 * 1024 * 1024;
const BODY_START_KEPT = 4096;

const pathOf = (r: Recorded) => r.url.split('?')[0]!;
const describePlan = (plan: Plan) => (typeof plan === 'string' ? plan : Object.keys(plan)[0]!);

/**
 * A scripted service on a loopback port of its own, under a path no other process knows
 * (the run's secret): requests elsewhere are answered 404 and counted apart, never judged,
 * so that another local process that finds the port cannot change a verdict.
 */
export async function startScriptedService(targetUrl: string, script: Script): Promise<ScriptedService> {
  const requests: Recorded[] = [];
  const prefix = `/${randomBytes(12).toString('base64url')}`;
  let strays = 0;
  let dropped = 0;
  let bodyBytes = 0;
  const sockets = new Set<import('node:net').Socket>();
  // Requests still on their way to the target end with the service.
  const closing = new AbortController();
  const base = new URL(targetUrl);
  const transport = base.protocol === 'https:' ? https : http;
  // One pool of connections to the target for the scenario, kept alive between requests.
  const agent = new transport.Agent({ keepAlive: true });
  const forward = (r: Recorded): Promise<Reply> =>
    new Promise((resolve, reject) => {
      // The target answers without compression: its bodies are judged as text.
      const headers = Object.fromEntries(
        Object.entries(r.headers).filter(([name]) => !HOP.has(name) && name !== 'accept-encoding'),
      );
      const body = r.method === 'GET' || r.method === 'HEAD' ? undefined : Buffer.from(r.body);
      const request = transport.request(
        new URL(`${base.pathname.replace(/\/$/, '')}${r.url}`, base),
        {
          method: r.method,
          headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) },
          agent,
          signal: AbortSignal.any([closing.signal, AbortSignal.timeout(30_000)]),
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (c: Buffer) => chunks.push(c));
          response.on('error', reject);
          response.on('end', () => {
            const kept: Record<string, string> = {};
            for (const [name, value] of Object.entries(response.headers))
              if (value !== undefined && !HOP.has(name) && name !== 'content-encoding')
                kept[name] = Array.isArray(value) ? value.join(', ') : value;
            resolve({
              status: response.statusCode ?? 502,
              headers: kept,
              body: Buffer.concat(chunks).toString('utf8'),
            });
          });
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    if (url !== prefix && !url.startsWith(`${prefix}/`) && !url.startsWith(`${prefix}?`)) {
      strays += 1;
      req.resume();
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not under this scenario’s PAYMENT_BASE_URL\n');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      chunks.push(c);
      size += c.length;
      // Past the limit the request is answered at once and the rest is not read: a body of
      // any size costs the suite the limit, no more.
      if (size > BODY_LIMIT) {
        over = true;
        req.pause();
        void handle();
      }
    });
    req.on('end', () => {
      if (!over) void handle();
    });
    const handle = async () => {
      if (requests.length >= REQUESTS_RECORDED) {
        // No verdict is given on a scenario past its bound (expectKept): the client is told
        // so rather than served, and nothing more of it is kept.
        dropped += 1;
        res.once('finish', () => over && req.socket.destroy());
        return void res
          .writeHead(503, { 'content-type': 'text/plain', ...(over ? { connection: 'close' } : {}) })
          .end(`the scripted service keeps ${REQUESTS_RECORDED} requests of a scenario, and takes no more\n`);
      }
      const headers = flatHeaders(req.headers);
      const whole = requests.length < REQUESTS_KEPT;
      const raw = Buffer.concat(chunks);
      const keep = whole && bodyBytes + raw.length <= BODY_BYTES_KEPT ? BODY_LIMIT : BODY_START_KEPT;
      const body = raw.subarray(0, keep).toString('utf8');
      bodyBytes += Math.min(raw.length, keep);
      const recorded: Recorded = {
        seq: requests.length + 1,
        at: Date.now(),
        method: req.method ?? 'GET',
        url: url.slice(prefix.length) || '/',
        headers: whole ? headers : {},
        body,
        // A body refused past the limit is not read to its end: its size is what it declared.
        ...(over || size > Buffer.byteLength(body)
          ? { bodyBytes: Math.max(size, Number(req.headers['content-length']) || 0) }
          : {}),
        plan: 'forward',
      };
      requests.push(recorded);
      // Whether the client is still there to be answered: it may give up (its own timeout) at any time.
      let gone = false;
      res.once('close', () => {
        gone = !res.writableFinished;
      });
      const send = (reply: Reply) => {
        if (gone || res.destroyed) return;
        res.writeHead(reply.status, { ...reply.headers, 'content-length': Buffer.byteLength(reply.body) });
        res.end(reply.body);
        // Past the requests kept whole, an answer is kept as its status.
        recorded.got = whole ? reply : { status: reply.status, headers: {}, body: '' };
        recorded.gotAt = Date.now();
      };
      if (over) {
        recorded.plan = 'refused: body over the limit';
        res.once('finish', () => req.socket.destroy());
        return send({
          status: 413,
          headers: { 'content-type': 'text/plain', connection: 'close' },
          body: `the scripted service takes bodies of up to ${BODY_LIMIT} bytes; this one has more`,
        });
      }
      let plan: Plan;
      try {
        plan = script(recorded, requests);
      } catch {
        plan = 'forward';
      }
      recorded.plan = describePlan(plan);
      try {
        if (plan === 'reset') return req.socket.destroy();
        if (typeof plan === 'object' && 'answer' in plan) return send(plan.answer);
        const target = await forward({ ...recorded, body: raw.toString('utf8') });
        recorded.target = whole ? target : { status: target.status, headers: {}, body: '' };
        if (plan === 'forward') return send(target);
        if ('commit' in plan) return send(plan.commit);
        if ('commitThenReset' in plan) return req.socket.destroy();
        if ('rewrite' in plan) return send(plan.rewrite(target));
        // Withheld: the client may give up first (its own timeout), and then gets nothing.
        if (!gone)
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, plan.commitThenHold);
            res.once('close', () => {
              clearTimeout(timer);
              resolve();
            });
          });
        send(target);
      } catch (error) {
        send({
          status: 502,
          headers: { 'content-type': 'text/plain' },
          body: `the suite could not reach the target: ${(error as Error).message}`,
        });
      }
    };
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${prefix}`,
    requests,
    strays: () => strays,
    dropped: () => dropped,
    close: () =>
      new Promise((resolve) => {
        closing.abort();
        agent.destroy();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Headers as one string each, repeated ones joined with ", ". */
function flatHeaders(given: http.IncomingHttpHeaders): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(given))
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  return headers;
}

// ---- what scripts and checks ask of a request ----

export const isToken = (r: Recorded) => r.method === 'POST' && pathOf(r) === '/api/token';
export const isCreate = (r: Recorded) => r.method === 'POST' && pathOf(r) === '/api/checkout-sessions';
export const isSessionRead = (r: Recorded) => r.method === 'GET' && pathOf(r).startsWith('/api/checkout-sessions/');
export const isApi = (r: Recorded) => pathOf(r).startsWith('/api/') && !isToken(r);
/** Two requests are the same one sent again: method and path. */
export const sameRequest = (a: Recorded, b: Recorded) => a.method === b.method && a.url === b.url;

/** An error envelope as the service answers it (Errors: Envelope). */
export function envelope(
  serviceUrl: string,
  status: number,
  code: string,
  extra: { param?: string | null; headers?: Record<string, string> } = {},
): Reply {
  return {
    status,
    headers: { 'content-type': 'application/json', ...extra.headers },
    body: JSON.stringify({
      error: {
        code,
        message: `The scripted service answers ${code} here.`,
        param: extra.param ?? null,
        doc_url: `${serviceUrl}/docs/errors/#${code}`,
        ...(code === 'validation_failed'
          ? {
              details: [
                { field: extra.param ?? 'amount.total', constraints: { max: 'must not be greater than 10000' } },
              ],
            }
          : {}),
      },
    }),
  };
}

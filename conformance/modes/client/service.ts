/**
 * The scripted service: what the client under test talks to in a scenario. It stands in
 * front of the real target and passes each request through, except where the scenario's
 * script answers for it: an error the target would give only by chance (a 500 after the
 * create was committed, an expired token in the middle of a sequence, a code the document
 * may add later), a connection reset, an answer withheld. Every request is recorded with
 * when it came and what the client got, for the checks to judge.
 */
import http from 'node:http';
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
  url: string;
  readonly requests: readonly Recorded[];
  close(): Promise<void>;
}

/** Headers that belong to one hop, not to the request or answer passed on. */
const HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

const pathOf = (r: Recorded) => r.url.split('?')[0]!;
const describePlan = (plan: Plan) => (typeof plan === 'string' ? plan : Object.keys(plan)[0]!);

export async function startScriptedService(targetUrl: string, script: Script): Promise<ScriptedService> {
  const requests: Recorded[] = [];
  const sockets = new Set<import('node:net').Socket>();
  // Requests still on their way to the target end with the service.
  const closing = new AbortController();
  const forward = async (r: Recorded): Promise<Reply> => {
    const headers = Object.fromEntries(Object.entries(r.headers).filter(([name]) => !HOP.has(name)));
    const response = await fetch(`${targetUrl}${r.url}`, {
      method: r.method,
      headers,
      ...(r.method === 'GET' || r.method === 'HEAD' ? {} : { body: r.body }),
      signal: AbortSignal.any([closing.signal, AbortSignal.timeout(30_000)]),
    });
    const body = await response.text();
    const kept: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      if (!HOP.has(name) && name !== 'content-encoding') kept[name] = value;
    });
    return { status: response.status, headers: kept, body };
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers))
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      const recorded: Recorded = {
        seq: requests.length + 1,
        at: Date.now(),
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
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
        recorded.got = reply;
        recorded.gotAt = Date.now();
      };
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
        recorded.target = await forward(recorded);
        if (plan === 'forward') return send(recorded.target);
        if ('commit' in plan) return send(plan.commit);
        if ('commitThenReset' in plan) return req.socket.destroy();
        if ('rewrite' in plan) return send(plan.rewrite(recorded.target));
        // Withheld: the client may give up first (its own timeout), and then gets nothing.
        const target = recorded.target;
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
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        closing.abort();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
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

/**
 * A mutating HTTP proxy for testing the conformance suite: it sits between the suite and
 * the reference server (API proxy), or between the server and the suite's webhook
 * receiver (hook proxy), and changes what passes through, to make a broken variant (a
 * violation the suite must catch) or a legal one (a difference the suite must accept).
 *
 * `Knowledge` is what the proxy learned by watching the traffic (organisations and their
 * settings and secrets, which token belongs to which organisation, sessions), so a
 * mutation can be as narrow as a real bug would be.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Message {
  method: string;
  /** Path and query. */
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface OrgFacts {
  id: string;
  settings: Record<string, unknown>;
  secrets: string[];
}

export class Knowledge {
  readonly orgs = new Map<string, OrgFacts>();
  readonly orgByClientId = new Map<string, OrgFacts>();
  readonly orgByToken = new Map<string, OrgFacts>();
  /** Session ids created through the proxy. */
  readonly sessions = new Set<string>();
  /** Client ids that have been given a token. */
  readonly goodClientIds = new Set<string>();

  orgOf(request: Message): OrgFacts | undefined {
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    return token ? this.orgByToken.get(token) : undefined;
  }

  secrets(): string[] {
    return [...this.orgs.values()].flatMap((o) => o.secrets);
  }

  /** Learns from one exchange. */
  observe(request: Message, reply: Reply): void {
    const json = (text: string) => {
      try {
        return JSON.parse(text);
      } catch {
        return undefined;
      }
    };
    const path = request.url.split('?')[0]!;
    const body = json(reply.body);
    if (reply.status !== 200 || !body) return;
    if (request.method === 'POST' && path === '/sandbox/organisations') {
      const org: OrgFacts = { id: body.id, settings: json(request.body) ?? {}, secrets: [body.webhookSigningSecret] };
      this.orgs.set(org.id, org);
      this.orgByClientId.set(body.apiKeys.test.clientId, org);
      this.orgByClientId.set(body.apiKeys.live.clientId, org);
    }
    const orgPath = /^\/sandbox\/organisations\/([^/]+)\/(api-keys|webhook-secret)$/.exec(path);
    if (orgPath && this.orgs.has(orgPath[1]!)) {
      const org = this.orgs.get(orgPath[1]!)!;
      if (orgPath[2] === 'api-keys') this.orgByClientId.set(body.clientId, org);
      else org.secrets.push(body.webhookSigningSecret);
    }
    if (path === '/api/token' && typeof body.accessToken === 'string') {
      const clientId = new URLSearchParams(request.body).get('clientId') ?? '';
      this.goodClientIds.add(clientId);
      const org = this.orgByClientId.get(clientId);
      if (org) this.orgByToken.set(body.accessToken, org);
    }
    if (request.method === 'POST' && path === '/api/checkout-sessions' && typeof body.id === 'string')
      this.sessions.add(body.id);
  }
}

export interface Mutation {
  /** Changes the request, or answers it without the server (return a Reply); `forward` sends a request on. */
  request?(
    request: Message,
    k: Knowledge,
    forward: (m: Message) => Promise<Reply>,
  ): Message | Reply | Promise<Message | Reply>;
  /** Changes the reply. `forward` sends another request the same way (for mutations that retry). */
  response?(
    request: Message,
    reply: Reply,
    k: Knowledge,
    forward: (m: Message) => Promise<Reply>,
  ): Reply | Promise<Reply>;
  /** Runs after the reply reached the caller, when it did (the caller did not hang up). */
  after?(request: Message, reply: Reply, k: Knowledge, forward: (m: Message) => Promise<Reply>): void | Promise<void>;
}

export interface MutatingProxy {
  url: string;
  port: number;
  knowledge: Knowledge;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'host',
  'upgrade',
  'proxy-connection',
  'te',
  'trailer',
]);

function forwarder(target: string) {
  const base = new URL(target);
  return (m: Message): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(m.headers)) if (!HOP_BY_HOP.has(k)) headers[k] = v;
      if (m.body.length > 0 || ['POST', 'PUT', 'PATCH'].includes(m.method))
        headers['content-length'] = String(Buffer.byteLength(m.body));
      const req = http.request(
        { host: base.hostname, port: base.port, method: m.method, path: m.url, headers, agent: false },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const out: Record<string, string> = {};
            for (const [k, v] of Object.entries(res.headers))
              if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = Array.isArray(v) ? v.join(', ') : v;
            resolve({ status: res.statusCode ?? 502, headers: out, body: Buffer.concat(chunks).toString('utf8') });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(m.body);
    });
}

/** Starts a proxy on a free loopback port (or `port`) forwarding to `target`. */
export async function startMutatingProxy(
  target: string,
  mutation: Mutation = {},
  options: { knowledge?: Knowledge; port?: number } = {},
): Promise<MutatingProxy> {
  const knowledge = options.knowledge ?? new Knowledge();
  const forward = forwarder(target);
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
      const original: Message = {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      try {
        const changed = mutation.request ? await mutation.request(original, knowledge, forward) : original;
        let reply: Reply;
        if ('status' in changed) reply = changed;
        else {
          reply = await forward(changed);
          knowledge.observe(changed, reply);
        }
        if (mutation.response) reply = await mutation.response(original, reply, knowledge, forward);
        if (res.destroyed || req.socket.destroyed) return;
        res.writeHead(reply.status, { ...reply.headers, 'content-length': String(Buffer.byteLength(reply.body)) });
        res.end(reply.body, () => {
          if (mutation.after)
            void Promise.resolve(mutation.after(original, reply, knowledge, forward)).catch(() => undefined);
        });
      } catch (error) {
        if (!res.headersSent && !res.destroyed)
          res.writeHead(502, { 'content-type': 'text/plain' }).end(`proxy: ${String(error)}`);
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    knowledge,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Ports handed out by this test file: a run still starting may not have taken its own yet. */
const handedOut = new Set<number>();

/**
 * A free loopback port for the suite's receiver behind a hook proxy. It is taken from
 * 20000-29999, below the kernel's ephemeral range, so that no `listen(0)` of a concurrent
 * run can take it between this probe and the suite's own listen; each test worker has a
 * slice of its own (VITEST_POOL_ID counts them from 1), and in it a port is handed out once,
 * so that concurrent runs never draw the same one.
 */
export async function freePort(): Promise<number> {
  const slice = 2500;
  const base = 20000 + ((Number(process.env.VITEST_POOL_ID ?? 1) - 1) % 4) * slice;
  for (;;) {
    const port = base + Math.floor(Math.random() * slice);
    if (handedOut.has(port)) continue;
    const server = http.createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (free) {
      handedOut.add(port);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      return port;
    }
  }
}

/** JSON body helpers for mutations. */
export function editJson(reply: Reply, edit: (value: any) => any): Reply {
  let value: unknown;
  try {
    value = JSON.parse(reply.body);
  } catch {
    return reply;
  }
  return { ...reply, body: JSON.stringify(edit(value)) };
}

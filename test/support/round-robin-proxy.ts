/**
 * A small round-robin HTTP proxy for the tests of several servers as one service: each
 * request goes to the next upstream in turn, as a load balancer without affinity sends it.
 * An upstream that refuses the connection (a stopped server) is passed over for the next;
 * with none left the answer is 502.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RoundRobinProxy {
  url: string;
  /** The upstreams' base URLs, in turn. */
  upstreams: string[];
  /** How many requests each upstream answered, by base URL. */
  answered: Map<string, number>;
  close(): Promise<void>;
}

export async function roundRobinProxy(upstreams: string[] = []): Promise<RoundRobinProxy> {
  let next = 0;
  const answered = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => forward(req, res, Buffer.concat(chunks), proxy.upstreams.length));
  });

  function forward(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, triesLeft: number) {
    if (triesLeft === 0 || proxy.upstreams.length === 0) {
      res.writeHead(502).end();
      return;
    }
    const upstream = proxy.upstreams[next++ % proxy.upstreams.length]!;
    const target = new URL(req.url!, upstream);
    const outgoing = http.request(target, { method: req.method, headers: req.headers, agent: false }, (answer) => {
      answered.set(upstream, (answered.get(upstream) ?? 0) + 1);
      res.writeHead(answer.statusCode!, answer.rawHeaders);
      answer.pipe(res);
    });
    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      // Nothing reached the upstream: the next one may take it. Anything else is the answer.
      if (error.code === 'ECONNREFUSED' && !res.headersSent) forward(req, res, body, triesLeft - 1);
      else if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    outgoing.end(body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: RoundRobinProxy = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    upstreams,
    answered,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return proxy;
}

/**
 * The benchmark's ceiling: a bare node:http server answering a tiny JSON body, run in
 * its own process (as the payment server is) so the two are measured the same way.
 * Prints `ceiling listening on http://HOST:PORT` once listening; stops on SIGINT/SIGTERM.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const host = process.env.HOST ?? '127.0.0.1';
const port = Number(process.env.PORT ?? 0);
const body = Buffer.from(JSON.stringify({ ok: true }));

const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
});

server.listen(port, host, () => {
  const address = server.address() as AddressInfo;
  console.log(`ceiling listening on http://${host.includes(':') ? `[${host}]` : host}:${address.port}`);
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}

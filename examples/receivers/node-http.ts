/**
 * A webhook receiver on Node's own http module: the body read as raw bytes (at most
 * 64 KiB), then handed over before any parsing.
 *
 * Run it: PAYMENT_BASE_URL=http://127.0.0.1:4010 CLIENT_ID=... CLIENT_SECRET=...
 * WEBHOOK_SECRET=whsec_... PORT=4020 npx tsx examples/receivers/node-http.ts
 */
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { handleDelivery, type ReceiverSetup, setupFromEnv } from './deliveries.ts';

const LIMIT = 64 * 1024;

export function createReceiver(setup: ReceiverSetup): http.Server {
  return http.createServer(async (req, res) => {
    if (req.method !== 'POST' || req.url !== '/webhooks') return void res.writeHead(404).end();
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += chunk.length;
      if (size > LIMIT) return void res.writeHead(413).end();
      chunks.push(chunk);
    }
    try {
      const { status, body } = await handleDelivery(
        setup,
        Buffer.concat(chunks),
        req.headers['service-signature']?.toString(),
      );
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    } catch {
      res.writeHead(500).end();
    }
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.env.PORT ?? 4020);
  createReceiver(setupFromEnv(process.env)).listen(port, () => console.log(`http://127.0.0.1:${port}/webhooks`));
}

/**
 * A webhook receiver on Koa: no body parser on this route; the request stream is read as
 * raw bytes (at most 64 KiB).
 *
 * Run it: PAYMENT_BASE_URL=http://127.0.0.1:4010 CLIENT_ID=... CLIENT_SECRET=...
 * WEBHOOK_SECRET=whsec_... PORT=4020 npx tsx examples/receivers/koa.ts
 */
import { pathToFileURL } from 'node:url';
import Koa from 'koa';
import { handleDelivery, type ReceiverSetup, setupFromEnv } from './deliveries.ts';

const LIMIT = 64 * 1024;

export function createReceiver(setup: ReceiverSetup): Koa {
  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.method !== 'POST' || ctx.path !== '/webhooks') {
      ctx.status = 404;
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.req) {
      size += chunk.length;
      if (size > LIMIT) {
        ctx.status = 413;
        return;
      }
      chunks.push(chunk);
    }
    const { status, body } = await handleDelivery(setup, Buffer.concat(chunks), ctx.get('service-signature'));
    ctx.status = status;
    ctx.body = body;
  });
  return app;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.env.PORT ?? 4020);
  createReceiver(setupFromEnv(process.env)).listen(port, () => console.log(`http://127.0.0.1:${port}/webhooks`));
}

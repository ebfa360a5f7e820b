/**
 * A webhook receiver on Fastify: a content-type parser that keeps JSON as a raw Buffer
 * (inside this plugin only, so the rest of the app parses JSON as usual).
 *
 * Run it: PAYMENT_BASE_URL=http://127.0.0.1:4010 CLIENT_ID=... CLIENT_SECRET=...
 * WEBHOOK_SECRET=whsec_... PORT=4020 npx tsx examples/receivers/fastify.ts
 */
import { pathToFileURL } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import { handleDelivery, type ReceiverSetup, setupFromEnv } from './deliveries.ts';

export function createReceiver(setup: ReceiverSetup): FastifyInstance {
  const app = Fastify({ bodyLimit: 64 * 1024 });
  app.register(async (webhooks) => {
    webhooks.removeAllContentTypeParsers();
    webhooks.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    webhooks.post('/webhooks', async (req, reply) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const { status, body } = await handleDelivery(setup, raw, req.headers['service-signature']?.toString());
      return reply.code(status).send(body);
    });
  });
  return app;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.env.PORT ?? 4020);
  await createReceiver(setupFromEnv(process.env)).listen({ port });
  console.log(`http://127.0.0.1:${port}/webhooks`);
}

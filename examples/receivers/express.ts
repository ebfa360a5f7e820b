/**
 * A webhook receiver on Express: `express.raw()` on this route only, so `req.body` is the
 * raw bytes (a Buffer). With `express.json()` in front, the body is parsed and can no
 * longer be verified: the SDK says so with a RawBodyRequiredError.
 *
 * Run it: PAYMENT_BASE_URL=http://127.0.0.1:4010 CLIENT_ID=... CLIENT_SECRET=...
 * WEBHOOK_SECRET=whsec_... PORT=4020 npx tsx examples/receivers/express.ts
 */
import { pathToFileURL } from 'node:url';
import express, { type Express } from 'express';
import { handleDelivery, type ReceiverSetup, setupFromEnv } from './deliveries.ts';

export function createReceiver(setup: ReceiverSetup): Express {
  const app = express();
  app.post('/webhooks', express.raw({ type: () => true, limit: '64kb' }), async (req, res) => {
    const raw: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    try {
      const { status, body } = await handleDelivery(setup, raw, req.get('service-signature'));
      res.status(status).json(body);
    } catch {
      res.sendStatus(500);
    }
  });
  return app;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.env.PORT ?? 4020);
  createReceiver(setupFromEnv(process.env)).listen(port, () => console.log(`http://127.0.0.1:${port}/webhooks`));
}

/**
 * A webhook receiver as a Web-standard handler, `(Request) => Promise<Response>`: what a
 * Next.js route handler (`export const POST = webhookHandler(setup)` in
 * app/webhooks/route.ts), a Cloudflare Worker (`export default { fetch: handler }`), Deno
 * (`Deno.serve(handler)`) and Bun (`Bun.serve({ fetch: handler })`) all take. The body is
 * read with `request.arrayBuffer()`, never `request.json()`.
 *
 * Run it on Node: PAYMENT_BASE_URL=http://127.0.0.1:4010 CLIENT_ID=... CLIENT_SECRET=...
 * WEBHOOK_SECRET=whsec_... PORT=4020 npx tsx examples/receivers/web.ts
 */
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { handleDelivery, type ReceiverSetup, setupFromEnv } from './deliveries.ts';

export function webhookHandler(setup: ReceiverSetup): (request: Request) => Promise<Response> {
  return async (request) => {
    if (request.method !== 'POST' || new URL(request.url).pathname !== '/webhooks')
      return new Response(null, { status: 404 });
    try {
      const { status, body } = await handleDelivery(
        setup,
        await request.arrayBuffer(),
        request.headers.get('service-signature'),
      );
      return Response.json(body, { status });
    } catch {
      return new Response(null, { status: 500 });
    }
  };
}

/** Serves a Web handler on Node's http module (Node has no Request-based server of its own). */
export function serveOnNode(handler: (request: Request) => Promise<Response>): http.Server {
  return http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
    const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, {
      method: req.method ?? 'GET',
      headers,
      ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
    });
    const response = await handler(request);
    res.writeHead(response.status, Object.fromEntries(response.headers)).end(Buffer.from(await response.arrayBuffer()));
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.env.PORT ?? 4020);
  serveOnNode(webhookHandler(setupFromEnv(process.env))).listen(port, () =>
    console.log(`http://127.0.0.1:${port}/webhooks`),
  );
}

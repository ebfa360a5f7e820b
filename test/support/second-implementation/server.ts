/**
 * A second, independent implementation of the payment service, written from SERVICE.md
 * alone (never from server/): small, in-memory, node:http only. It is the conformance
 * suite's false-alarm guard: wherever the document is silent it chooses differently from
 * the obvious default (ids, token text, timestamps, signature part order, request shapes
 * of payment links and legacy transactions, order of configuration codes), and the whole
 * suite must still pass it. Comments name the clause (SERVICE.md#<id>) a line follows, or
 * say "ours" where the document leaves the choice open.
 *
 * Test controls live under /__control/ behind the `Control-Token` header; the adapter
 * (./adapter.ts) reaches the implementation through them and the public API only.
 */
import { randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type SecondImplementationOptions,
  BODY_LIMIT,
  type Mode,
  type Organisation,
  type Payable,
  ApiError,
} from './types.ts';
import { State, makeResponses } from './state.ts';
import { makeAccounts } from './accounts.ts';
import { makeValidation } from './validation.ts';
import { makeCreates } from './creates.ts';
import { makeWebhooks } from './webhooks.ts';
import { makeAttempts } from './attempts.ts';
import { makeControls } from './controls.ts';

export type { SecondImplementationOptions } from './types.ts';

export async function startSecondImplementation(
  options: SecondImplementationOptions,
): Promise<{ url: string; close(): Promise<void> }> {
  const st = new State(options);
  const { sessions, payments, statusOf, docsUrl, timers, queue, inFlight } = st;
  const responses = makeResponses(st);
  const { send, sendError, notFound, noRoute } = responses;
  const accounts = makeAccounts(st);
  const { TOKEN_400, issueToken, authenticate } = accounts;
  const { create, sessionCreate, sessionView, linkCreate, linkView, legacyCreate, transactionView } = makeCreates(
    st,
    makeValidation(st),
  );
  const webhooks = makeWebhooks(st);
  const { pump } = webhooks;
  const attempts = makeAttempts(st, webhooks);
  const { railsOf } = attempts;
  const { control } = makeControls(st, responses, accounts, attempts);

  function readBody(req: IncomingMessage): Promise<Buffer | null> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= BODY_LIMIT) chunks.push(c);
      });
      req.on('end', () => resolve(size <= BODY_LIMIT ? Buffer.concat(chunks) : null));
      req.on('error', reject);
    });
  }

  /**
   * auth.isolation: another organisation's resource is not found. Ours: so is the same
   * organisation's resource of the other mode; a test key sees test payments only (auth.mode).
   */
  const visible = (p: Payable, org: Organisation, mode: Mode) => p.orgId === org.id && p.testMode === (mode === 'test');

  async function api(req: IncomingMessage, res: ServerResponse, path: string, raw: Buffer): Promise<void> {
    const method = req.method ?? 'GET';
    const segments = path.split('/').map((s) => decodeURIComponent(s));
    const [, root, resource, id, ...rest] = segments;
    if (root !== 'api' || rest.length > 0 || id === '') throw noRoute();

    if (resource === 'token' && id === undefined && method === 'POST') {
      const requestId = res.getHeader('request-id') as string;
      const [status, body] = issueToken(raw, req.headers['content-type'], requestId);
      return send(res, status, body);
    }
    const known = resource === 'checkout-sessions' || resource === 'payment-links' || resource === 'transaction';
    if (!known || (id === undefined ? method !== 'POST' : method !== 'GET')) throw noRoute();

    const { org, mode } = authenticate(req);
    if (id === undefined) {
      // conv.success: 200 on creates too.
      if (resource === 'checkout-sessions') return send(res, 200, create(sessionCreate, req, raw, org, mode));
      if (resource === 'payment-links') return send(res, 200, create(linkCreate, req, raw, org, mode));
      return send(res, 200, create(legacyCreate, req, raw, org, mode));
    }

    if (resource === 'checkout-sessions') {
      const s = sessions.get(id);
      if (!s || !visible(s, org, mode)) throw notFound('checkout session'); // read.isolation
      return send(res, 200, sessionView(s));
    }
    const found = payments.get(id);
    const p = found && visible(found, org, mode) ? found : undefined;
    if (resource === 'payment-links') {
      if (p?.kind !== 'link') throw notFound('payment link');
      return send(res, 200, linkView(p));
    }
    // GET /api/transaction/{id}: retired for sessions (legacy.retired); a link answers while
    // payable and is gone once it settles (legacy.link); a legacy transaction always answers (ours).
    if (!p || p.kind === 'session' || (p.kind === 'link' && p.status === 'completed')) throw notFound('transaction');
    return send(res, 200, transactionView(p));
  }

  /** The hosted payment page's address answers with what the payer would see (no auth). */
  function payPage(res: ServerResponse, id: string): void {
    const p = sessions.get(id) ?? payments.get(id);
    if (!p) throw notFound('payment');
    const amount = p.kind === 'link' ? p.amountDue : p.total;
    send(res, 200, { payment: id, status: statusOf(p), amount, currency: p.currency, rails: railsOf(p) });
  }

  const server = http.createServer((req, res) => {
    const requestId = `req-${randomBytes(8).toString('hex')}`;
    res.setHeader('request-id', requestId);
    const url = new URL(req.url ?? '/', 'http://service.invalid');
    const onToken = url.pathname === '/api/token';
    void (async () => {
      try {
        const raw = await readBody(req);
        if (raw === null) {
          if (onToken) return send(res, 400, { error: TOKEN_400 });
          throw new ApiError(400, 'validation_failed', 'The body is too large.', 'body', [
            { field: 'body', constraints: { maxSize: 'the body must be at most 1 MiB' } },
          ]);
        }
        if (url.pathname.startsWith('/__control/')) return await control(req, res, url, raw);
        const pay = /^\/pay\/([^/]+)$/.exec(url.pathname);
        if (pay && req.method === 'GET') return payPage(res, decodeURIComponent(pay[1]!));
        if (/^\/docs\/errors\/?$/.test(url.pathname) && req.method === 'GET')
          return send(res, 200, { errors: 'Each code is explained under its own anchor.' });
        return await api(req, res, url.pathname, raw);
      } catch (e) {
        if (res.headersSent) return;
        if (e instanceof ApiError) return sendError(res, e);
        if (e instanceof URIError) return sendError(res, noRoute());
        // token.500 keeps the token endpoint's plain-string form; elsewhere the envelope (code.internal).
        if (onToken) return send(res, 500, { error: 'internal_error' });
        return sendError(res, new ApiError(500, 'internal_error', 'Internal error.'));
      }
    })();
  });
  // A request too malformed to parse still gets a JSON answer (conv.response-body).
  server.on('clientError', (e: NodeJS.ErrnoException, socket) => {
    if (e.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const error = {
      code: 'validation_failed',
      message: 'Malformed HTTP request.',
      param: 'request',
      doc_url: `${docsUrl()}/errors/#validation_failed`,
      details: [{ field: 'request', constraints: { http: 'the request must be well-formed HTTP/1.1' } }],
    };
    const body = JSON.stringify({ error });
    socket.end(
      `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  st.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: st.baseUrl,
    async close() {
      clearInterval(pump);
      for (const t of timers) clearTimeout(t);
      queue.clear();
      for (const r of inFlight) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

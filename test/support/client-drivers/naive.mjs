// A naive API client and its driver, as a command: plain fetch, a new token for every call,
// no Idempotency-Key, no retry of any kind, no webhook verification. Otherwise sane: it
// reads errors by code and decides fulfilment by reading the session back.
import { createInterface } from 'node:readline';

const base = process.env.PAYMENT_BASE_URL;

async function token() {
  const response = await fetch(`${base}/api/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      clientId: process.env.PAYMENT_CLIENT_ID,
      clientSecret: process.env.PAYMENT_CLIENT_SECRET,
    }),
  });
  const body = await response.json();
  if (response.status !== 200) throw { code: null, status: response.status, retryable: response.status >= 500 };
  return body.accessToken;
}

async function call(method, path, json) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${await token()}`, ...(json ? { 'content-type': 'application/json' } : {}) },
    body: json ? JSON.stringify(json) : undefined,
  });
  const body = await response.json().catch(() => null);
  if (response.status !== 200)
    throw { code: body?.error?.code ?? null, status: response.status, retryable: response.status >= 500 };
  return body;
}

const operations = {
  token: async () => ({ accessToken: await token() }),
  createSession: (o) => call('POST', '/api/checkout-sessions', o.body),
  readSession: (o) => call('GET', `/api/checkout-sessions/${o.sessionId}`),
  confirmPayment: async (o) => {
    const session = await call('GET', `/api/checkout-sessions/${o.sessionId}`);
    return { paid: session.status === 'completed', status: session.status };
  },
  confirmRedirect: async (o) => {
    const id = new URL(o.url).searchParams.get('checkoutSessionId');
    return { paid: (await call('GET', `/api/checkout-sessions/${id}`)).status === 'completed' };
  },
  createLink: (o) => call('POST', '/api/payment-links', o.body),
  readLink: (o) => call('GET', `/api/payment-links/${o.linkId}`),
};

for await (const line of createInterface({ input: process.stdin })) {
  const operation = JSON.parse(line);
  const run = operations[operation.op];
  let outcome;
  if (!run) outcome = { unsupported: true };
  else {
    try {
      outcome = { ok: true, value: await run(operation) };
    } catch (error) {
      outcome = {
        ok: false,
        error: 'status' in error ? error : { code: null, status: null, retryable: true, message: String(error) },
      };
    }
  }
  process.stdout.write(`${JSON.stringify({ id: operation.id, ...outcome })}\n`);
}

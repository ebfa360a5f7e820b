/**
 * Talking to the payment server outside the measured runs: an organisation through the
 * sandbox API, bearer tokens for its test key, and the checkout session the GET target
 * reads. A failed answer throws, so a run stops before measuring a server it
 * could not set up.
 */
import { sandboxAdapter } from '@payment-service/conformance';

/** The body of every checkout session the benchmark creates (the provisioned one and each POST). */
export const SESSION_BODY = {
  type: 'single',
  amount: { total: 25.5 },
  creditorReference: { reference: 'BENCH-1' },
  redirectUrl: 'https://shop.example.com/done',
  checkoutMethod: 'both',
};

async function call<T>(
  base: string,
  method: string,
  pathname: string,
  init: { token?: string; json?: unknown; form?: Record<string, string> },
): Promise<T> {
  const headers: Record<string, string> = {};
  let body: string | undefined;
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(init.json);
  }
  if (init.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(init.form).toString();
  }
  const res = await fetch(`${base}${pathname}`, { method, headers, body });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${pathname} answered ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

interface Provisioned {
  orgId: string;
  clientId: string;
  clientSecret: string;
  sessionId: string;
}

export async function provision(base: string, sandboxToken: string): Promise<Provisioned> {
  const org = await sandboxAdapter({ baseUrl: base, token: sandboxToken }).createOrganisation!({
    settlementCurrency: 'NZD',
    cardEnabled: true,
    openBankingApproved: true,
    settlementAccount: true,
  });
  const { clientId, clientSecret } = org.apiKeys.test;
  const token = await accessToken(base, clientId, clientSecret);
  const session = await call<{ id: string }>(base, 'POST', '/api/checkout-sessions', { token, json: SESSION_BODY });
  return { orgId: org.id, clientId, clientSecret, sessionId: session.id };
}

export async function accessToken(base: string, clientId: string, clientSecret: string): Promise<string> {
  const answer = await call<{ accessToken: string }>(base, 'POST', '/api/token', { form: { clientId, clientSecret } });
  return answer.accessToken;
}

/**
 * The reference server's sandbox API, called the way a team's own adapter would call its
 * test controls: the test adapters below are built on it, and are not the suite's
 * built-in sandbox adapter.
 */
import type { CreatedOrganisation, Credentials, Delivery, OrganisationSettings } from '@payment-service/conformance';

export function sandboxCalls(baseUrl: string) {
  const token = process.env.ADAPTER_SANDBOX_TOKEN;
  if (!token) throw new Error('ADAPTER_SANDBOX_TOKEN is not set');
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }
  const enc = encodeURIComponent;
  return {
    createOrganisation: (settings: OrganisationSettings) =>
      call<CreatedOrganisation>('POST', '/sandbox/organisations', { name: 'adapter test', ...settings }),
    createApiKey: (orgId: string, mode: 'test' | 'live') =>
      call<Credentials>('POST', `/sandbox/organisations/${enc(orgId)}/api-keys`, { mode }),
    deleteApiKey: async (clientId: string) => {
      await call('DELETE', `/sandbox/api-keys/${enc(clientId)}`);
    },
    rotateWebhookSecret: async (orgId: string) =>
      (await call<{ webhookSigningSecret: string }>('POST', `/sandbox/organisations/${enc(orgId)}/webhook-secret`))
        .webhookSigningSecret,
    advanceClock: async (orgId: string, seconds: number) => {
      await call('POST', `/sandbox/organisations/${enc(orgId)}/clock`, { advanceSeconds: seconds });
    },
    webhookDeliveries: async (query: { transactionId?: string; checkoutSessionId?: string }) => {
      const search = new URLSearchParams(query as Record<string, string>).toString();
      return (await call<{ deliveries: Delivery[] }>('GET', `/sandbox/webhook-deliveries?${search}`)).deliveries;
    },
    injectFault: async (kind: string, orgId: string, times?: number) => {
      await call('POST', '/sandbox/faults', { kind, orgId, ...(times === undefined ? {} : { times }) });
    },
  };
}

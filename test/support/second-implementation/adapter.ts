/**
 * Target adapter for the second implementation (./server.ts), written from
 * conformance/README.md ("Checking your implementation"): every capability, each one an
 * HTTP call to the implementation's own test controls under /__control/, authorised by
 * the `Control-Token` header (its value from SECOND_IMPL_CONTROL_TOKEN).
 */
import type { AdapterFactory, Credentials, Delivery, TargetAdapter } from '@payment-service/conformance';

const createAdapter: AdapterFactory = ({ baseUrl }) => {
  const controlToken = process.env.SECOND_IMPL_CONTROL_TOKEN;
  if (!controlToken) throw new Error('SECOND_IMPL_CONTROL_TOKEN is not set: the test controls cannot be reached');

  /** One control call; anything but 200 throws, which the suite reports as a setup error. */
  async function control<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
    const res = await fetch(new URL(`/__control${path}`, baseUrl), {
      method,
      headers: {
        'control-token': controlToken!,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${method} /__control${path}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }

  const org = (id: string) => `/organisations/${encodeURIComponent(id)}`;

  const adapter: TargetAdapter = {
    capabilities: [
      'createOrganisation',
      'createApiKey',
      'deleteApiKey',
      'rotateWebhookSecret',
      'advanceClock',
      'attempt',
      'webhookDeliveries',
      'injectFault',
    ],
    createOrganisation: (settings) => control('POST', '/organisations', settings),
    createApiKey: (orgId, mode) => control<Credentials>('POST', `${org(orgId)}/api-keys`, { mode }),
    deleteApiKey: async (clientId) => {
      await control('DELETE', `/api-keys/${encodeURIComponent(clientId)}`);
    },
    rotateWebhookSecret: async (orgId) =>
      (await control<{ webhookSigningSecret: string }>('POST', `${org(orgId)}/webhook-secret`)).webhookSigningSecret,
    advanceClock: async (orgId, seconds) => {
      await control('POST', `${org(orgId)}/clock`, { seconds });
    },
    attempt: (target, rail, outcome) => control('POST', '/attempts', { target, rail, outcome }),
    webhookDeliveries: async (query) => {
      const params = new URLSearchParams();
      if (query.transactionId) params.set('transactionId', query.transactionId);
      if (query.checkoutSessionId) params.set('checkoutSessionId', query.checkoutSessionId);
      return (await control<{ deliveries: Delivery[] }>('GET', `/webhook-deliveries?${params}`)).deliveries;
    },
    injectFault: async (kind, orgId, times) => {
      await control('POST', `${org(orgId)}/faults`, { kind, ...(times === undefined ? {} : { times }) });
    },
  };
  return adapter;
};

export default createAdapter;

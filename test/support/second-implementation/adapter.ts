/**
 * Target adapter for the second implementation (./server.ts), written from
 * conformance/README.md ("Checking your implementation"): every capability, each one an
 * HTTP call to the implementation's own test controls under /__control/, authorised by
 * the `Control-Token` header (its value from SECOND_IMPL_CONTROL_TOKEN), but payment links
 * and legacy transactions: those the merchant makes and reads through the public API, in
 * this implementation's own request and response shapes.
 */
import type { AdapterFactory, Credentials, Delivery, Merchant, TargetAdapter } from '@payment-service/conformance';

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

  /** A request of the merchant to the public API, with the token the suite got for it. */
  async function asMerchant<T>(merchant: Merchant, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const res = await fetch(new URL(path, baseUrl), {
      method,
      headers: {
        authorization: `Bearer ${merchant.accessToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
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
      'paymentLinks',
      'legacyTransactions',
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
    // Its links take { amountDue, label, webhookUrl? } and read back with their own fields;
    // status and testMode are named as the document names them.
    createPaymentLink: async (merchant, link) => {
      const made = await asMerchant<{ id: string }>(merchant, 'POST', '/api/payment-links', {
        amountDue: 15,
        label: 'conformance link',
        ...link,
      });
      return { id: made.id };
    },
    readPaymentLink: async (merchant, id) => {
      const read = await asMerchant<{ status: string; testMode: boolean }>(
        merchant,
        'GET',
        `/api/payment-links/${encodeURIComponent(id)}`,
      );
      return { status: read.status, testMode: read.testMode };
    },
    // Its legacy transactions take { total, reference, notificationUrl?, foreignTransactionId? }.
    createLegacyTransaction: async (merchant, transaction) => {
      const made = await asMerchant<{ transactionId: string }>(merchant, 'POST', '/api/transaction', {
        total: 42,
        reference: 'LEGACY',
        notificationUrl: transaction.webhookUrl,
        foreignTransactionId: transaction.foreignTransactionId,
      });
      return { transactionId: made.transactionId };
    },
  };
  return adapter;
};

export default createAdapter;

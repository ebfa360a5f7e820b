/**
 * An adapter for a target whose payment links and legacy transactions take requests of
 * its own (test/support/own-shapes-proxy.ts): the controls through the sandbox API, and
 * the merchant's requests in the target's shapes. ADAPTER_BROKEN=links makes its payments
 * of links do nothing and its legacy creates throw, as a broken adapter would.
 */
import type { AdapterFactory, Merchant, TargetAdapter } from '@payment-service/conformance';
import { OWN_STATE } from '../own-shapes-proxy.ts';
import { sandboxCalls } from './sandbox-calls.ts';

const createAdapter: AdapterFactory = ({ baseUrl }) => {
  const broken = process.env.ADAPTER_BROKEN === 'links';
  const sandbox = sandboxCalls(baseUrl);

  async function asMerchant(merchant: Merchant, method: 'GET' | 'POST', path: string, body?: unknown) {
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
    return JSON.parse(text) as Record<string, unknown>;
  }

  /** The target's words for a link's state, back to the document's. */
  const documentWord = (state: unknown) =>
    Object.entries(OWN_STATE).find(([, own]) => own === state)?.[0] ?? String(state);

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
    ...sandbox,
    async attempt(target, rail, outcome) {
      if (broken && target.kind === 'payment-link') return { redirectTo: null };
      return sandbox.attempt(target, rail, outcome);
    },
    async createPaymentLink(merchant, link) {
      const made = await asMerchant(merchant, 'POST', '/api/payment-links', { amountDue: 15, ...link });
      return { id: made.id as string };
    },
    async readPaymentLink(merchant, id) {
      const read = await asMerchant(merchant, 'GET', `/api/payment-links/${encodeURIComponent(id)}`);
      return { status: documentWord(read.state), testMode: read.testMode as boolean };
    },
    async createLegacyTransaction(merchant, transaction) {
      if (broken) throw new Error('the legacy transaction service is down');
      const made = await asMerchant(merchant, 'POST', '/api/transaction', {
        total: 42,
        notificationUrl: transaction.webhookUrl,
        foreignTransactionId: transaction.foreignTransactionId,
      });
      return { transactionId: made.transactionId as string };
    },
  };
  return adapter;
};

export default createAdapter;

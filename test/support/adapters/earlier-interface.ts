/**
 * An adapter written for the interface before paymentLinks and legacyTransactions: its
 * eight capabilities through the sandbox API. Payment links and legacy transactions reach
 * the target only through the requests the suite modelled.
 */
import type { AdapterFactory } from '@payment-service/conformance';
import { sandboxCalls } from './sandbox-calls.ts';

const createAdapter: AdapterFactory = ({ baseUrl }) => ({
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
  ...sandboxCalls(baseUrl),
});

export default createAdapter;

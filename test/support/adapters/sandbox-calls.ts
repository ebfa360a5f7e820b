/**
 * The reference server's sandbox API for the test adapters below, through the suite's
 * typed sandbox client as a team's own adapter may use it: each adapter takes the calls
 * it offers and does the rest its own way (the browser adapter pays on the hosted page).
 */
import { sandboxAdapter } from '@payment-service/conformance';

export function sandboxCalls(baseUrl: string) {
  const token = process.env.ADAPTER_SANDBOX_TOKEN;
  if (!token) throw new Error('ADAPTER_SANDBOX_TOKEN is not set');
  const calls = sandboxAdapter({ baseUrl, token });
  return {
    createOrganisation: calls.createOrganisation!,
    createApiKey: calls.createApiKey!,
    deleteApiKey: calls.deleteApiKey!,
    rotateWebhookSecret: calls.rotateWebhookSecret!,
    advanceClock: calls.advanceClock!,
    attempt: calls.attempt!,
    webhookDeliveries: calls.webhookDeliveries!,
    injectFault: calls.injectFault!,
  };
}

/**
 * The built-in adapter for a target with the sandbox API (`--sandbox-token`), the
 * interface the reference server offers to tests: every capability, each one request of
 * the typed sandbox client, but payment links and legacy transactions, which the sandbox
 * API does not make: those are the merchant's own requests to the public API, in the
 * shapes we modelled (the sandbox API is ours, and so is that modelling).
 */
import type { Capability, Merchant, TargetAdapter } from '../adapter.ts';
import { CAPABILITIES } from '../adapter.ts';
import { legacyTransactionBody, paymentLinkBody } from '../context/api.ts';
import { at, isObject } from '../json.ts';
import { createSandboxClient, sandboxData, type SandboxClientOptions } from '../sandbox-client.ts';

export type SandboxOptions = SandboxClientOptions;

/** A request of the merchant to the public API; its JSON answer, or an Error saying what it answered instead. */
async function asMerchant(options: SandboxOptions, merchant: Merchant, method: string, path: string, body?: unknown) {
  const res = await fetch(`${options.baseUrl.replace(/\/+$/, '')}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${merchant.accessToken}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(options.timeoutMs ?? 20_000),
  });
  const json: unknown = await res.json().catch(() => undefined);
  if (res.status === 200 && isObject(json)) return json;
  const code = at(json, 'error', 'code');
  throw new Error(`${method} ${path} answered ${res.status}${typeof code === 'string' ? ` ${code}` : ''}`);
}

export function sandboxAdapter(options: SandboxOptions): TargetAdapter {
  const sandbox = createSandboxClient(options);
  const org = (orgId: string) => ({ params: { path: { orgId } } });
  return {
    capabilities: [...CAPABILITIES] satisfies Capability[],
    async createOrganisation(settings) {
      return sandboxData(
        'POST /sandbox/organisations',
        await sandbox.POST('/sandbox/organisations', { body: { name: 'payment-conformance', ...settings } }),
      );
    },
    async createApiKey(orgId, mode) {
      return sandboxData(
        'POST /sandbox/organisations/{orgId}/api-keys',
        await sandbox.POST('/sandbox/organisations/{orgId}/api-keys', { ...org(orgId), body: { mode } }),
      );
    },
    async deleteApiKey(clientId) {
      sandboxData(
        'DELETE /sandbox/api-keys/{clientId}',
        await sandbox.DELETE('/sandbox/api-keys/{clientId}', { params: { path: { clientId } } }),
      );
    },
    async rotateWebhookSecret(orgId) {
      return sandboxData(
        'POST /sandbox/organisations/{orgId}/webhook-secret',
        await sandbox.POST('/sandbox/organisations/{orgId}/webhook-secret', org(orgId)),
      ).webhookSigningSecret;
    },
    async advanceClock(orgId, seconds) {
      sandboxData(
        'POST /sandbox/organisations/{orgId}/clock',
        await sandbox.POST('/sandbox/organisations/{orgId}/clock', {
          ...org(orgId),
          body: { advanceSeconds: seconds },
        }),
      );
    },
    async attempt(target, rail, outcome) {
      const body = { rail, outcome };
      const done =
        target.kind === 'checkout-session'
          ? await sandbox.POST('/sandbox/checkout-sessions/{id}/attempts', {
              params: { path: { id: target.id } },
              body,
            })
          : target.kind === 'payment-link'
            ? await sandbox.POST('/sandbox/payment-links/{id}/attempts', { params: { path: { id: target.id } }, body })
            : await sandbox.POST('/sandbox/transactions/{transactionId}/attempts', {
                params: { path: { transactionId: target.id } },
                body,
              });
      // The three answers differ in what they read back; each carries where the payer goes.
      const answer = done as { data?: { redirectTo: string | null }; error?: unknown; response: Response };
      return { redirectTo: sandboxData(`attempt on ${target.kind} ${target.id}`, answer).redirectTo ?? null };
    },
    async webhookDeliveries(query) {
      return sandboxData(
        'GET /sandbox/webhook-deliveries',
        await sandbox.GET('/sandbox/webhook-deliveries', { params: { query } }),
      ).deliveries;
    },
    async injectFault(kind, orgId, times) {
      sandboxData(
        'POST /sandbox/faults',
        // One arming when `times` is left out, as the sandbox API's own default says.
        await sandbox.POST('/sandbox/faults', { body: { kind, orgId, times: times ?? 1 } }),
      );
    },
    async createPaymentLink(merchant, link) {
      const made = await asMerchant(options, merchant, 'POST', '/api/payment-links', paymentLinkBody({ ...link }));
      // The suite holds the answer to { id }: a create that gave none is reported as such.
      return { id: made.id as string };
    },
    async readPaymentLink(merchant, id) {
      const read = await asMerchant(options, merchant, 'GET', `/api/payment-links/${encodeURIComponent(id)}`);
      // The modelled read already speaks the document's words.
      return {
        ...(typeof read.status === 'string' ? { status: read.status } : {}),
        ...(typeof read.testMode === 'boolean' ? { testMode: read.testMode } : {}),
      };
    },
    async createLegacyTransaction(merchant, transaction) {
      const made = await asMerchant(
        options,
        merchant,
        'POST',
        '/api/transaction',
        legacyTransactionBody({ ...transaction }),
      );
      return { transactionId: made.transactionId as string };
    },
  };
}

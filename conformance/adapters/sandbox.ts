/**
 * The built-in adapter for a target with the sandbox API (`--sandbox-token`), the
 * interface the reference server offers to tests: every capability, each one request of
 * the typed sandbox client, but payment links and legacy transactions, which the sandbox
 * API does not make. For those the suite sends the merchant's own requests in the shapes
 * we modelled, as it does for any adapter without them: a target that refuses those
 * shapes leaves their checks skipped, naming the capability an adapter module would
 * offer, rather than blaming this adapter.
 */
import type { Capability, TargetAdapter } from '../core/adapter.ts';
import { CAPABILITIES, MODELLED_STAND_INS } from '../core/adapter.ts';
import { createSandboxClient, sandboxData, type SandboxClientOptions } from './sandbox-client.ts';

export type SandboxOptions = SandboxClientOptions;

export function sandboxAdapter(options: SandboxOptions): TargetAdapter {
  const sandbox = createSandboxClient(options);
  const org = (orgId: string) => ({ params: { path: { orgId } } });
  return {
    capabilities: CAPABILITIES.filter((c) => !MODELLED_STAND_INS.includes(c)) satisfies Capability[],
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
      // The sandbox's answer, the organisation's time after the move, is the target's own word on it.
      return sandboxData(
        'POST /sandbox/organisations/{orgId}/clock',
        await sandbox.POST('/sandbox/organisations/{orgId}/clock', {
          ...org(orgId),
          body: { advanceSeconds: seconds },
        }),
      );
    },
    async attempt(target, rail, outcome) {
      const body = { rail, outcome };
      const posted =
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
      const answer = posted as {
        data?: { redirectTo: string | null; session?: unknown; paymentLink?: unknown };
        error?: unknown;
        response: Response;
      };
      const done = sandboxData(`attempt on ${target.kind} ${target.id}`, answer);
      // The sandbox's own answer of the payment after the attempt: the suite judges later reads against it.
      return {
        redirectTo: done.redirectTo ?? null,
        ...(done.session !== undefined ? { session: done.session } : {}),
        ...(done.paymentLink !== undefined ? { paymentLink: done.paymentLink } : {}),
      };
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
  };
}

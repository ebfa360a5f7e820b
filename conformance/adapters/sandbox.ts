/**
 * The built-in adapter for a target with the sandbox API (`--sandbox-token`), the
 * interface the reference server offers to tests: every capability, each one request.
 */
import type { Capability, Credentials, CreatedOrganisation, Delivery, TargetAdapter } from '../adapter.ts';
import { CAPABILITIES } from '../adapter.ts';
import { at, text } from '../json.ts';

export interface SandboxOptions {
  baseUrl: string;
  token: string;
  /** Give up on a call after this long (default 20 s). */
  timeoutMs?: number;
}

export function sandboxAdapter(options: SandboxOptions): TargetAdapter {
  const base = options.baseUrl.replace(/\/+$/, '');

  async function call(method: string, path: string, body?: unknown): Promise<unknown> {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${options.token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(options.timeoutMs ?? 20_000),
    });
    const raw = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      json = undefined;
    }
    if (response.status !== 200) {
      const code = text(json, 'error', 'code');
      const why = text(json, 'error', 'message');
      throw new Error(
        `${method} ${path} answered ${response.status}${code ? ` ${code}` : ''}${why ? `: ${why}` : ` ${raw.slice(0, 200)}`}`,
      );
    }
    return json;
  }

  const enc = encodeURIComponent;
  return {
    capabilities: [...CAPABILITIES] satisfies Capability[],
    async createOrganisation(settings) {
      return (await call('POST', '/sandbox/organisations', {
        name: 'payment-conformance',
        ...settings,
      })) as CreatedOrganisation;
    },
    async createApiKey(orgId, mode) {
      return (await call('POST', `/sandbox/organisations/${enc(orgId)}/api-keys`, { mode })) as Credentials;
    },
    async deleteApiKey(clientId) {
      await call('DELETE', `/sandbox/api-keys/${enc(clientId)}`);
    },
    async rotateWebhookSecret(orgId) {
      return String(
        at(await call('POST', `/sandbox/organisations/${enc(orgId)}/webhook-secret`), 'webhookSigningSecret'),
      );
    },
    async advanceClock(orgId, seconds) {
      await call('POST', `/sandbox/organisations/${enc(orgId)}/clock`, { advanceSeconds: seconds });
    },
    async attempt(target, rail, outcome) {
      const path =
        target.kind === 'checkout-session'
          ? `/sandbox/checkout-sessions/${enc(target.id)}/attempts`
          : target.kind === 'payment-link'
            ? `/sandbox/payment-links/${enc(target.id)}/attempts`
            : `/sandbox/transactions/${enc(target.id)}/attempts`;
      const done = await call('POST', path, { rail, outcome });
      const redirectTo = at(done, 'redirectTo');
      return { redirectTo: typeof redirectTo === 'string' ? redirectTo : null };
    },
    async webhookDeliveries(query) {
      const [name, value] = Object.entries(query)[0] ?? ['transactionId', ''];
      const found = at(await call('GET', `/sandbox/webhook-deliveries?${name}=${enc(String(value))}`), 'deliveries');
      return (Array.isArray(found) ? found : []) as Delivery[];
    },
    async injectFault(kind, orgId, times) {
      await call('POST', '/sandbox/faults', { kind, orgId, ...(times !== undefined ? { times } : {}) });
    },
  };
}

/** Provisioning organisations and API keys (the sandbox API and the demo organisation). */
import { hashSecret } from '../auth/secrets.ts';
import type { Currency, Mode, Organisation, Store } from '../store/types.ts';
import { newClientId, newClientSecret, newOrganisationId, newWebhookSecret } from './ids.ts';

export interface OrganisationSettings {
  name?: string;
  settlementCurrency: Currency;
  cardEnabled: boolean;
  openBankingApproved: boolean;
  settlementAccount: boolean;
}

export interface ApiKeyPair {
  clientId: string;
  clientSecret: string;
}

export async function createApiKey(store: Store, orgId: string, mode: Mode): Promise<ApiKeyPair> {
  const clientId = newClientId(mode);
  const clientSecret = newClientSecret();
  await store.createApiKey({ clientId, orgId, mode, secretHash: await hashSecret(clientSecret) });
  return { clientId, clientSecret };
}

export async function createOrganisation(store: Store, settings: OrganisationSettings) {
  const org: Organisation = {
    id: newOrganisationId(),
    name: settings.name ?? 'Sandbox organisation',
    settlementCurrency: settings.settlementCurrency,
    cardEnabled: settings.cardEnabled,
    openBankingApproved: settings.openBankingApproved,
    settlementAccount: settings.settlementAccount,
    webhookSecret: newWebhookSecret(),
    clockOffsetMs: 0,
  };
  await store.createOrganisation(org);
  // One after the other: each scrypt hash holds 16 MB while it runs.
  const test = await createApiKey(store, org.id, 'test');
  const live = await createApiKey(store, org.id, 'live');
  return { id: org.id, webhookSigningSecret: org.webhookSecret, apiKeys: { test, live } };
}

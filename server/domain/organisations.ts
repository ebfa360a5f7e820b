/** Provisioning organisations and API keys (the sandbox API and the demo organisation). */
import type { components } from '@payment-service/contract/sandbox';
import type { ApiKey, Mode, Organisation, Store } from '../store/types.ts';
import { newClientId, newClientSecret, newOrganisationId, newWebhookSecret } from './ids.ts';

export type OrganisationSettings = components['schemas']['SandboxOrganisationCreateRequest'];

/** How API key secrets are kept: hashed for the store, and remembered as accepted (auth/credentials.ts). */
export interface KeySecrets {
  hash(secret: string): Promise<string>;
  /** The stored form of a secret nobody holds: no secret verifies against it. */
  unmatchable(): string;
  remember(apiKey: ApiKey, secret: string): void;
}

export interface ApiKeyPair {
  clientId: string;
  clientSecret: string;
}

export async function createApiKey(store: Store, secrets: KeySecrets, orgId: string, mode: Mode): Promise<ApiKeyPair> {
  const clientId = newClientId(mode);
  const clientSecret = newClientSecret();
  const apiKey: ApiKey = { clientId, orgId, mode, secretHash: await secrets.hash(clientSecret) };
  await store.createApiKey(apiKey);
  secrets.remember(apiKey, clientSecret);
  return { clientId, clientSecret };
}

async function newOrganisation(store: Store, settings: OrganisationSettings): Promise<Organisation> {
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
  return org;
}

export async function createOrganisation(store: Store, secrets: KeySecrets, settings: OrganisationSettings) {
  const org = await newOrganisation(store, settings);
  // One after the other: each scrypt hash holds 16 MB while it runs.
  const test = await createApiKey(store, secrets, org.id, 'test');
  const live = await createApiKey(store, secrets, org.id, 'live');
  return { id: org.id, webhookSigningSecret: org.webhookSecret, apiKeys: { test, live } };
}

/** The demo organisation of `payment-server`, and whether this start created it. */
export interface DemoOrganisation {
  id: string;
  webhookSigningSecret: string;
  apiKeys: { test: ApiKeyPair };
  created: boolean;
}

const DEMO_SETTING = 'demo_organisation';

/**
 * The demo organisation, kept in the database so that every start can print its test
 * credentials (the store keeps API secrets only hashed, so they are remembered here, and
 * only the demo's test key). Made on the first start; if its test key was deleted through
 * the sandbox API, a new one is made. The webhook secret is read afresh: it may have been
 * rotated.
 */
export async function demoOrganisation(store: Store, secrets: KeySecrets): Promise<DemoOrganisation> {
  const kept = await store.getSetting(DEMO_SETTING);
  if (kept) {
    const { id, test } = JSON.parse(kept) as { id: string; test: ApiKeyPair };
    const org = await store.getOrganisation(id);
    if (org) {
      let key = test;
      const stored = await store.getApiKey(test.clientId);
      if (stored) secrets.remember(stored, test.clientSecret);
      else {
        key = await createApiKey(store, secrets, id, 'test');
        await store.putSetting(DEMO_SETTING, JSON.stringify({ id, test: key }));
      }
      return { id, webhookSigningSecret: org.webhookSecret, apiKeys: { test: key }, created: false };
    }
  }
  const org = await newOrganisation(store, {
    name: 'Demo organisation',
    settlementCurrency: 'NZD',
    cardEnabled: true,
    openBankingApproved: true,
    settlementAccount: true,
  });
  const test = await createApiKey(store, secrets, org.id, 'test');
  // Its live key's secret would be printed and kept nowhere, so no one could ever use it:
  // the key is stored with a hash no secret matches, sparing a start a scrypt hash.
  await store.createApiKey({
    clientId: newClientId('live'),
    orgId: org.id,
    mode: 'live',
    secretHash: secrets.unmatchable(),
  });
  const made = JSON.stringify({ id: org.id, test });
  // Servers starting together on one database: the first to keep its demo organisation
  // decides, and the others print that one.
  if ((await store.ensureSetting(DEMO_SETTING, made)) !== made) return demoOrganisation(store, secrets);
  return { id: org.id, webhookSigningSecret: org.webhookSecret, apiKeys: { test }, created: true };
}

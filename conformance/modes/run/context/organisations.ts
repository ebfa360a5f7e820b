/**
 * The organisations a run works with: made by the adapter (createOrganisation), or given
 * as --config profiles for a target whose organisations cannot be made from outside.
 */
import type { Credentials, OrganisationSettings } from '../../../core/adapter.ts';

export const DEFAULT_SETTINGS: OrganisationSettings = {
  settlementCurrency: 'NZD',
  cardEnabled: true,
  openBankingApproved: true,
  settlementAccount: true,
};

export const DEFAULTS_TEXT = 'settlementCurrency NZD, cardEnabled, openBankingApproved, settlementAccount';

/** One organisation profile of --config. */
export interface Profile extends Partial<OrganisationSettings> {
  name?: string;
  clientId: string;
  clientSecret: string;
  liveClientId?: string;
  liveClientSecret?: string;
  webhookSigningSecret?: string;
}

export type Mode = 'test' | 'live';

export interface Org {
  /** The adapter's id of the organisation; undefined for a --config profile. */
  id: string | undefined;
  webhookSigningSecret: string | undefined;
  keys: { test: Credentials; live: Credentials | undefined };
  settings: Partial<OrganisationSettings>;
  /** Bearer tokens issued for its keys, reused until its clock moves. */
  tokens: Map<Mode, string>;
  /** How far the suite has moved its clock (advanceClock), in seconds. */
  clockMovedS: number;
  /** Set when the token endpoint answered its adapter-made test key 401: why the key counts as refused. */
  refused?: string;
}

/** Does a profile fit these settings? Declared settings must match; an undeclared one is taken to fit the defaults only. */
export function fits(profile: Profile, wanted: Partial<OrganisationSettings>): boolean {
  for (const key of Object.keys(DEFAULT_SETTINGS) as Array<keyof OrganisationSettings>) {
    const declared = profile[key];
    if (key in wanted) {
      if (declared !== wanted[key]) return false;
    } else if (declared !== undefined && declared !== DEFAULT_SETTINGS[key]) return false;
  }
  return true;
}

export function profileOrg(profile: Profile): Org {
  return {
    id: undefined,
    webhookSigningSecret: profile.webhookSigningSecret,
    keys: {
      test: { clientId: profile.clientId, clientSecret: profile.clientSecret },
      live:
        profile.liveClientId && profile.liveClientSecret
          ? { clientId: profile.liveClientId, clientSecret: profile.liveClientSecret }
          : undefined,
    },
    settings: profile,
    tokens: new Map(),
    clockMovedS: 0,
  };
}

/** What an organisation with these settings would be described as in a skip reason. */
export function describeSettings(settings: Partial<OrganisationSettings>): string {
  return Object.keys(settings).length === 0
    ? `the default settings (${DEFAULTS_TEXT})`
    : `${JSON.stringify(settings)}, the rest as the defaults`;
}

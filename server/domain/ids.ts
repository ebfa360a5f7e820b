/** Random identifiers and secrets, from the platform's CSPRNG. */
import { randomBytes, randomInt, randomUUID } from 'node:crypto';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const UPPER_ALPHANUMERIC = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

function randomString(alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

export const newSessionId = () => `cs_${randomString(ALPHANUMERIC, 24)}`;
export const newTransactionId = () => randomUUID();
export const newOrganisationId = () => `org_${randomString(ALPHANUMERIC, 20)}`;
export const newClientId = (mode: 'test' | 'live') => `ck_${mode}_${randomString(ALPHANUMERIC, 20)}`;
export const newClientSecret = () => `sk_${randomBytes(24).toString('base64url')}`;
export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64url')}`;
export const newSandboxToken = () => `sbx_${randomBytes(24).toString('base64url')}`;
/** A creditor reference code for a payment created without one: 8 of `[A-Z0-9]`, within the 12-character `[a-zA-Z0-9- ]` rule. */
export const newReferenceCode = () => randomString(UPPER_ALPHANUMERIC, 8);

/**
 * Identifiers and secrets, from the platform's CSPRNG.
 *
 * Transaction ids are UUIDv7 (RFC 9562) and session ids begin with their creation time:
 * both stay unguessable (random bits after the time), and new rows land at the end of
 * their indexes instead of on a random page each, so a create rewrites the same few index
 * pages rather than a new one per index (figures in bench/README.md).
 */
import { randomBytes } from 'node:crypto';
import { customAlphabet, random } from 'nanoid';
import { v7 as uuidv7 } from 'uuid';

/** In ASCII order, so that time prefixes sort as the times do. */
const ALPHANUMERIC = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const UPPER_ALPHANUMERIC = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

const random16 = customAlphabet(ALPHANUMERIC, 16);
const random20 = customAlphabet(ALPHANUMERIC, 20);

/** Milliseconds since 1970 in 8 characters of ALPHANUMERIC (enough until the year 8888). */
function timePrefix(ms = Date.now()): string {
  let out = '';
  for (let i = 0; i < 8; i++, ms = Math.floor(ms / 62)) out = ALPHANUMERIC[ms % 62]! + out;
  return out;
}

/** The ids of payments: one per server, nothing shared at module level. */
export class Ids {
  transactionId(): string {
    // uuid asks the CSPRNG for 16 bytes on every id, and each such call costs as much as
    // the rest of a create's id work together; nanoid's `random` hands out the same bytes
    // from a pool it refills in one call. The time and version bits are uuid's as ever.
    return uuidv7({ random: random(16) });
  }

  sessionId(): string {
    return `cs_${timePrefix()}${random16()}`;
  }

  /** A creditor reference code for a payment created without one: 8 of `[A-Z0-9]`, within the 12-character `[a-zA-Z0-9- ]` rule. */
  referenceCode(): string {
    return referenceCode();
  }
}

const referenceCode = customAlphabet(UPPER_ALPHANUMERIC, 8);

export const newOrganisationId = () => `org_${random20()}`;
export const newClientId = (mode: 'test' | 'live') => `ck_${mode}_${random20()}`;
export const newClientSecret = () => `sk_${randomBytes(24).toString('base64url')}`;
export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64url')}`;
export const newSandboxToken = () => `sbx_${randomBytes(24).toString('base64url')}`;

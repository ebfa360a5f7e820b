/**
 * The signature header as receivers read it (Events: Signature header; Receiver
 * verification steps): `t=<unix_seconds>,v1=<hex_digest>`, parts split on commas and each
 * on its first `=`, taken by name; the digest an HMAC-SHA256 over `<t>.<raw body>`.
 */
import { verifyWebhook, WebhookVerificationError } from '@payment-service/client/webhooks';

/** A delivery as these predicates read it: its raw body, its headers, when it arrived (ms). */
export interface SignedDelivery {
  raw: Buffer;
  headers: Record<string, string | string[] | undefined>;
  receivedAt: number;
}

const headerOf = (d: SignedDelivery): string | undefined => {
  const header = d.headers['service-signature'];
  return header === undefined ? undefined : String(header);
};

/** Receivers reject a signature whose t is older than five minutes (Receiver verification step 4). */
export const TOLERANCE_S = 300;

/** Further than this from the time of arrival, t cannot be unix seconds (a day either way). */
const PLAUSIBLE_T_S = 86_400;

/** The header's t, read by name as the receiver steps say; undefined without one in whole seconds. */
export function signatureT(d: SignedDelivery): number | undefined {
  for (const part of (headerOf(d) ?? '').split(',')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at) === 't') {
      const value = part.slice(at + 1);
      return /^\d+$/.test(value) ? Number(value) : undefined;
    }
  }
  return undefined;
}

/**
 * How the header fails to read as `t=<unix_seconds>,v1=<hex_digest>` by the receiver steps,
 * if it does. Other parts may stand beside them, in any order, named as their versions are;
 * but a receiver that follows the steps finds no `t` in ` t=...`, so padding, or a `t` that
 * is not whole seconds, breaks every delivery.
 */
export function headerFormatProblem(header: string): string | undefined {
  const parts = header.split(',').map((part) => [part.slice(0, part.indexOf('=')), part] as const);
  const value = (name: string) =>
    parts.filter(([n, part]) => n === name && part.includes('=')).map(([, part]) => part.slice(name.length + 1));
  const [ts, v1s] = [value('t'), value('v1')];
  if (ts.length === 1 && /^\d+$/.test(ts[0]!) && v1s.length > 0 && v1s.every((v1) => /^[0-9a-fA-F]+$/.test(v1)))
    return undefined;
  return `the Service-Signature header must be t=<unix_seconds>,v1=<hex_digest>, read by name after splitting on commas and each part on its first "=": a receiver that does so ${ts.length !== 1 ? 'finds no single t' : v1s.length === 0 ? 'finds no v1' : 'finds a t or v1 that is not whole seconds or hex'} in ${JSON.stringify(header)}.`;
}

/**
 * What keeps t from reading as unix seconds at arrival, if anything: it must be near the
 * real clock or the organisation's clock (moved by `clockMovedS`). A t more than a day from
 * both (milliseconds, a wrong epoch) is not unix seconds, whatever receivers' tolerance is.
 */
export function unixSecondsProblem(d: SignedDelivery, clockMovedS: number): string | undefined {
  const t = signatureT(d);
  if (t === undefined) return 'The Service-Signature header has no t=<unix_seconds> part.';
  const arrival = d.receivedAt / 1000;
  const off = Math.min(Math.abs(arrival - t), Math.abs(arrival + clockMovedS - t));
  if (off <= PLAUSIBLE_T_S) return undefined;
  return `t=${t} cannot be unix seconds when the delivery arrived (${Math.round(arrival)}): it is ${Math.round(off / 3600)} hours away${t > 1e11 ? ' (milliseconds?)' : ''}.`;
}

/**
 * Why the digest does not verify with the secret over the raw body, if it does not. The
 * verifier's own age limit is widened to ten minutes, counted from the delivery's arrival
 * (a recorded one is judged as it was then): t's age is judged on its own
 * (unixSecondsProblem, and the checks of the sender's clock).
 */
export function digestProblem(d: SignedDelivery, secret: string): string | undefined {
  try {
    verifyWebhook(d.raw, String(headerOf(d)), secret, {
      toleranceSeconds: 600,
      now: Math.floor(d.receivedAt / 1000),
    });
    return undefined;
  } catch (error) {
    return error instanceof WebhookVerificationError ? `${error.name}: ${error.message}` : String(error);
  }
}

export const verifies = (d: SignedDelivery, secret: string): boolean => digestProblem(d, secret) === undefined;

/** How old the delivery's signature timestamp was when it arrived, in seconds (undefined without a t). */
export function signatureAge(d: SignedDelivery): number | undefined {
  const t = signatureT(d);
  return t === undefined ? undefined : Math.round(d.receivedAt / 1000 - t);
}

/** Why the delivery could never be accepted for the age of its t at arrival, if so (Receiver verification step 4). */
export function staleSignatureProblem(d: SignedDelivery): string | undefined {
  const age = signatureAge(d);
  if (age === undefined || age <= TOLERANCE_S) return undefined;
  return `The signature's t was ${age} s old when the delivery arrived; receivers reject t older than ${TOLERANCE_S} s, so this delivery can never be accepted.`;
}

/**
 * One HTTP delivery: POST the exact body bytes, wait at most five seconds for an answer,
 * follow no redirect. The target is checked again here, at connection time, after DNS
 * resolution (it may have changed since creation): live mode refuses loopback, private
 * and link-local addresses; `http://` is only ever allowed to loopback in test mode.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { isLoopbackHost, reachableFor, refuseWebhookUrl } from '../domain/webhook-target.ts';
import type { Mode } from '../store/types.ts';

export const ANSWER_TIMEOUT_MS = 5000;

/**
 * Starts the wait for an answer: `expired` is called once `ms` have passed, unless the
 * returned cancel is called first. The real one is a timer; a test may pass a virtual one
 * that it moves itself, to see the five-second rule to the millisecond without the wait.
 */
export type AnswerClock = (ms: number, expired: () => void) => () => void;

export const realAnswerClock: AnswerClock = (ms, expired) => {
  const timer = setTimeout(expired, ms);
  return () => clearTimeout(timer);
};

export interface SendResult {
  status: number | null;
  error: string | null;
  /** The target itself is not allowed: retrying cannot help. */
  refused?: boolean;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

export type Resolver = (
  hostname: string,
  options: { all: true },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** dns.lookup, refusing addresses this mode may not reach. */
function guardedLookup(mode: Mode, httpOnly: boolean, resolve: Resolver) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback) => {
    resolve(hostname, { all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const allowed = (a: LookupAddress) => (httpOnly ? isLoopbackHost(a.address) : reachableFor(mode, a.address));
      if (addresses.length === 0 || !addresses.every(allowed)) {
        const refusal = Object.assign(new Error(`address of ${hostname} is not allowed for ${mode} mode`), {
          code: 'EADDRNOTALLOWED',
        });
        return callback(refusal, []);
      }
      if (options.all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

export function sendWebhook(
  target: string,
  body: string,
  headers: Record<string, string>,
  mode: Mode,
  options: { timeoutMs?: number; resolver?: Resolver; clock?: AnswerClock } = {},
): Promise<SendResult> {
  const {
    timeoutMs = ANSWER_TIMEOUT_MS,
    resolver = dnsLookup as unknown as Resolver,
    clock = realAnswerClock,
  } = options;
  const refusal = refuseWebhookUrl(target, mode);
  if (refusal) return Promise.resolve({ status: null, error: refusal, refused: true });
  const url = new URL(target);
  const client = url.protocol === 'https:' ? https : http;
  const literal = isIP(url.hostname.replace(/^\[|\]$/g, '')) !== 0;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: SendResult) => {
      if (settled) return;
      settled = true;
      cancelWait();
      request.destroy();
      resolve(result);
    };
    const request = client.request(url, {
      method: 'POST',
      agent: false,
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'payment-service-webhooks/1.0',
        connection: 'close',
      },
      // Literal addresses were checked by refuseWebhookUrl; names are checked as they resolve.
      ...(literal ? {} : { lookup: guardedLookup(mode, url.protocol === 'http:', resolver) as never }),
    });
    const cancelWait = clock(timeoutMs, () =>
      finish({ status: null, error: `no answer within ${timeoutMs / 1000} seconds` }),
    );
    request.on('response', (response) => {
      response.resume();
      finish({ status: response.statusCode ?? null, error: null });
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      finish({
        status: null,
        error: error.code === 'EADDRNOTALLOWED' ? error.message : `${error.code ?? 'error'}: ${error.message}`,
        refused: error.code === 'EADDRNOTALLOWED',
      });
    });
    request.end(body);
  });
}

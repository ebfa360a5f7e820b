/**
 * Runs the conformance suite through mutating proxies: an API proxy between the suite and
 * the reference server, and a hook proxy between the server and the suite's receiver
 * (the suite is told to give the hook proxy's address as webhookUrl).
 */
import { createHmac } from 'node:crypto';
import { runSuite, type CliRun } from './conformance-cli.ts';
import {
  editJson,
  freePort,
  Knowledge,
  startMutatingProxy,
  type Message,
  type Mutation,
  type Reply,
} from './mutating-proxy.ts';
import { SANDBOX_TOKEN } from './server.ts';

export interface Variant {
  name: string;
  api?: Mutation;
  hook?: Mutation;
  /** --only for the run. */
  only?: string;
  /** More arguments for `payment-conformance run`. */
  args?: string[];
}

/**
 * Runs the suite against the variant. `expected` says what the run should find: a mutant
 * ('defect') that never settles a payment is waited for 5 s rather than the suite's 30; a
 * run that must pass ('pass') keeps the suite's own settle timeout, since a legal target
 * settles as it answers and a busy machine may take longer than 5 s to deliver.
 */
export async function runVariant(
  targetUrl: string,
  variant: Variant,
  expected: 'pass' | 'defect' = 'defect',
): Promise<CliRun> {
  const knowledge = new Knowledge();
  const api = await startMutatingProxy(targetUrl, variant.api ?? {}, { knowledge });
  const receiverPort = await freePort();
  const hook = await startMutatingProxy(`http://127.0.0.1:${receiverPort}`, variant.hook ?? {}, { knowledge });
  try {
    return await runSuite([
      '--base-url',
      api.url,
      '--sandbox-token',
      SANDBOX_TOKEN,
      '--receiver-port',
      String(receiverPort),
      '--receiver-public-url',
      hook.url,
      ...(variant.only ? ['--only', variant.only] : []),
      ...(expected === 'pass' || variant.args?.includes('--settle-timeout') ? [] : ['--settle-timeout', '5']),
      ...(variant.args ?? []),
    ]);
  } finally {
    await api.close();
    await hook.close();
  }
}

// ---- small helpers for writing mutations ----

export const pathOf = (m: Message) => m.url.split('?')[0]!;
/**
 * Where a delivery was sent, host and path: the key for a hook-side mutation's state. Each
 * run has a hook proxy on a port of its own, while the suite's hook paths repeat from run to
 * run, so state kept by path alone would carry one run's deliveries into the next.
 */
export const hookAddress = (m: Message) => `${m.headers.host}${pathOf(m)}`;
/** The same key for an address a target was given (a webhookUrl, a delivery record's url). */
export const addressOf = (url: string) => {
  const { host, pathname } = new URL(url);
  return `${host}${pathname}`;
};
export const isCreate = (m: Message) => m.method === 'POST' && pathOf(m) === '/api/checkout-sessions';

export function parse(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The t= and v1= of a Service-Signature header. */
export function signatureParts(header: string | undefined): { t: string; v1: string } | undefined {
  const t = /(?:^|,)t=(\d+)/.exec(header ?? '')?.[1];
  const v1 = /(?:^|,)v1=([0-9a-f]+)/.exec(header ?? '')?.[1];
  return t && v1 ? { t, v1 } : undefined;
}

export const hmac = (secret: string, t: string, body: string) =>
  createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');

/** The known secret a delivery was signed with. */
export function secretOf(m: Message, k: Knowledge): string | undefined {
  const parts = signatureParts(m.headers['service-signature']);
  if (!parts) return undefined;
  return k.secrets().find((s) => hmac(s, parts.t, m.body) === parts.v1);
}

/** Replaces the body of a signed delivery and signs it again with the same secret and t. */
export function resign(m: Message, k: Knowledge, body: string): Message {
  const secret = secretOf(m, k);
  const parts = signatureParts(m.headers['service-signature']);
  if (!secret || !parts) return { ...m, body };
  return {
    ...m,
    body,
    headers: { ...m.headers, 'service-signature': `t=${parts.t},v1=${hmac(secret, parts.t, body)}` },
  };
}

/** Changes the code of an error envelope, keeping doc_url consistent with it. */
export function recode(body: any, code: string): any {
  const docs = String(body.error.doc_url).replace(/\/errors\/#.*$/, '');
  return { ...body, error: { ...body.error, code, doc_url: `${docs}/errors/#${code}` } };
}

/**
 * A sender that makes more attempts than it should, shown as such a target shows it: the
 * hook proxy sends the delivery again when `repeat` says so (after its answer reached the
 * target), and the target's delivery records (the sandbox's, through the API proxy) list
 * each extra one as that delivery's next attempt, so the records and the arrivals agree.
 */
export function extraAttempts(
  repeat: (m: Message, r: Reply) => boolean,
  delayMs = 0,
): { api: Mutation; hook: Mutation } {
  const extra = new Map<string, number[]>();
  return {
    hook: {
      after: async (m, r, _k, forward) => {
        if (!repeat(m, r)) return;
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
        const again = await forward(m);
        extra.set(hookAddress(m), [...(extra.get(hookAddress(m)) ?? []), again.status]);
      },
    },
    api: {
      response: (m, r) =>
        pathOf(m) === '/sandbox/webhook-deliveries' && r.status === 200
          ? editJson(r, (b) => {
              const deliveries: any[] = b.deliveries ?? [];
              const added = [...extra].flatMap(([address, statuses]) => {
                const last = deliveries.filter((d) => addressOf(d.url) === address).at(-1);
                return last
                  ? statuses.map((status, i) => ({
                      ...last,
                      attempt: last.attempt + i + 1,
                      responseStatus: status,
                      error: null,
                    }))
                  : [];
              });
              return { ...b, deliveries: [...deliveries, ...added] };
            })
          : r,
    },
  };
}

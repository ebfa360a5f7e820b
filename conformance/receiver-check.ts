/**
 * `payment-conformance receiver`: checks a merchant's webhook receiver the way the
 * service would call it (service document: Events, Signature header, Receiver
 * verification steps, Response and retry behaviour, Legacy payload). Every delivery is
 * made for a fresh transaction, so deduplication cannot hide a wrong answer.
 */
import { explainClauses } from './clauses.ts';
import { randomUUID } from 'node:crypto';
import pc from 'picocolors';
import { computeSignature, signWebhook, SIGNATURE_HEADER } from '@payment-service/client/webhooks';
import type { Output } from './reporters/console.ts';
import { type Level, SetupError } from './outcome.ts';

export interface ReceiverOptions {
  url: string;
  secret: string;
  /** Undefined: --legacy not given (handling legacy bodies is optional; either answer passes). */
  legacy: 'accept' | 'reject' | undefined;
}

interface Sent {
  status: number | null;
  ms: number;
  error?: string;
}

interface ReceiverCheck {
  id: string;
  level: Level;
  /** The clause ids (conformance/clauses.ts) it enforces. */
  clauses: readonly string[];
  title: string;
  run(r: Deliverer): Promise<string | undefined>;
}

const ANSWER_LIMIT_MS = 5000;
const ok = (s: Sent) => s.status !== null && s.status >= 200 && s.status < 300;
const show = (s: Sent) => (s.status === null ? `no answer (${s.error})` : `${s.status} in ${s.ms} ms`);

class Deliverer {
  constructor(private readonly options: ReceiverOptions) {}

  get secret() {
    return this.options.secret;
  }

  event(overrides: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      event: 'checkout_session.completed',
      createdAt: new Date().toISOString(),
      checkoutSessionId: `cs_conf${randomUUID().replace(/-/g, '').slice(0, 16)}`,
      transactionId: randomUUID(),
      foreignTransactionId: `order-${randomUUID().slice(0, 8)}`,
      ...overrides,
    };
  }

  async send(raw: string, signature: string | undefined): Promise<Sent> {
    const started = Date.now();
    try {
      const response = await fetch(this.options.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'payment-conformance',
          ...(signature !== undefined ? { [SIGNATURE_HEADER]: signature } : {}),
        },
        body: raw,
        signal: AbortSignal.timeout(ANSWER_LIMIT_MS + 2000),
      });
      await response.arrayBuffer();
      return { status: response.status, ms: Date.now() - started };
    } catch (error) {
      return {
        status: null,
        ms: Date.now() - started,
        error:
          (error as Error).name === 'TimeoutError'
            ? 'timed out'
            : String((error as Error & { cause?: { code?: string } }).cause?.code ?? (error as Error).message),
      };
    }
  }

  /** A correctly signed delivery of these exact bytes. */
  signed(raw: string, timestamp?: number): Promise<Sent> {
    return this.send(raw, signWebhook(raw, this.options.secret, timestamp !== undefined ? { timestamp } : {}));
  }
}

const now = () => Math.floor(Date.now() / 1000);
const accepts = (what: string, s: Sent) =>
  ok(s) ? undefined : `${what} must be accepted with a 2xx; the receiver answered ${show(s)}.`;
const rejects = (what: string, s: Sent) =>
  s.status !== null && !ok(s)
    ? undefined
    : `${what} must be rejected (a non-2xx answer); the receiver answered ${show(s)}.`;

function checks(options: ReceiverOptions): ReceiverCheck[] {
  const list: ReceiverCheck[] = [
    {
      id: 'RCV-001',
      level: 'must',
      clauses: ['retry.success'],
      title: 'a valid signed delivery is accepted (2xx)',
      run: async (r) => accepts('A valid signed delivery', await r.signed(JSON.stringify(r.event()))),
    },
    {
      id: 'RCV-002',
      level: 'must',
      clauses: ['verify.raw'],
      title: 'a tampered body (signature of the original) is rejected',
      run: async (r) => {
        const body = r.event();
        const header = signWebhook(JSON.stringify(body), r.secret);
        return rejects(
          'A tampered body',
          await r.send(JSON.stringify({ ...body, foreignTransactionId: 'tampered' }), header),
        );
      },
    },
    {
      id: 'RCV-003',
      level: 'must',
      clauses: ['verify.raw'],
      title:
        'a body with unusual spacing and escapes, signed over its exact bytes, is accepted (no re-serialising before verifying)',
      run: async (r) => {
        const e = r.event({ foreignTransactionId: 'caf\u00e9 \u2603' });
        const raw = `{ "event" : "${e.event}",\n  "createdAt":"${e.createdAt}" , "checkoutSessionId": "${e.checkoutSessionId}",\t"transactionId":"${e.transactionId}", "foreignTransactionId": "caf\\u00e9 \u2603" }`;
        return accepts('A delivery verified over its exact raw bytes', await r.signed(raw));
      },
    },
    {
      id: 'RCV-004',
      level: 'must',
      clauses: ['verify.raw'],
      title: 'a body that differs from the signed bytes only by re-serialisation is rejected',
      run: async (r) => {
        const body = r.event();
        const header = signWebhook(JSON.stringify(body), r.secret);
        return rejects('A re-serialised body', await r.send(JSON.stringify(body, null, 2), header));
      },
    },
    {
      id: 'RCV-005',
      level: 'must',
      clauses: ['verify.age', 'limit.signature-age'],
      title: 'a correctly signed delivery with t ten minutes old is rejected',
      run: async (r) => rejects('A stale timestamp (10 min)', await r.signed(JSON.stringify(r.event()), now() - 600)),
    },
    {
      id: 'RCV-016',
      level: 'must',
      clauses: ['verify.age', 'limit.signature-age'],
      title: 'a correctly signed delivery with t four minutes old is accepted (within the five-minute tolerance)',
      run: async (r) => accepts('A timestamp four minutes old', await r.signed(JSON.stringify(r.event()), now() - 240)),
    },
    {
      id: 'RCV-006',
      level: 'must',
      clauses: ['sig.reject-unsigned'],
      title: 'an event with no Service-Signature header is rejected',
      run: async (r) => rejects('A delivery with no signature', await r.send(JSON.stringify(r.event()), undefined)),
    },
    {
      id: 'RCV-007',
      level: 'must',
      clauses: ['verify.split', 'sig.versions'],
      title: 'a header with its parts reordered (v1=...,t=...) is accepted',
      run: async (r) => {
        const raw = JSON.stringify(r.event());
        const t = now();
        return accepts('A reordered header', await r.send(raw, `v1=${computeSignature(raw, r.secret, t)},t=${t}`));
      },
    },
    {
      id: 'RCV-008',
      level: 'must',
      clauses: ['sig.versions', 'ver.signature'],
      title: 'a header with an extra digest version (v2=) next to v1, before or after it, is accepted',
      run: async (r) => {
        const extra = 'ab'.repeat(32);
        const after = JSON.stringify(r.event());
        const t = now();
        const first = await r.send(after, `t=${t},v1=${computeSignature(after, r.secret, t)},v2=${extra}`);
        if (!ok(first)) return accepts('A header with v2= after v1', first);
        const before = JSON.stringify(r.event());
        return accepts(
          'A header with v2= before v1',
          await r.send(before, `t=${t},v2=${extra},v1=${computeSignature(before, r.secret, t)}`),
        );
      },
    },
    {
      id: 'RCV-009',
      level: 'must',
      clauses: ['retry.duplicates'],
      title: 'a repeated delivery of the same event is answered 2xx again',
      run: async (r) => {
        const raw = JSON.stringify(r.event());
        const first = await r.signed(raw);
        if (!ok(first)) return accepts('The first delivery', first);
        return accepts('A repeated delivery (same transactionId)', await r.signed(raw));
      },
    },
    {
      id: 'RCV-010',
      level: 'must',
      clauses: ['event.unknown'],
      title: 'a signed delivery with an unknown event value is answered 2xx',
      run: async (r) =>
        accepts(
          'An unknown event value',
          await r.signed(JSON.stringify(r.event({ event: 'checkout_session.conformance_future_event' }))),
        ),
    },
    {
      id: 'RCV-015',
      level: 'must',
      clauses: ['sig.reject-unsigned', 'verify.parse-after'],
      title:
        'an unknown event value sent with no Service-Signature header is rejected (verify before looking at the event)',
      run: async (r) =>
        rejects(
          'An unsigned delivery of an unknown event',
          await r.send(JSON.stringify(r.event({ event: 'checkout_session.conformance_future_event' })), undefined),
        ),
    },
    {
      id: 'RCV-011',
      level: 'must',
      clauses: ['verify.raw'],
      title: 'a delivery signed with another secret is rejected',
      run: async (r) => {
        const raw = JSON.stringify(r.event());
        return rejects('A wrong secret', await r.send(raw, signWebhook(raw, 'whsec_conformance_not_yours')));
      },
    },
    {
      id: 'RCV-012',
      level: 'must',
      clauses: ['verify.split'],
      title: 'a header without v1 (only t and v2) is rejected',
      run: async (r) => {
        const raw = JSON.stringify(r.event());
        return rejects(
          'A header without v1',
          await r.send(raw, `t=${now()},v2=${computeSignature(raw, r.secret, now())}`),
        );
      },
    },
    {
      id: 'RCV-013',
      level: 'must',
      clauses: ['retry.wait', 'limit.webhook-wait'],
      title: 'the receiver answers a valid delivery within 5 seconds',
      run: async (r) => {
        const sent = await r.signed(JSON.stringify(r.event()));
        return sent.status !== null && sent.ms < ANSWER_LIMIT_MS
          ? undefined
          : `The service waits five seconds; the receiver answered ${show(sent)}.`;
      },
    },
    {
      id: 'RCV-014',
      // Receivers reject deliveries with no signature, and handling the legacy body is
      // optional: only a receiver declared to handle it (or not) is held to one answer.
      level: options.legacy === undefined ? 'should' : 'must',
      clauses: ['legacy.branch', 'sig.reject-unsigned'],
      title:
        options.legacy === 'accept'
          ? 'a legacy two-field body (no event, no signature) is accepted (--legacy accept)'
          : options.legacy === 'reject'
            ? 'a legacy two-field body (no event, no signature) is rejected (--legacy reject)'
            : 'a legacy two-field body (no event, no signature) gets an answer: handling it is optional (give --legacy accept|reject to require one)',
      run: async (r) => {
        const raw = JSON.stringify({ transactionId: randomUUID(), foreignTransactionId: 'legacy-1' });
        const sent = await r.send(raw, undefined);
        if (options.legacy === 'accept') return accepts('A legacy body', sent);
        if (options.legacy === 'reject') return rejects('A legacy body', sent);
        return sent.status !== null ? undefined : `A legacy body got ${show(sent)}.`;
      },
    },
  ];
  return list.sort((a, b) => a.id.localeCompare(b.id));
}

export async function receiverCommand(options: ReceiverOptions, out: Output): Promise<number> {
  try {
    new URL(options.url);
  } catch {
    throw new SetupError(`--url ${options.url} is not an absolute URL.`);
  }
  if (!options.secret.startsWith('whsec_')) throw new SetupError('--secret must be the whsec_... signing secret.');
  const r = new Deliverer(options);
  const probe = await r.send('{}', undefined);
  if (probe.status === null) throw new SetupError(`The receiver ${options.url} is unreachable: ${probe.error}.`);
  out.write(`${pc.bold('payment-conformance receiver')} ${options.url}\n`);
  let failed = 0;
  // Every check delivers for a transaction of its own, so they run at once: a slow
  // receiver costs one answer limit, not one per check.
  const list = checks(options);
  const problems = await Promise.all(list.map((check) => check.run(r)));
  list.forEach((check, i) => {
    const problem = problems[i];
    if (problem && check.level === 'must') failed += 1;
    const mark = !problem ? pc.green('✓') : check.level === 'must' ? pc.red('✗') : pc.yellow('!');
    const level = check.level === 'must' ? '' : pc.dim(` (${check.level})`);
    out.write(
      `${mark} ${pc.bold(check.id)} ${check.title}${level}${
        problem
          ? `\n    ${pc.red(problem)}${explainClauses(check.clauses)
              .map((line) => `\n    ${pc.dim(line)}`)
              .join('')}`
          : ''
      }\n`,
    );
  });
  out.write(
    failed > 0
      ? pc.red(pc.bold(`\nFAILED: ${failed} check${failed === 1 ? '' : 's'} failed\n`))
      : pc.green(pc.bold('\nPASSED: the receiver follows the document\n')),
  );
  return failed > 0 ? 1 : 0;
}

export { checks as receiverChecks };

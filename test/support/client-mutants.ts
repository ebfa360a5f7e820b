/**
 * Client mutants: the SDK's driver with one of the document's rules for clients broken,
 * each through the SDK's own options or a fetch between it and the service, the way a
 * client written by hand gets it wrong. `caughtBy` names the checks that must fail.
 */
import { createHash, randomUUID } from 'node:crypto';
import { verifyWebhook } from '../../client/webhooks.ts';
import type { DriverEnv, DriverFactory, ModuleDriver, Operation } from '../../conformance/modes/client/protocol.ts';
import { sdkDriver } from '../../conformance/modes/client/drivers/sdk.ts';

export interface ClientMutant {
  name: string;
  /** The clause it breaks. */
  clause: string;
  caughtBy: string[];
  /**
   * What `traffic` makes of its HAR: the TRAFFIC checks that fail on it, or why traffic
   * cannot show this defect (its HAR is then judged clean).
   */
  traffic: { caughtBy: string[] } | { cannot: string };
  driver: DriverFactory;
}

type Fetch = (request: Request) => Promise<Response>;

const codeOf = async (response: Response) => {
  try {
    return (await response.clone().json())?.error?.code as string | undefined;
  } catch {
    return undefined;
  }
};
const envelope = (status: number, code: string) =>
  new Response(JSON.stringify({ error: { code, message: code, param: null, doc_url: `https://x.invalid/#${code}` } }), {
    status,
    headers: { 'content-type': 'application/json' },
  });
// The base URL has a path of the run's own: the API's paths follow it.
const isTokenRequest = (request: Request) => new URL(request.url).pathname.endsWith('/api/token');

/** The SDK driver sending through `wrap(fetch)`. */
const throughFetch =
  (wrap: (next: Fetch) => Fetch): DriverFactory =>
  (env) =>
    sdkDriver(env, { fetch: wrap((request) => fetch(request)) });

/** The SDK driver with its answer to some operations replaced. */
const overriding =
  (
    override: (
      operation: Operation,
      driver: ModuleDriver,
      env: DriverEnv,
    ) => ReturnType<ModuleDriver['handle']> | undefined,
  ): DriverFactory =>
  (env) => {
    const driver = sdkDriver(env);
    return { handle: (operation) => override(operation, driver, env) ?? driver.handle(operation) };
  };

/** A request with its body replaced. */
async function withBody(request: Request, edit: (body: string) => string): Promise<Request> {
  return new Request(request, { body: edit(await request.clone().text()) });
}

export const clientMutants: ClientMutant[] = [
  {
    name: 'a token request sent as JSON',
    clause: 'token.form',
    caughtBy: ['CLIENT-001'],
    traffic: { caughtBy: ['TRAFFIC-030', 'TRAFFIC-034'] },
    driver: throughFetch((next) => async (request) => {
      if (!isTokenRequest(request)) return next(request);
      const form = Object.fromEntries(new URLSearchParams(await request.text()));
      return next(
        new Request(request.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(form),
        }),
      );
    }),
  },
  {
    name: 'the token sent as "Token <token>"',
    clause: 'auth.bearer',
    caughtBy: ['CLIENT-002'],
    traffic: { caughtBy: ['TRAFFIC-031'] },
    driver: throughFetch((next) => (request) => {
      const headers = new Headers(request.headers);
      const auth = headers.get('authorization');
      if (auth) headers.set('authorization', auth.replace(/^Bearer /, 'Token '));
      return next(new Request(request, { headers }));
    }),
  },
  {
    name: 'a new token for every call',
    clause: 'auth.reuse',
    caughtBy: ['CLIENT-003'],
    traffic: { caughtBy: ['TRAFFIC-032'] },
    // Renewing this long before expiry is renewing every time.
    driver: (env) => sdkDriver(env, { tokenRefreshMarginMs: 10 * 60_000 }),
  },
  {
    name: 'creates sent without an Idempotency-Key',
    clause: 'create.idempotency-key',
    caughtBy: ['CLIENT-004'],
    traffic: { caughtBy: ['TRAFFIC-036'] },
    driver: throughFetch((next) => (request) => {
      const headers = new Headers(request.headers);
      headers.delete('idempotency-key');
      return next(new Request(request, { headers }));
    }),
  },
  {
    name: 'a new Idempotency-Key for every attempt of a create',
    clause: 'idem.no-key',
    // CLIENT-015 judges it too when the client's own timeout fires first, which depends on the machine.
    caughtBy: ['CLIENT-013', 'CLIENT-014', 'CLIENT-016', 'CLIENT-022'],
    traffic: { caughtBy: ['TRAFFIC-035'] },
    driver: throughFetch((next) => (request) => {
      const headers = new Headers(request.headers);
      if (headers.has('idempotency-key')) headers.set('idempotency-key', randomUUID());
      return next(new Request(request, { headers }));
    }),
  },
  {
    name: 'an Idempotency-Key made from the body, so two payments alike share one',
    clause: 'create.idempotency-key',
    caughtBy: ['CLIENT-004'],
    traffic: {
      cannot:
        'two payments alike under one key read, in traffic, as one payment sent twice: what the client meant is not in it',
    },
    driver: throughFetch((next) => async (request) => {
      if (!request.headers.has('idempotency-key')) return next(request);
      const headers = new Headers(request.headers);
      headers.set(
        'idempotency-key',
        createHash('sha256')
          .update(await request.clone().text())
          .digest('hex'),
      );
      return next(new Request(request, { headers }));
    }),
  },
  {
    name: 'the request repeated after token_expired with the old token',
    clause: 'auth.expired',
    caughtBy: ['CLIENT-006'],
    traffic: { caughtBy: ['TRAFFIC-033'] },
    driver: throughFetch((next) => {
      let stale: string | undefined;
      return async (request) => {
        const headers = new Headers(request.headers);
        if (stale && headers.has('authorization')) {
          headers.set('authorization', stale);
          stale = undefined;
        }
        const response = await next(new Request(request, { headers }));
        if ((await codeOf(response)) === 'token_expired') stale = request.headers.get('authorization') ?? undefined;
        return response;
      };
    }),
  },
  {
    name: 'pending taken as paid',
    clause: 'state.completed',
    caughtBy: ['CLIENT-012'],
    traffic: { cannot: 'what a client makes of a status it read is its own: no request shows it' },
    driver: overriding((operation, driver) =>
      operation.op === 'confirmPayment'
        ? Promise.resolve(driver.handle(operation)).then((outcome) =>
            'ok' in outcome && outcome.ok
              ? {
                  ok: true,
                  value: {
                    ...(outcome.value as object),
                    paid: ['completed', 'pending'].includes((outcome.value as { status: string }).status),
                  },
                }
              : outcome,
          )
        : undefined,
    ),
  },
  {
    name: 'a retried create with another body under its key',
    clause: 'idem.replay',
    caughtBy: ['CLIENT-013', 'CLIENT-014', 'CLIENT-022'],
    traffic: { caughtBy: ['TRAFFIC-035'] },
    driver: throughFetch((next) => {
      const seen = new Set<string>();
      return async (request) => {
        const key = request.headers.get('idempotency-key');
        if (!key) return next(request);
        const again = seen.has(key);
        seen.add(key);
        return next(again ? await withBody(request, (b) => b.replace('"CLIENT-1"', '"CLIENT-2"')) : request);
      };
    }),
  },
  {
    name: 'amounts sent as strings',
    clause: 'conv.amounts',
    caughtBy: ['CLIENT-005'],
    traffic: { caughtBy: ['TRAFFIC-038'] },
    driver: throughFetch(
      (next) => async (request) =>
        next(await withBody(request, (b) => b.replace(/"total":(\d+(?:\.\d+)?)/, '"total":"$1"'))),
    ),
  },
  {
    name: 'amounts sent with binary-float noise',
    clause: 'create.total',
    caughtBy: ['CLIENT-005'],
    traffic: { caughtBy: ['TRAFFIC-038'] },
    driver: throughFetch(
      (next) => async (request) =>
        next(
          await withBody(request, (b) =>
            b.replace(/"total":(\d+(?:\.\d+)?)/, (_m, n) => `"total":${Number(n) + 1e-9}`),
          ),
        ),
    ),
  },
  {
    name: 'token_expired taken as final',
    clause: 'auth.expired',
    caughtBy: ['CLIENT-006'],
    traffic: {
      cannot:
        'a request not repeated leaves no trace a rule can tell from a client that stopped for reasons of its own',
    },
    driver: throughFetch((next) => async (request) => {
      const response = await next(request);
      return (await codeOf(response)) === 'token_expired' ? envelope(401, 'invalid_token') : response;
    }),
  },
  {
    name: 'a request answered token_expired sent again and again until it works',
    clause: 'auth.expired',
    caughtBy: ['CLIENT-007'],
    traffic: { caughtBy: ['TRAFFIC-033'] },
    driver: throughFetch((next) => async (request) => {
      let response = await next(request.clone());
      for (let i = 0; i < 3 && (await codeOf(response)) === 'token_expired'; i++)
        response = await next(request.clone());
      return response;
    }),
  },
  {
    name: 'unknown_api_key answered with new tokens, again and again',
    clause: 'auth.removed',
    caughtBy: ['CLIENT-008'],
    traffic: { caughtBy: ['TRAFFIC-034'] },
    driver: throughFetch((next) => async (request) => {
      let response = await next(request.clone());
      for (let i = 0; i < 4 && (await codeOf(response)) === 'unknown_api_key'; i++) {
        const base = request.url.replace(/\/api\/.*$/, '');
        await next(
          new Request(`${base}/api/token`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: 'clientId=x&clientSecret=y',
          }),
        );
        response = await next(request.clone());
      }
      return response;
    }),
  },
  {
    name: 'validation_failed retried as a service failure',
    clause: 'status.400',
    caughtBy: ['CLIENT-009'],
    traffic: { caughtBy: ['TRAFFIC-034'] },
    driver: throughFetch((next) => async (request) => {
      const response = await next(request);
      return (await codeOf(response)) === 'validation_failed' ? envelope(503, 'validation_failed') : response;
    }),
  },
  {
    name: 'the account-configuration codes retried',
    clause: 'code.guidance',
    caughtBy: ['CLIENT-010'],
    traffic: { caughtBy: ['TRAFFIC-034'] },
    driver: throughFetch((next) => async (request) => {
      const response = await next(request);
      const code = await codeOf(response);
      return code?.endsWith('_not_enabled') || code === 'settlement_account_missing' || code?.endsWith('_unsupported')
        ? envelope(503, code)
        : response;
    }),
  },
  {
    name: 'an unknown error code crashes the client',
    clause: 'code.open',
    caughtBy: ['CLIENT-011'],
    traffic: { caughtBy: ['TRAFFIC-034'] },
    driver: throughFetch((next) => async (request) => {
      const response = await next(request);
      const code = await codeOf(response);
      if (code === 'payment_method_paused') throw new TypeError(`unexpected code ${code}`);
      return response;
    }),
  },
  {
    name: 'a status it does not know taken as paid',
    clause: 'state.open',
    caughtBy: ['CLIENT-012'],
    traffic: { cannot: 'what a client makes of a status it read is its own: no request shows it' },
    driver: overriding((operation, driver) =>
      operation.op === 'confirmPayment'
        ? Promise.resolve(driver.handle({ ...operation, op: 'readSession' })).then((outcome) =>
            'ok' in outcome && outcome.ok
              ? {
                  ok: true,
                  value: {
                    paid: (outcome.value as { status: string }).status !== 'created',
                    status: (outcome.value as { status: string }).status,
                  },
                }
              : outcome,
          )
        : undefined,
    ),
  },
  {
    name: 'internal_error retried at once, without waiting',
    clause: 'status.500',
    caughtBy: ['CLIENT-016'],
    traffic: { caughtBy: ['TRAFFIC-037'] },
    driver: (env) => sdkDriver(env, { initialRetryDelayMs: 0, maxRetryDelayMs: 0 }),
  },
  {
    name: 'a 429 asked again at once, whatever its Retry-After',
    clause: 'auth.exchange',
    caughtBy: ['CLIENT-017'],
    traffic: { caughtBy: ['TRAFFIC-039'] },
    driver: throughFetch((next) => async (request) => {
      const response = await next(request.clone());
      return response.status === 429 ? next(request) : response;
    }),
  },
  {
    name: 'signatures accepted whatever their age',
    clause: 'verify.age',
    caughtBy: ['CLIENT-018'],
    traffic: {
      cannot: "the client mode hands deliveries to the driver's verifyWebhook, not over HTTP: its traffic holds none",
    },
    driver: overriding((operation, _driver, env) => {
      if (operation.op !== 'verifyWebhook') return undefined;
      try {
        const verified = verifyWebhook(
          operation.body,
          operation.headers['service-signature'],
          env.PAYMENT_WEBHOOK_SECRET,
          {
            toleranceSeconds: Number.POSITIVE_INFINITY,
          },
        );
        return verified.kind === 'event'
          ? {
              ok: true,
              value: { kind: 'event', event: verified.event.event, transactionId: verified.event.transactionId },
            }
          : { ok: true, value: { kind: 'legacy', transactionId: verified.payload.transactionId } };
      } catch {
        return { ok: false, error: { code: 'signature', status: null, retryable: false } };
      }
    }),
  },
  {
    name: 'an event of a kind it does not know rejected',
    clause: 'event.unknown',
    caughtBy: ['CLIENT-019'],
    traffic: {
      cannot: "the client mode hands deliveries to the driver's verifyWebhook, not over HTTP: its traffic holds none",
    },
    driver: overriding((operation) =>
      operation.op === 'verifyWebhook' && !operation.body.includes('"checkout_session.completed"')
        ? { ok: false, error: { code: 'unknown_event', status: null, retryable: false } }
        : undefined,
    ),
  },
  {
    name: 'a legacy body taken as a signed event',
    clause: 'legacy.branch',
    caughtBy: ['CLIENT-020'],
    traffic: {
      cannot: "the client mode hands deliveries to the driver's verifyWebhook, not over HTTP: its traffic holds none",
    },
    driver: overriding((operation) =>
      operation.op === 'verifyWebhook' && !operation.body.includes('"event"')
        ? {
            ok: true,
            value: {
              kind: 'event',
              event: 'checkout_session.completed',
              transactionId: JSON.parse(operation.body).transactionId,
            },
          }
        : undefined,
    ),
  },
  {
    name: 'the ids of a redirect taken as proof of payment',
    clause: 'redirect.not-proof',
    caughtBy: ['CLIENT-021'],
    traffic: { cannot: "a redirect is the browser's, and what the client makes of it sends nothing" },
    driver: overriding((operation) =>
      operation.op === 'confirmRedirect'
        ? { ok: true, value: { paid: new URL(operation.url).searchParams.has('checkoutSessionId') } }
        : undefined,
    ),
  },
];

/**
 * The payment client: openapi-fetch over the generated types, so every path, body and
 * answer is typed, with what the service document asks of a client done by default:
 *
 * - a token fetched with the form-encoded body, reused, renewed one request at a time,
 *   and renewed once more when the service says `token_expired` (Authentication 4-6);
 * - an Idempotency-Key on every create, the same across its retries (Idempotency rules);
 * - 5xx answers and network failures retried with backoff and jitter, never a 4xx
 *   (HTTP statuses);
 * - failures raised as one error family chosen by `errorFromResponse` (Errors);
 * - open sets: an unknown status or code never throws; `isPaid` is true only for
 *   `completed`, and `confirmPayment` reads the payment back (What the service does).
 *
 * The layers, innermost first: `send` (one request with its retries), `authorised`
 * (bearer token, renewal on `token_expired`), then openapi-fetch with a middleware that
 * gives creates their key. `client.api` is that typed openapi-fetch client; the named
 * methods on top raise errors instead of returning them.
 */
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, paths } from '@payment-service/contract';
import { abortedError, connectionError, errorFromResponse } from './errors.ts';
import { IDEMPOTENCY_HEADER, generateIdempotencyKey } from './idempotency.ts';
import { isPaid } from './payments.ts';
import {
  DEFAULT_RETRY_POLICY,
  backoffDelay,
  shouldRetry,
  sleep as defaultSleep,
  type AttemptOutcome,
  type RetryPolicy,
} from './retry.ts';
import { TokenCache } from './token.ts';
import { CLIENT_VERSION } from './version.ts';

/**
 * Names the SDK and its version to the service, for its logs and support (browsers keep
 * their own User-Agent and drop this one).
 */
export const USER_AGENT = `payment-service-client/${CLIENT_VERSION}`;

/** Rejects as soon as `signal` aborts, with the SDK's RequestAbortedError; else as `promise` does. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortedError(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortedError(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

type Schemas = components['schemas'];
export type CheckoutSessionCreateRequest = Schemas['CheckoutSessionCreateRequest'];
export type CheckoutSessionCreated = Schemas['CheckoutSessionCreated'];
export type CheckoutSession = Schemas['CheckoutSession'];
export type PaymentLinkCreateRequest = Schemas['PaymentLinkCreateRequest'];
export type PaymentLink = Schemas['PaymentLink'];
export type PaymentApi = Client<paths>;

/** The operations that create a payment and so take an Idempotency-Key (checked against the description in the tests). */
export const IDEMPOTENT_CREATE_PATHS: ReadonlySet<string> = new Set([
  '/api/checkout-sessions',
  '/api/payment-links',
  '/api/transaction',
]);

export interface PaymentClientOptions {
  /** The service's base address, e.g. `https://pay.example.com` (no `/api`). */
  baseUrl: string;
  clientId: string;
  /** Server-side only: anyone holding it can create payments. */
  clientSecret: string;
  /** A fetch to send requests with (default: the global fetch). */
  fetch?: (request: Request) => Promise<Response>;
  /** Further attempts after a 5xx or a network failure (default 2). */
  maxRetries?: number;
  /** First backoff delay in milliseconds (default 500); each retry doubles it, with jitter. */
  initialRetryDelayMs?: number;
  /** Largest backoff delay in milliseconds (default 8000). */
  maxRetryDelayMs?: number;
  /** Give up on one attempt after this many milliseconds (default 30000); counts as a network failure. */
  timeoutMs?: number;
  /** Renew the token this long before its computed expiry (default 30000). */
  tokenRefreshMarginMs?: number;
  /** The client's clock, in milliseconds (default Date.now); used for token reuse only. */
  now?: () => number;
  /** Waits between retries (default setTimeout); replaceable in tests. */
  sleep?: (ms: number) => Promise<void>;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
}

/** Options of one call, over the client's own. */
export interface RequestOptions {
  /** Aborts the call, retries and waits included: it then raises RequestAbortedError. */
  signal?: AbortSignal;
  /** Give up on one attempt after this many milliseconds (default: the client's `timeoutMs`). */
  timeoutMs?: number;
  /** Further attempts after a 5xx or a network failure (default: the client's `maxRetries`). */
  maxRetries?: number;
  /** More headers to send (an `Idempotency-Key` here is the same as `idempotencyKey`). */
  headers?: Record<string, string>;
}

export interface CreateOptions extends RequestOptions {
  /** Reuse a key to make a repeated create safe across processes; generated when omitted. */
  idempotencyKey?: string;
}

export interface PaymentConfirmation {
  /** True only when the payment's status is `completed`: the only state to fulfil on. */
  paid: boolean;
  /** The status as read (possibly one this client does not know yet). */
  status: string;
  /** The rail the money moved on; meaningful only when paid. */
  transactionType: string | null;
  payment: CheckoutSession | PaymentLink;
}

export interface PaymentClient {
  /** The typed openapi-fetch client, with tokens, idempotency keys and retries applied. */
  readonly api: PaymentApi;
  /** Creates a checkout session (POST /api/checkout-sessions), with an Idempotency-Key kept across its retries. */
  createCheckoutSession(body: CheckoutSessionCreateRequest, options?: CreateOptions): Promise<CheckoutSessionCreated>;
  /** Reads a checkout session back (GET /api/checkout-sessions/{id}): where its payment stands now. */
  getCheckoutSession(id: string, options?: RequestOptions): Promise<CheckoutSession>;
  /** Creates a payment link (POST /api/payment-links), with an Idempotency-Key kept across its retries. */
  createPaymentLink(body: PaymentLinkCreateRequest, options?: CreateOptions): Promise<PaymentLink>;
  /** Reads a payment link back (GET /api/payment-links/{id}); its id is its transaction id. */
  getPaymentLink(id: string, options?: RequestOptions): Promise<PaymentLink>;
  /**
   * Reads a payment back, the document's authoritative way to decide fulfilment: a `cs_`
   * id reads the checkout session, any other id (a transaction id) the payment link.
   */
  confirmPayment(id: string, options?: RequestOptions): Promise<PaymentConfirmation>;
  /** A valid access token (fetched or reused), e.g. for a request made without this client. */
  getAccessToken(): Promise<string>;
}

/** How one call is sent: its retry budget and backoff, and each attempt's time limit. */
interface CallSettings {
  policy: RetryPolicy;
  timeoutMs: number;
}

/** Reads a request's body once so that every attempt can send the same bytes. */
async function bodyOf(request: Request): Promise<ArrayBuffer | undefined> {
  return request.body === null ? undefined : request.arrayBuffer();
}

/** The `error.code` of an envelope answer, without consuming the answer. */
async function envelopeCode(response: Response): Promise<string | undefined> {
  try {
    const body = (await response.clone().json()) as { error?: { code?: unknown } };
    return typeof body?.error?.code === 'string' ? body.error.code : undefined;
  } catch {
    return undefined;
  }
}

export function createPaymentClient(options: PaymentClientOptions): PaymentClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const policy: RetryPolicy = {
    maxRetries: options.maxRetries ?? DEFAULT_RETRY_POLICY.maxRetries,
    initialDelayMs: options.initialRetryDelayMs ?? DEFAULT_RETRY_POLICY.initialDelayMs,
    maxDelayMs: options.maxRetryDelayMs ?? DEFAULT_RETRY_POLICY.maxDelayMs,
  };
  const defaults: CallSettings = { policy, timeoutMs: options.timeoutMs ?? 30_000 };
  const wait = options.sleep ?? defaultSleep;
  const tokenUrl = `${baseUrl}/api/token`;

  /**
   * One request and its retries; resolves with the last answer, or rejects with a
   * ConnectionError (RequestTimeoutError when every attempt ran out of time), or with a
   * RequestAbortedError as soon as the caller's signal aborts.
   */
  async function send(request: Request, body: ArrayBuffer | undefined, call: CallSettings): Promise<Response> {
    for (let retries = 0; ; retries++) {
      const attempt = new Request(request.url, {
        method: request.method,
        headers: request.headers,
        body,
        signal: AbortSignal.any([request.signal, AbortSignal.timeout(call.timeoutMs)]),
      });
      let outcome: AttemptOutcome;
      let response: Response | undefined;
      try {
        response = await doFetch(attempt);
        outcome = { status: response.status };
      } catch (error) {
        // The caller's own abort ends the call; it is not a failure to retry.
        if (request.signal.aborted) throw abortedError(request.signal.reason);
        outcome = { networkError: error };
      }
      if (!shouldRetry(outcome, retries, call.policy)) {
        if (response) return response;
        throw connectionError((outcome as { networkError: unknown }).networkError, call.timeoutMs);
      }
      await response?.body?.cancel();
      await abortable(wait(backoffDelay(retries, call.policy, options.random)), request.signal);
    }
  }

  const tokens = new TokenCache({
    refreshMarginMs: options.tokenRefreshMarginMs,
    now: options.now,
    fetchToken: async () => {
      return unwrap(
        await api.POST('/api/token', {
          body: { clientId: options.clientId, clientSecret: options.clientSecret },
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
      );
    },
  });

  /** Adds the bearer token; on `token_expired`, renews it and repeats the request once. */
  async function authorised(request: Request, call: CallSettings = defaults): Promise<Response> {
    const body = await bodyOf(request);
    if (request.url === tokenUrl) return send(request, body, call);
    const withToken = (token: string) => {
      const headers = new Headers(request.headers);
      headers.set('authorization', `Bearer ${token}`);
      return new Request(request.url, { method: request.method, headers, body, signal: request.signal });
    };
    const token = await abortable(tokens.get(), request.signal);
    const response = await send(withToken(token), body, call);
    if (response.status !== 401) return response;
    const code = await envelopeCode(response);
    // A mangled token will not mend itself: drop it so the next call fetches another,
    // but do not repeat this request (the document retries only token_expired).
    if (code === 'invalid_token') tokens.invalidate(token);
    if (code !== 'token_expired') return response;
    tokens.invalidate(token);
    await response.body?.cancel();
    return send(withToken(await abortable(tokens.get(), request.signal)), body, call);
  }

  const idempotencyKeys: Middleware = {
    onRequest({ request, schemaPath }) {
      if (
        request.method === 'POST' &&
        IDEMPOTENT_CREATE_PATHS.has(schemaPath) &&
        !request.headers.has(IDEMPOTENCY_HEADER)
      ) {
        request.headers.set(IDEMPOTENCY_HEADER, generateIdempotencyKey());
      }
      return request;
    },
  };

  const api = createClient<paths>({
    baseUrl,
    fetch: (request) => authorised(request),
    headers: { 'user-agent': USER_AGENT },
  });
  api.use(idempotencyKeys);

  /** The data of a typed answer, or the mapped error. */
  function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
    if (result.data !== undefined) return result.data;
    throw errorFromResponse(result.response.status, result.error, result.response.headers.get('x-request-id'));
  }
  /** What openapi-fetch is given for one call: its headers, signal, and a fetch with its settings. */
  const perCall = (call: CreateOptions = {}) => {
    const settings: CallSettings = {
      policy: { ...policy, maxRetries: call.maxRetries ?? policy.maxRetries },
      timeoutMs: call.timeoutMs ?? defaults.timeoutMs,
    };
    return {
      headers: { ...call.headers, ...(call.idempotencyKey ? { [IDEMPOTENCY_HEADER]: call.idempotencyKey } : {}) },
      ...(call.signal ? { signal: call.signal } : {}),
      fetch: (request: Request) => authorised(request, settings),
    };
  };

  const client: PaymentClient = {
    api,
    async createCheckoutSession(body, call) {
      return unwrap(await api.POST('/api/checkout-sessions', { body, ...perCall(call) }));
    },
    async getCheckoutSession(id, call) {
      return unwrap(await api.GET('/api/checkout-sessions/{id}', { params: { path: { id } }, ...perCall(call) }));
    },
    async createPaymentLink(body, call) {
      return unwrap(await api.POST('/api/payment-links', { body, ...perCall(call) }));
    },
    async getPaymentLink(id, call) {
      return unwrap(await api.GET('/api/payment-links/{id}', { params: { path: { id } }, ...perCall(call) }));
    },
    async confirmPayment(id, call) {
      const payment = id.startsWith('cs_')
        ? await client.getCheckoutSession(id, call)
        : await client.getPaymentLink(id, call);
      const paid = isPaid(payment);
      return { paid, status: payment.status, transactionType: paid ? payment.transactionType : null, payment };
    },
    getAccessToken: () => tokens.get(),
  };
  return client;
}

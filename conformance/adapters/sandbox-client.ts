/**
 * A typed client of the sandbox API (`@payment-service/contract/sandbox`): openapi-fetch
 * over the generated types, with the bearer token and a time limit on every call. The
 * built-in sandbox adapter is made of it; tools and adapters of one's own can use it too.
 */
import type { paths } from '@payment-service/contract/sandbox';
import createClient, { type Client } from 'openapi-fetch';
import type { TrafficEntry } from '../core/traffic.ts';

export type SandboxClient = Client<paths>;

export interface SandboxClientOptions {
  baseUrl: string;
  /** The sandbox token (`Authorization: Bearer <token>`). */
  token: string;
  /** Give up on a call after this long (default 20 s). */
  timeoutMs?: number;
  /** Each call with its answer, for the traffic reports: a record of the run holds its sandbox calls too. */
  record?: (entry: TrafficEntry) => void;
}

export function createSandboxClient(options: SandboxClientOptions): SandboxClient {
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { authorization: `Bearer ${options.token}` },
  });
  const sent = new WeakMap<Request, { startedAt: number; body: string | undefined }>();
  const record = options.record;
  client.use({
    onRequest: async ({ request }) => {
      const timed = new Request(request, {
        signal: AbortSignal.any([request.signal, AbortSignal.timeout(options.timeoutMs ?? 20_000)]),
      });
      if (record) sent.set(timed, { startedAt: Date.now(), body: (await timed.clone().text()) || undefined });
      return timed;
    },
    onResponse: async ({ request, response }) => {
      const began = sent.get(request);
      if (!record || !began) return undefined;
      record({
        kind: 'api',
        checkId: 'adapter',
        startedAt: began.startedAt,
        durationMs: Date.now() - began.startedAt,
        request: {
          method: request.method,
          url: request.url,
          headers: Object.fromEntries(request.headers),
          body: began.body,
        },
        response: {
          status: response.status,
          headers: Object.fromEntries(response.headers),
          body: await response.clone().text(),
        },
      });
      return undefined;
    },
  });
  return client;
}

/** The data of a sandbox answer, or an Error saying what it answered instead. */
export function sandboxData<T>(
  what: string,
  result: { data?: T; error?: unknown; response: Response },
): NonNullable<T> {
  if (result.data !== undefined && result.data !== null) return result.data as NonNullable<T>;
  const error = (result.error as { error?: { code?: string; message?: string } } | undefined)?.error;
  throw new Error(
    `${what} answered ${result.response.status}${error?.code ? ` ${error.code}` : ''}${error?.message ? `: ${error.message}` : ''}`,
  );
}

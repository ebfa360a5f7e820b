/**
 * A typed client of the sandbox API (`@payment-service/contract/sandbox`): openapi-fetch
 * over the generated types, with the bearer token and a time limit on every call. The
 * built-in sandbox adapter is made of it; tools and adapters of one's own can use it too.
 */
import type { paths } from '@payment-service/contract/sandbox';
import createClient, { type Client } from 'openapi-fetch';

export type SandboxClient = Client<paths>;

export interface SandboxClientOptions {
  baseUrl: string;
  /** The sandbox token (`Authorization: Bearer <token>`). */
  token: string;
  /** Give up on a call after this long (default 20 s). */
  timeoutMs?: number;
}

export function createSandboxClient(options: SandboxClientOptions): SandboxClient {
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { authorization: `Bearer ${options.token}` },
  });
  client.use({
    onRequest: ({ request }) =>
      new Request(request, {
        signal: AbortSignal.any([request.signal, AbortSignal.timeout(options.timeoutMs ?? 20_000)]),
      }),
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

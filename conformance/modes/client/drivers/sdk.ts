/**
 * The driver of this project's own SDK (@payment-service/client) for
 * `payment-conformance client`: each operation of the protocol is one call of the SDK,
 * with its defaults (token reuse and renewal, a key on every create, retries with
 * backoff), and each error as the SDK classifies it.
 *
 *   npx --no -- payment-conformance client --base-url ... --sandbox-token ... \
 *     --driver-module @payment-service/conformance/drivers/sdk
 *
 * It is also the model of a JavaScript driver: a default export taking the scenario's
 * environment and giving `handle(operation)`.
 */
import {
  ConnectionError,
  createPaymentClient,
  PaymentError,
  RequestTimeoutError,
  ServerError,
  verifyWebhook,
  WebhookVerificationError,
} from '@payment-service/client';
import type { ClientError, DriverEnv, DriverFactory, ModuleDriver, Operation, Said } from '../protocol.ts';

type Result = Said;

/** The error as the SDK classified it: its code, the status, and whether trying again later could help. */
export function classified(error: unknown): ClientError {
  if (error instanceof PaymentError)
    return {
      code: error.code,
      status: error.status,
      // A service failure or no answer may pass; a refusal stands until the request or account changes.
      retryable:
        error instanceof ServerError ||
        error instanceof ConnectionError ||
        error instanceof RequestTimeoutError ||
        error.status === 429,
      message: error.message,
    };
  if (error instanceof WebhookVerificationError)
    return { code: error.name, status: null, retryable: false, message: error.message };
  throw error;
}

/** The SDK driver, for a given client factory (tests make mutants of it with options). */
export function sdkDriver(
  env: DriverEnv,
  options: Partial<Parameters<typeof createPaymentClient>[0]> = {},
): ModuleDriver {
  const client = createPaymentClient({
    baseUrl: env.PAYMENT_BASE_URL,
    clientId: env.PAYMENT_CLIENT_ID,
    clientSecret: env.PAYMENT_CLIENT_SECRET,
    timeoutMs: Number(env.PAYMENT_REQUEST_TIMEOUT_MS) || undefined,
    ...options,
  });
  const ok = (value: unknown): Result => ({ ok: true, value });
  const run = async (operation: Operation): Promise<Result> => {
    switch (operation.op) {
      case 'token':
        return ok({ accessToken: await client.getAccessToken() });
      case 'createSession':
        return ok(await client.createCheckoutSession(operation.body as never));
      case 'readSession':
        return ok(await client.getCheckoutSession(operation.sessionId));
      case 'confirmPayment': {
        const { paid, status } = await client.confirmPayment(operation.sessionId);
        return ok({ paid, status });
      }
      case 'confirmRedirect': {
        // The ids in the URL only say what to read: the payment is read back before fulfilling.
        const query = new URL(operation.url).searchParams;
        const id = query.get('checkoutSessionId') ?? query.get('transactionId');
        if (!id) return ok({ paid: false });
        return ok({ paid: (await client.confirmPayment(id)).paid });
      }
      case 'createLink':
        return ok(await client.createPaymentLink(operation.body as never));
      case 'readLink':
        return ok(await client.getPaymentLink(operation.linkId));
      case 'verifyWebhook': {
        const verified = verifyWebhook(
          operation.body,
          operation.headers['service-signature'],
          env.PAYMENT_WEBHOOK_SECRET,
          { allowLegacy: true },
        );
        return ok(
          verified.kind === 'event'
            ? { kind: 'event', event: verified.event.event, transactionId: verified.event.transactionId }
            : { kind: 'legacy', transactionId: verified.payload.transactionId },
        );
      }
    }
  };
  return {
    async handle(operation) {
      try {
        return await run(operation);
      } catch (error) {
        return { ok: false, error: classified(error) };
      }
    },
  };
}

const driver: DriverFactory = (env) => sdkDriver(env);
export default driver;

/**
 * The sandbox API's handlers, keyed by operationId (openapi/sandbox.yaml): provisioning,
 * the per-organisation clock and faults. Test controls for the reference server only,
 * wired in by app.ts alone.
 */
import type { components, operations, paths } from '@payment-service/contract/sandbox';
import { iso, orgNow, SECOND } from '../domain/clock.ts';
import { DomainError, notFound, validationFailed } from '../domain/errors.ts';
import { newWebhookSecret } from '../domain/ids.ts';
import { createApiKey, createOrganisation } from '../domain/organisations.ts';
import { legacyTransactionShape, paymentLinkShape, sessionReadShape } from '../domain/payments.ts';
import type { Handlers } from '../http/operation.ts';
import type { Scope, Services } from '../scope.ts';
import type { Organisation, Payment } from '../store/types.ts';
import { payerAttempt } from '../pay/payer.ts';

async function organisation(services: Services, orgId: string): Promise<Organisation> {
  const org = await services.store.getOrganisation(orgId);
  if (!org) throw notFound('organisation');
  return org;
}

/**
 * The payer's attempt on the payment of this kind found `by` its id (any organisation's:
 * the sandbox is the payer). Test-mode payments only: a live one is paid by a real payer
 * or not at all, as on the hosted page, whoever holds the sandbox token.
 */
async function attemptOn(
  services: Services,
  by: { transactionId: string } | { sessionId: string },
  kind: Payment['kind'],
  what: string,
  { rail, outcome }: components['schemas']['SandboxAttemptRequest'],
) {
  const payment = await services.store.findPayment(by);
  if (payment?.kind !== kind) throw notFound(what);
  if (payment.mode !== 'test')
    throw new DomainError(
      'invalid_state',
      `This ${what} is a live-mode payment: live-mode payments cannot be driven by the sandbox, only paid by a real payer. Create the payment with a test key.`,
    );
  return payerAttempt(services, payment, rail, outcome);
}

export const sandboxHandlers = {
  async createOrganisation(request, { services }) {
    return { status: 200, body: await createOrganisation(services.store, services.credentials, request.body) };
  },

  async createApiKey(request, { services }) {
    const org = await organisation(services, request.params.orgId);
    return { status: 200, body: await createApiKey(services.store, services.credentials, org.id, request.body.mode) };
  },

  async deleteApiKey(request, { services }) {
    if (!(await services.store.deleteApiKey(request.params.clientId))) throw notFound('API key');
    return { status: 200, body: { deleted: true } };
  },

  async rotateWebhookSecret(request, { services }) {
    const org = await organisation(services, request.params.orgId);
    const webhookSigningSecret = newWebhookSecret();
    await services.store.setWebhookSecret(org.id, webhookSigningSecret);
    return { status: 200, body: { webhookSigningSecret } };
  },

  async advanceClock(request, { services }) {
    const org = await organisation(services, request.params.orgId);
    const offset = org.clockOffsetMs + request.body.advanceSeconds * SECOND;
    await services.store.setClockOffset(org.id, offset);
    return { status: 200, body: { now: iso(orgNow({ clockOffsetMs: offset })) } };
  },

  async createCheckoutSessionAttempt({ params, body }, { services }) {
    const done = await attemptOn(services, { sessionId: params.id }, 'checkout_session', 'checkout session', body);
    return { status: 200, body: { session: sessionReadShape(done.payment, done.now), redirectTo: done.redirectTo } };
  },

  async createPaymentLinkAttempt({ params, body }, { services }) {
    const done = await attemptOn(services, { transactionId: params.id }, 'payment_link', 'payment link', body);
    const paymentLink = paymentLinkShape(done.payment, services.publicUrl, done.now);
    return { status: 200, body: { paymentLink, redirectTo: done.redirectTo } };
  },

  async createTransactionAttempt({ params, body }, { services }) {
    const done = await attemptOn(services, { transactionId: params.transactionId }, 'legacy', 'transaction', body);
    const transaction = legacyTransactionShape(done.payment, services.publicUrl, done.now);
    return { status: 200, body: { transaction, redirectTo: done.redirectTo } };
  },

  async listWebhookDeliveries(request, { services }) {
    const { transactionId, checkoutSessionId } = request.query;
    if ((transactionId === undefined) === (checkoutSessionId === undefined)) {
      // Neither: the query as a whole is to blame; both: each of them (param null either way).
      const fields = transactionId === undefined ? [''] : ['transactionId', 'checkoutSessionId'];
      const constraints = { exactlyOne: 'Give exactly one of transactionId and checkoutSessionId' };
      throw validationFailed(
        fields.map((field) => ({ field, constraints })),
        'Give exactly one of transactionId and checkoutSessionId.',
      );
    }
    const payment = await services.store.findPayment(
      transactionId !== undefined ? { transactionId } : { sessionId: checkoutSessionId! },
    );
    if (!payment) throw notFound('payment');
    const deliveries = await services.store.listDeliveries(payment.transactionId);
    return {
      status: 200,
      body: {
        deliveries: deliveries.map((d) => ({
          transactionId: d.transactionId,
          url: d.url,
          attempt: d.attempt,
          at: iso(d.at),
          signed: d.signed,
          responseStatus: d.responseStatus,
          error: d.error,
          final: d.final,
        })),
      },
    };
  },

  async createFault(request, { services }) {
    const { kind, orgId, times = 1 } = request.body;
    await organisation(services, orgId);
    await services.faults.arm(orgId, kind, times);
    return { status: 200, body: { ok: true } };
  },
} satisfies Handlers<operations, paths, Scope>;

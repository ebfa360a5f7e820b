/**
 * The sandbox API's handlers, keyed by operationId (openapi/sandbox.yaml): provisioning,
 * the per-organisation clock and faults. Test controls for the reference server only.
 */
import type { Context } from 'openapi-backend';
import { SECOND, iso, orgNow } from '../domain/clock.ts';
import { newWebhookSecret } from '../domain/ids.ts';
import type { Reply } from '../domain/idempotency.ts';
import { createApiKey, createOrganisation, type OrganisationSettings } from '../domain/organisations.ts';
import { notFound } from '../http/errors.ts';
import type { Scope } from '../scope.ts';
import type { FaultKind, Mode, Organisation, Payment, Rail } from '../store/types.ts';
import { attempt, redirectAfterSuccess, type Outcome } from '../domain/lifecycle.ts';
import { legacyTransactionShape, paymentLinkShape, sessionReadShape } from '../domain/payments.ts';
import { ApiError } from '../http/errors.ts';

const ok = (body: unknown): Reply => ({ status: 200, body });

async function organisation(c: Context, scope: Scope): Promise<Organisation> {
  const org = await scope.services.store.getOrganisation(String(c.request.params.orgId));
  if (!org) throw notFound('organisation');
  return org;
}

/**
 * Makes the payer's attempt and, when it completed the payment, delivers its webhook:
 * inline (awaited) on the open-banking rail, queued on the card rail.
 */
export async function payerAttempt(scope: Scope, payment: Payment, rail: Rail, outcome: Outcome) {
  const { store, webhooks } = scope.services;
  const org = await store.getOrganisation(payment.orgId);
  if (!org) throw notFound('payment');
  const now = orgNow(org);
  const result = await attempt(store, payment, rail, outcome, now);
  if (result.webhook) {
    const delivery = webhooks.deliver(result.webhook);
    if (rail === 'open_banking') await delivery;
  }
  return {
    payment: result.payment,
    now,
    redirectTo: outcome === 'succeeded' ? redirectAfterSuccess(result.payment) : null,
  };
}

async function paymentFor(
  scope: Scope,
  by: { transactionId: string } | { sessionId: string },
  kind: Payment['kind'],
  what: string,
) {
  const payment = await scope.services.store.findPayment(by);
  if (payment?.kind !== kind) throw notFound(what);
  return payment;
}

export const sandboxHandlers = {
  async createOrganisation(c: Context, scope: Scope) {
    return ok(await createOrganisation(scope.services.store, c.request.requestBody as OrganisationSettings));
  },

  async createApiKey(c: Context, scope: Scope) {
    const org = await organisation(c, scope);
    const { mode } = c.request.requestBody as { mode: Mode };
    return ok(await createApiKey(scope.services.store, org.id, mode));
  },

  async deleteApiKey(c: Context, scope: Scope) {
    if (!(await scope.services.store.deleteApiKey(String(c.request.params.clientId)))) throw notFound('API key');
    return ok({ deleted: true });
  },

  async rotateWebhookSecret(c: Context, scope: Scope) {
    const org = await organisation(c, scope);
    const webhookSigningSecret = newWebhookSecret();
    await scope.services.store.setWebhookSecret(org.id, webhookSigningSecret);
    return ok({ webhookSigningSecret });
  },

  async advanceClock(c: Context, scope: Scope) {
    const org = await organisation(c, scope);
    const { advanceSeconds } = c.request.requestBody as { advanceSeconds: number };
    const offset = org.clockOffsetMs + advanceSeconds * SECOND;
    await scope.services.store.setClockOffset(org.id, offset);
    return ok({ now: iso(orgNow({ clockOffsetMs: offset })) });
  },

  async createCheckoutSessionAttempt(c: Context, scope: Scope) {
    const payment = await paymentFor(
      scope,
      { sessionId: String(c.request.params.id) },
      'checkout_session',
      'checkout session',
    );
    const { rail, outcome } = c.request.requestBody as { rail: Rail; outcome: Outcome };
    const done = await payerAttempt(scope, payment, rail, outcome);
    return ok({ session: sessionReadShape(done.payment, done.now), redirectTo: done.redirectTo });
  },

  async createPaymentLinkAttempt(c: Context, scope: Scope) {
    const payment = await paymentFor(
      scope,
      { transactionId: String(c.request.params.id) },
      'payment_link',
      'payment link',
    );
    const { rail, outcome } = c.request.requestBody as { rail: Rail; outcome: Outcome };
    const done = await payerAttempt(scope, payment, rail, outcome);
    return ok({
      paymentLink: paymentLinkShape(done.payment, scope.services.publicUrl, done.now),
      redirectTo: done.redirectTo,
    });
  },

  async createTransactionAttempt(c: Context, scope: Scope) {
    const payment = await paymentFor(
      scope,
      { transactionId: String(c.request.params.transactionId) },
      'legacy',
      'transaction',
    );
    const { rail, outcome } = c.request.requestBody as { rail: Rail; outcome: Outcome };
    const done = await payerAttempt(scope, payment, rail, outcome);
    return ok({
      transaction: legacyTransactionShape(done.payment, scope.services.publicUrl, done.now),
      redirectTo: done.redirectTo,
    });
  },

  async listWebhookDeliveries(c: Context, scope: Scope) {
    const { transactionId, checkoutSessionId } = c.request.query as {
      transactionId?: string;
      checkoutSessionId?: string;
    };
    if ((transactionId === undefined) === (checkoutSessionId === undefined)) {
      // Neither: the query as a whole is to blame; both: each of them (param null either way).
      const fields = transactionId === undefined ? [''] : ['transactionId', 'checkoutSessionId'];
      const constraints = { exactlyOne: 'Give exactly one of transactionId and checkoutSessionId' };
      throw new ApiError(
        400,
        'validation_failed',
        'Give exactly one of transactionId and checkoutSessionId.',
        null,
        fields.map((field) => ({ field, constraints })),
      );
    }
    const payment = await scope.services.store.findPayment(
      transactionId !== undefined ? { transactionId } : { sessionId: checkoutSessionId! },
    );
    if (!payment) throw notFound('payment');
    const deliveries = await scope.services.store.listDeliveries(payment.transactionId);
    return ok({
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
    });
  },

  async createFault(c: Context, scope: Scope) {
    const { kind, orgId, times = 1 } = c.request.requestBody as { kind: FaultKind; orgId: string; times?: number };
    if (!(await scope.services.store.getOrganisation(orgId))) throw notFound('organisation');
    await scope.services.store.setFault(orgId, kind, times);
    return ok({ ok: true });
  },
};

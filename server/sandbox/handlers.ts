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
import type { FaultKind, Mode, Organisation } from '../store/types.ts';

const ok = (body: unknown): Reply => ({ status: 200, body });

async function organisation(c: Context, scope: Scope): Promise<Organisation> {
  const org = await scope.services.store.getOrganisation(String(c.request.params.orgId));
  if (!org) throw notFound('organisation');
  return org;
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

  async createFault(c: Context, scope: Scope) {
    const { kind, orgId, times = 1 } = c.request.requestBody as { kind: FaultKind; orgId: string; times?: number };
    if (!(await scope.services.store.getOrganisation(orgId))) throw notFound('organisation');
    await scope.services.store.setFault(orgId, kind, times);
    return ok({ ok: true });
  },
};

/** Every check of the suite, in report order: one file per group. */
import { Registry } from '../../../runner/registry.ts';
import { bearerChecks } from './auth.ts';
import { configurationChecks } from './configuration.ts';
import { explorationChecks } from './exploration.ts';
import { idempotencyChecks } from './idempotency.ts';
import { lifecycleChecks } from './lifecycle.ts';
import { readChecks } from './reads.ts';
import { responseChecks } from './responses.ts';
import { retryChecks } from './hook-retries.ts';
import { tokenChecks } from './token.ts';
import { validationChecks } from './validation.ts';
import { webhookChecks } from './hook-events.ts';

export const groups = {
  token: tokenChecks,
  bearer: bearerChecks,
  validation: validationChecks,
  configuration: configurationChecks,
  idempotency: idempotencyChecks,
  reads: readChecks,
  lifecycle: lifecycleChecks,
  webhooks: webhookChecks,
  retries: retryChecks,
  exploration: explorationChecks,
  responses: responseChecks,
};

export function createRegistry(): Registry {
  return new Registry().register(...Object.values(groups).flat());
}

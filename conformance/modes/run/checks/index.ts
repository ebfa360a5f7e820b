/** Every check of the suite, in report order: one file per group. */
import { Registry } from '../../../runner/registry.ts';
import type { CheckContext } from '../context/check-context.ts';
import { bearerChecks } from './auth.ts';
import { configurationChecks } from './cfg.ts';
import { explorationChecks } from './expl.ts';
import { idempotencyChecks } from './idem.ts';
import { inputChecks } from './inp.ts';
import { organisationChecks } from './org.ts';
import { lifecycleChecks } from './life.ts';
import { readChecks } from './read.ts';
import { responseChecks } from './resp.ts';
import { retryChecks } from './hook/retries.ts';
import { tokenChecks } from './token.ts';
import { validationChecks } from './val.ts';
import { webhookChecks } from './hook/events.ts';

export const groups = {
  token: tokenChecks,
  bearer: bearerChecks,
  validation: validationChecks,
  configuration: configurationChecks,
  idempotency: idempotencyChecks,
  reads: readChecks,
  inputs: inputChecks,
  organisations: organisationChecks,
  lifecycle: lifecycleChecks,
  webhooks: webhookChecks,
  retries: retryChecks,
  exploration: explorationChecks,
  responses: responseChecks,
};

export function createRegistry(): Registry<CheckContext> {
  return new Registry<CheckContext>().register(...Object.values(groups).flat());
}

/** Every traffic check, in id order: the service's side, the webhook deliveries, the clients' side. */
import type { RegisteredCheck } from '../../../runner/check-definition.ts';
import { Registry } from '../../../runner/registry.ts';
import type { TrafficRun } from '../context.ts';
import { clientChecks } from './clients.ts';
import { serviceChecks } from './service.ts';
import { webhookChecks } from './webhooks.ts';

export function createTrafficRegistry(): Registry<TrafficRun> {
  return new Registry<TrafficRun>().register(...serviceChecks, ...webhookChecks, ...clientChecks);
}

export const trafficChecks = (): RegisteredCheck<TrafficRun>[] => createTrafficRegistry().all();

/**
 * CLIENT-*: the document's rules for API clients (Authentication, Idempotency rules, HTTP
 * statuses, Codes and client guidance, States, Events, Versioning), judged on what a
 * client sends and says in scripted scenarios. Each check runs a scenario of its own, or
 * reads the shared one of plain traffic; what happened is judged from the requests the
 * scripted service recorded and the outcomes the driver gave, never from the client's code.
 * One file per section of the document; the report lists them in id order.
 */
import { Registry } from '../../../runner/registry.ts';
import type { ClientRun } from '../context.ts';
import { authChecks } from './auth.ts';
import { conventionChecks } from './conventions.ts';
import { errorChecks } from './errors.ts';
import { eventChecks } from './events.ts';
import { idempotencyChecks } from './idempotency.ts';
import { redirectChecks } from './redirect.ts';
import type { ClientCheck } from '../scenarios.ts';
import { stateChecks } from './states.ts';

export { totalsOf } from '../scenarios.ts';

export const clientChecks: ClientCheck[] = [
  ...authChecks,
  ...conventionChecks,
  ...idempotencyChecks,
  ...errorChecks,
  ...stateChecks,
  ...eventChecks,
  ...redirectChecks,
].sort((a, b) => a.id.localeCompare(b.id));

export function createClientRegistry(): Registry<ClientRun> {
  return new Registry<ClientRun>().register(...clientChecks);
}

/**
 * Before the webhook checks: one payment completed with its webhookUrl at the suite's
 * receiver, and its delivery awaited (--settle-timeout). When none arrives, no webhook
 * check can be judged (a check that sees nothing would blame the target for what may be
 * a network path), so each ends as a setup error quoting the target's own delivery
 * record where the adapter can read it. When the target refuses the receiver's address
 * (the document requires webhookUrl to be HTTPS and public), each is skipped with the way
 * to make it run.
 */
import { AdapterError } from '../../core/adapter.ts';
import { sessionBody } from './context/api.ts';
import { CheckContext } from './context/check-context.ts';
import type { Preflight, RunContext } from './context/run-context.ts';
import { text } from '../../core/json.ts';
import { CheckFailure, CheckSkipped } from '../../core/outcome.ts';

export async function deliveryPreflight(run: RunContext): Promise<Preflight> {
  const records = run.has('webhookDeliveries');
  const ctx = new CheckContext(run, 'PREFLIGHT', records ? ['attempt', 'webhookDeliveries'] : ['attempt']);
  const waitS = run.settings.settleTimeoutMs / 1000;
  try {
    const org = await ctx.target.sharedOrganisation();
    const hook = ctx.hooks.hook('delivery');
    const created = await ctx.api.createSession(org, sessionBody({ checkoutMethod: 'card', webhookUrl: hook.url }));
    ctx.hooks.skipWhenRefused(created, hook.url);
    const id = text(created.json, 'id');
    if (created.status !== 200 || id === undefined)
      return {
        ok: false,
        status: 'error',
        reason: `the delivery preflight could not create a session with webhookUrl ${hook.url} (status ${created.status}): ${run.redactor.clip(created.text, 200)}`,
      };
    await ctx.target.pay(org, id, 'card', 'succeeded');
    // Any delivery shows the target reaches the receiver, one of another event kind too
    // (the checks then judge what kind it sent).
    if ((await ctx.hooks.waitFor(hook, 1)).length > 0 || ctx.hooks.receivedOther(hook).length > 0) return { ok: true };
    let record = '';
    if (records) {
      const found = await ctx.target.deliveries({ checkoutSessionId: id });
      record =
        found.length === 0
          ? '; the target records no delivery attempt for it'
          : `; the target's own record: ${found
              .map(
                (d) =>
                  `attempt ${d.attempt} to ${d.url} at ${d.at}: ${d.responseStatus ?? `no answer (${d.error ?? 'no error given'})`}`,
              )
              .join('; ')}`;
    }
    return {
      ok: false,
      status: 'error',
      reason: `no webhook reached the suite's receiver (${run.receiver.publicUrl}) within ${waitS} s of a payment completing${record}. The target must be able to reach it: --receiver-public-url, --receiver-host, or --receiver-tls with its CA trusted by the target`,
    };
  } catch (error) {
    if (error instanceof CheckSkipped) return { ok: false, status: 'skipped', reason: error.message };
    if (error instanceof AdapterError || error instanceof CheckFailure)
      return { ok: false, status: 'error', reason: `the delivery preflight failed: ${error.message}` };
    throw error;
  }
}

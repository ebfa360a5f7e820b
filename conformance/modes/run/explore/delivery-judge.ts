/**
 * The deliveries of an explored sequence (Events; Signature header; Webhook signing secret):
 * awaited once a payment with a webhookUrl completes, and each one that arrives judged.
 */
import { at, show } from '../../../core/json.ts';
import { poll } from '../../../core/poll.ts';
import { isOtherEvent } from '../capture-receiver.ts';
import type { Received } from '../../../core/exchange.ts';
import { payloadProblems } from '../../../rules/payload.ts';
import { headerFormatProblem, unixSecondsProblem, verifies } from '../../../rules/signature.ts';
import { Divergence } from './judge.ts';
import { BODIES } from './inputs.ts';
import type { Model } from './model.ts';
import { orgName, type World } from './world.ts';

/** Waits for the payment's first delivery (a webhook is due once it completed). */
export async function awaitDelivery(m: Model, w: World, payment: number): Promise<void> {
  const timeoutMs = w.run.settings.settleTimeoutMs;
  const got = await poll(
    async () => w.deliveries().filter((d) => names(m, w, d, payment)),
    (found) => found.length > 0,
    timeoutMs,
  );
  if (got.length === 0)
    throw new Divergence(
      `No webhook arrived within ${timeoutMs / 1000} s of ${m.payments[payment]!.kind} ${w.payments[payment]!.id} completing with a webhookUrl.`,
      ['state.completed-webhook', 'event.completed', 'svc.hook'],
      w.exchanges.at(-1),
    );
}

/** Does the delivery name this payment (its session id, or the link's transaction id)? */
function names(m: Model, w: World, d: Received, payment: number): boolean {
  const id = w.payments[payment]!.id;
  return m.payments[payment]!.kind === 'link'
    ? at(d.body, 'transactionId') === id
    : at(d.body, 'checkoutSessionId') === id;
}

/**
 * Every delivery that arrived since the last step: the payment it names must have
 * completed (no event for failure or expiry), its payload says what the document says,
 * and its signature verifies with the organisation's secret of the time.
 */
export async function judgeDeliveries(m: Model, w: World): Promise<void> {
  for (const d of w.deliveries()) {
    if (w.judged.has(d)) continue;
    w.judged.add(d);
    const fail: Fail = (message, clauses) => {
      throw new Divergence(message, clauses, undefined, d);
    };
    const payment = m.payments.findIndex((_, i) => names(m, w, d, i) && w.payments[i]!.hookPath === d.path);
    if (payment < 0)
      fail(`A delivery to ${d.path} names no payment created with that webhookUrl: ${show(d.body)}.`, [
        'target.none',
        'conv.webhook-address',
      ]);
    const p = m.payments[payment]!;
    // Event kinds will be added: one about a payment paid or in flight is not judged; for
    // failure and expiry the document sends none of any kind.
    if (isOtherEvent(d) && (p.status === 'completed' || p.status === 'pending')) continue;
    if (p.status !== 'completed')
      fail(
        `A webhook arrived for ${p.kind} ${w.payments[payment]!.id}, which is ${p.status}: only completion sends one.`,
        ['event.none', 'state.expiry-silent', 'event.completed'],
      );
    if (d.method !== 'POST' || !/^application\/json\b/i.test(String(d.headers['content-type'])))
      fail(`Deliveries are POST application/json; this one is ${d.method} ${String(d.headers['content-type'])}.`, [
        'receiver.post',
      ]);
    const spec = p.kind === 'session' ? BODIES[p.body]! : undefined;
    const problems = payloadProblems(d.body, {
      checkoutSessionId: p.kind === 'session' ? w.payments[payment]!.id : null,
      foreignTransactionId: spec?.foreignTransactionId ?? null,
    });
    if (problems.length > 0)
      fail(
        `The delivery for ${p.kind} ${w.payments[payment]!.id}: ${problems.map((x) => x.problem).join('; ')} (${show(d.body)}).`,
        problems.map((x) => x.clause),
      );
    judgeSignature(w, p.org, d, fail);
  }
}

/** How long after a rotation a delivery signed just before it may still arrive. */
const ROTATION_OVERLAP_MS = 2000;

type Fail = (message: string, clauses: string[]) => never;

function judgeSignature(w: World, org: number, d: Received, fail: Fail): void {
  const secrets = w.secrets[org]!;
  if (secrets.length === 0) return; // a --config profile without its secret: nothing to verify with
  const header = d.headers['service-signature'];
  if (typeof header !== 'string')
    fail('A delivery the service can sign came without Service-Signature.', ['sig.header']);
  const format = headerFormatProblem(header) ?? unixSecondsProblem(d, w.orgs[org]!.clockMovedS);
  if (format) fail(`A delivery for ${orgName(org)}: ${format}`, ['sig.format']);
  // The secret of the time the delivery was signed: the current one, or the one before it
  // when the rotation happened just as the delivery was on its way.
  const current = secrets.findLastIndex((s) => s.since <= d.receivedAt);
  const allowed = [secrets[current]!];
  if (current > 0 && d.receivedAt - secrets[current]!.since < ROTATION_OVERLAP_MS) allowed.push(secrets[current - 1]!);
  if (allowed.some((s) => verifies(d, s.secret))) return;
  const older = secrets.slice(0, Math.max(0, current)).some((s) => verifies(d, s.secret));
  fail(
    older
      ? `The delivery is signed with ${orgName(org)}'s replaced secret: after a rotation every delivery is signed with the new one.`
      : `The delivery's signature does not verify with ${orgName(org)}'s signing secret over the raw body.`,
    older ? ['secret.rotation'] : ['sig.digest', 'sig.format', 'secret.scope'],
  );
}

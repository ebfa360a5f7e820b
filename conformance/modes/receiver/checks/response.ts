/**
 * RCV checks of Response and retry behaviour (Events): a valid delivery, and a repeat of it,
 * answered 2xx within the five seconds the service waits, and the target's own delivery
 * of a real payment accepted.
 */
import { randomUUID } from 'node:crypto';
import { AdapterError, type Delivery } from '../../../core/adapter.ts';
import type { Check } from '../../../runner/check-definition.ts';
import { CheckFailure, CheckSkipped } from '../../../core/outcome.ts';
import { ANSWER_LIMIT_MS, NEEDS_REAL_PAYMENTS, type ReceiverContext, show } from '../context.ts';

const RETRY = 'Events: Response and retry behaviour';

export const responseChecks: Check<ReceiverContext>[] = [
  {
    id: 'RCV-001',
    clauses: ['retry.success'],
    section: RETRY,
    title: 'a valid signed delivery is accepted (2xx)',
    run: async (r) => r.accepts('A valid signed delivery', await r.signed(JSON.stringify(await r.event()))),
  },
  {
    id: 'RCV-009',
    clauses: ['retry.duplicates'],
    section: RETRY,
    title: 'a repeated delivery of the same event is answered 2xx again',
    run: async (r) => {
      const raw = JSON.stringify(await r.event());
      r.accepts('The first delivery', await r.signed(raw));
      r.accepts('A repeated delivery (same transactionId)', await r.signed(raw));
    },
  },
  {
    id: 'RCV-013',
    clauses: ['retry.wait', 'limit.webhook-wait'],
    section: RETRY,
    title: 'the receiver answers a valid delivery within 5 seconds',
    run: async (r) => {
      const sent = await r.signed(JSON.stringify(await r.event()));
      if (sent.status === null || sent.ms >= ANSWER_LIMIT_MS)
        throw new CheckFailure(`The service waits five seconds; the receiver answered ${show(sent)}.`, {
          evidence: sent.evidence,
        });
    },
  },
  {
    id: 'RCV-017',
    clauses: ['retry.success'],
    section: RETRY,
    title: 'the target’s own delivery of a real completed payment is accepted (2xx)',
    requires: ['webhookDeliveries'],
    run: async (r) => {
      if (!r.payments) throw new CheckSkipped(NEEDS_REAL_PAYMENTS);
      const payment = await r.payments.pay(`order-${randomUUID().slice(0, 8)}`);
      const answered = (d: Delivery) => d.responseStatus !== null || d.error !== null;
      const records = await r.payments.deliveries(payment.checkoutSessionId, (found) => found.some(answered));
      const first = records.find(answered);
      if (!first)
        throw new AdapterError(
          `The target recorded no answered delivery for ${payment.checkoutSessionId} within the settle timeout.`,
        );
      if (first.responseStatus !== null && first.responseStatus >= 200 && first.responseStatus < 300) return;
      throw new CheckFailure(
        `The target's delivery of ${payment.checkoutSessionId} (transaction ${payment.transactionId}) got ${first.responseStatus ?? `no answer (${first.error})`}; check that --secret is the signing secret of the organisation of --client-id.`,
        {
          evidence: {
            request: `the target's delivery to ${first.url} (its record; the suite does not see the bytes)\n${JSON.stringify(records, null, 2)}`,
            response: first.responseStatus !== null ? `HTTP/1.1 ${first.responseStatus}` : `no answer: ${first.error}`,
            curl: '',
          },
        },
      );
    },
  },
];

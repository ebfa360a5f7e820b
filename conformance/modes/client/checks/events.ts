/** CLIENT checks of Events: webhook verification, unknown event values, legacy bodies. */
import { randomUUID } from 'node:crypto';
import { computeSignature, signWebhook } from '@payment-service/client/webhooks';
import { type ClientCheck, EVENTS, expectAnswered, forwardAll, valueIn } from '../scenarios.ts';

export const eventChecks: ClientCheck[] = [
  {
    id: 'CLIENT-018',
    clauses: [
      'sig.format',
      'sig.digest',
      'sig.versions',
      'verify.split',
      'verify.raw',
      'verify.age',
      'sig.reject-unsigned',
    ],
    section: EVENTS,
    title:
      'Webhook verification: a genuine delivery verifies (extra versions, any part order); tampered, foreign, stale and unsigned ones do not',
    async run(run) {
      await run.scenario(forwardAll, async (s) => {
        const secret = s.org.webhookSigningSecret;
        const now = Math.floor(Date.now() / 1000);
        const body = eventBody('checkout_session.completed');
        const header = signWebhook(body, secret, { timestamp: now });
        const v1 = /v1=([0-9a-f]+)/.exec(header)![1];
        const cases: Array<[string, string, Record<string, string>, boolean]> = [
          ['a genuine delivery', body, { 'service-signature': header }, true],
          [
            'a genuine delivery with another version beside v1 and its parts reordered',
            body,
            { 'service-signature': `v2=${'ab'.repeat(32)},v1=${v1},t=${now}` },
            true,
          ],
          [
            'a delivery whose body was changed after signing',
            body.replace('"createdAt"', '"createdAt" '),
            { 'service-signature': header },
            false,
          ],
          [
            'a delivery signed with another secret',
            body,
            { 'service-signature': signWebhook(body, `${secret}x`, { timestamp: now }) },
            false,
          ],
          [
            'a delivery whose t is six minutes old',
            body,
            { 'service-signature': `t=${now - 360},v1=${computeSignature(body, secret, now - 360)}` },
            false,
          ],
          ['a delivery without Service-Signature', body, {}, false],
        ];
        for (const [what, raw, headers, genuine] of cases) {
          const answer = await s.ask({
            op: 'verifyWebhook',
            body: raw,
            headers: { 'content-type': 'application/json', ...headers },
          });
          expectAnswered(s, answer, what);
          const value = valueIn(answer);
          if (genuine && (value?.kind !== 'event' || value.event !== 'checkout_session.completed'))
            s.fail(
              `${what}: the client reports ${s.describe(answer)}; it verifies, as the event checkout_session.completed.`,
            );
          // The transaction is what a receiver deduplicates on: it must come through as sent.
          if (genuine && value?.transactionId !== JSON.parse(raw).transactionId)
            s.fail(
              `${what}: the client reports transactionId ${JSON.stringify(value?.transactionId)}, not the delivery's.`,
            );
          if (!genuine && value) s.fail(`${what}: the client accepts it (${s.describe(answer)}); it must be rejected.`);
        }
      });
    },
  },
  {
    id: 'CLIENT-019',
    clauses: ['event.unknown', 'ver.open-sets'],
    section: EVENTS,
    title: 'A signed event of a kind the client has never seen verifies, and is given back as that kind',
    async run(run) {
      await run.scenario(forwardAll, async (s) => {
        const body = eventBody('checkout_session.disputed');
        const answer = await s.ask({
          op: 'verifyWebhook',
          body,
          headers: {
            'content-type': 'application/json',
            'service-signature': signWebhook(body, s.org.webhookSigningSecret),
          },
        });
        expectAnswered(s, answer, 'A signed event of an unknown kind');
        const value = valueIn(answer);
        if (value?.kind !== 'event' || value.event !== 'checkout_session.disputed')
          s.fail(
            `The client reports ${s.describe(answer)}; receivers ignore unknown events and still answer 2xx, so it must verify and be told apart.`,
          );
      });
    },
  },
  {
    id: 'CLIENT-020',
    clauses: ['legacy.branch', 'sig.reject-unsigned'],
    section: EVENTS,
    title: 'A legacy two-field body (no event, no signature) is rejected, or taken as legacy: never as a signed event',
    async run(run) {
      await run.scenario(forwardAll, async (s) => {
        const body = JSON.stringify({ transactionId: randomUUID(), foreignTransactionId: null });
        const answer = await s.ask({ op: 'verifyWebhook', body, headers: { 'content-type': 'application/json' } });
        expectAnswered(s, answer, 'A legacy two-field delivery');
        const value = valueIn(answer);
        if (value && value.kind !== 'legacy')
          s.fail(`The client takes an unsigned legacy body as ${s.describe(answer)}.`);
      });
    },
  },
];

/** A delivery body as the service sends it (Events: Payload). */
function eventBody(event: string): string {
  return JSON.stringify({
    event,
    createdAt: new Date().toISOString(),
    checkoutSessionId: `cs_${randomUUID().replace(/-/g, '')}`,
    transactionId: randomUUID(),
    foreignTransactionId: null,
  });
}

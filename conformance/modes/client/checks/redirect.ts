/** CLIENT checks of the redirect rule (Endpoints: POST /api/checkout-sessions): ids in a URL are not proof of payment. */
import { randomUUID } from 'node:crypto';
import { AdapterError } from '../../../core/adapter.ts';
import { isSessionRead } from '../service.ts';
import {
  type ClientCheck,
  during,
  expectAnswered,
  forwardAll,
  last,
  SETTLE_TIMEOUT_MS,
  valueIn,
} from '../scenarios.ts';

export const redirectChecks: ClientCheck[] = [
  {
    id: 'CLIENT-021',
    clauses: ['redirect.not-proof', 'svc.read'],
    section: 'Endpoints: POST /api/checkout-sessions',
    title:
      'A redirect carrying ids is not proof of payment: the client reads the session back, and only completed is paid',
    uses: ['attempt'],
    async run(run) {
      await run.scenario(forwardAll, async (s) => {
        const unpaid = await run.sessionOf(s);
        const forged = `https://shop.example.com/thanks?order=1001&transactionId=${randomUUID()}&checkoutSessionId=${unpaid.id}`;
        const answer = await s.ask({ op: 'confirmRedirect', url: forged });
        expectAnswered(s, answer, 'The payer landing on redirectUrl with the ids of an unpaid session');
        if (valueIn(answer)?.paid !== false)
          s.fail(
            `For a redirect naming an unpaid session, the client reports ${s.describe(answer)}: the ids are not proof of payment.`,
          );
        if (!during(s, last(s)).some((r) => isSessionRead(r) && r.url.includes(unpaid.id)))
          s.fail('The client decided without reading the session back.');
        const attempt = run.settings.adapter.attempt;
        if (!attempt || !run.settings.adapter.capabilities.includes('attempt')) return;
        const paid = await run.sessionOf(s);
        let redirectTo: string | null;
        try {
          ({ redirectTo } = await attempt.call(
            run.settings.adapter,
            { kind: 'checkout-session', id: paid.id },
            'card',
            'succeeded',
          ));
        } catch (error) {
          throw new AdapterError(`attempt failed: ${(error as Error).message}`);
        }
        if (!redirectTo) return;
        // A target may complete a payment a moment after the payer is sent back: the client is
        // judged on a session that reads completed, as the suite reads it.
        const deadline = Date.now() + SETTLE_TIMEOUT_MS;
        while ((await run.statusOf(s, paid.id)) !== 'completed')
          if (Date.now() > deadline) return;
          else await new Promise((resolve) => setTimeout(resolve, 250));
        const landed = await s.ask({ op: 'confirmRedirect', url: redirectTo });
        expectAnswered(s, landed, 'The payer landing on redirectUrl after paying');
        if (valueIn(landed)?.paid !== true)
          s.fail(
            `For the redirect of a completed payment, the client reports ${s.describe(landed)}: read back, it is paid.`,
          );
      });
    },
  },
];

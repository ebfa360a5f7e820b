/**
 * The payment lifecycle as reads show it (service document: States and transitions;
 * Redirect rule): completion, a declined attempt that is not final, the redirect.
 */
import type { RunCheck } from '../context/check-context.ts';
import { expect, expectStatus, fail } from '../assert.ts';
import { at, show } from '../../../core/json.ts';
import { CheckSkipped } from '../../../core/outcome.ts';
import { redirectProblem } from '../../../rules/redirect.ts';
import { lifecycleSection } from '../deliveries.ts';

export const lifecycleChecks: RunCheck[] = [
  {
    id: 'LIFE-001',
    clauses: ['state.completed', 'res.read.transaction-type', 'read.confirm', 'svc.read', 'res.read.status'],
    section: lifecycleSection,
    title: 'a succeeded attempt completes the session; transactionType tells the rail of a both session',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      for (const rail of ['card', 'open_banking'] as const) {
        const session = await ctx.api.session(org, { checkoutMethod: 'both' });
        await ctx.target.pay(org, session.id, rail);
        const read = await ctx.api.readSession(org, session.id);
        expectStatus(read, 200, 'reading a paid session');
        const status = at(read.json, 'status');
        expect(
          status === 'completed',
          `A session paid by ${rail} must read completed; received ${show(status)}.`,
          read,
        );
        const type = at(read.json, 'transactionType');
        expect(
          type === rail,
          `transactionType must be ${rail} for a both session paid by ${rail}; received ${show(type)}.`,
          read,
        );
      }
    },
  },
  {
    id: 'LIFE-002',
    clauses: ['state.declined', 'state.failed'],
    section: lifecycleSection,
    title: 'a declined attempt is not final: status failed, and the payer can still pay',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const session = await ctx.api.session(org, { checkoutMethod: 'card' });
      await ctx.target.pay(org, session.id, 'card', 'declined');
      const failed = await ctx.api.readSession(org, session.id);
      const status = at(failed.json, 'status');
      expect(status === 'failed', `After a declined attempt status must be failed; received ${show(status)}.`, failed);
      await ctx.target.pay(org, session.id, 'card', 'succeeded');
      const done = await ctx.api.readSession(org, session.id);
      const after = at(done.json, 'status');
      expect(after === 'completed', `A retry after a decline must be able to complete; received ${show(after)}.`, done);
    },
  },
  {
    id: 'LIFE-004',
    clauses: ['state.pending', 'res.read.status'],
    section: lifecycleSection,
    title: 'a payment in flight (an attempt awaiting bank approval, a card charge processing) reads pending',
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      for (const rail of ['open_banking', 'card'] as const) {
        const session = await ctx.api.session(org, { checkoutMethod: rail });
        await ctx.target.pay(org, session.id, rail, 'pending');
        const read = await ctx.api.readSession(org, session.id);
        expectStatus(read, 200, `reading a session with a ${rail} payment in flight`);
        const status = at(read.json, 'status');
        expect(
          status === 'pending',
          `A session whose ${rail} payment is in flight must read pending; received ${show(status)}.`,
          read,
        );
      }
    },
  },
  {
    id: 'LIFE-005',
    clauses: ['state.expired', 'limit.session', 'state.completed', 'svc.read'],
    section: lifecycleSection,
    title:
      'only a session without payment expires: 24 hours on, a paid one still reads completed and a declined one reads expired',
    requires: ['createOrganisation', 'advanceClock', 'attempt'],
    async run(ctx) {
      const org = await ctx.target.organisation();
      const paid = await ctx.api.session(org, { checkoutMethod: 'card' });
      await ctx.target.pay(org, paid.id, 'card', 'succeeded');
      const declined = await ctx.api.session(org, { checkoutMethod: 'card' });
      await ctx.target.pay(org, declined.id, 'card', 'declined');
      await ctx.target.advanceClock(org, 24 * 3600 + 60);
      const [paidRead, declinedRead] = [
        await ctx.api.readSession(org, paid.id),
        await ctx.api.readSessionUntil(org, declined.id, 'expired'),
      ];
      expectStatus(paidRead, 200, 'reading a paid session 24 hours on');
      expect(
        at(paidRead.json, 'status') === 'completed',
        `A paid session is paid for good (expired means 24 hours without payment); 24 hours on it reads ${show(at(paidRead.json, 'status'))}, not completed.`,
        paidRead,
      );
      expectStatus(declinedRead, 200, 'reading a declined session 24 hours on');
      expect(
        at(declinedRead.json, 'status') === 'expired',
        `A declined attempt is no payment: 24 hours after creation the session must read expired; received ${show(at(declinedRead.json, 'status'))}.`,
        declinedRead,
      );
    },
  },
  {
    id: 'LIFE-003',
    clauses: ['redirect.params', 'create.redirect-url', 'res.transaction'],
    section: lifecycleSection,
    title:
      "on success the redirect carries transactionId and checkoutSessionId and keeps the merchant's own query parameters",
    requires: ['attempt'],
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const redirectUrl = 'https://shop.example.com/checkout/done?order=1001&lang=en&item=a%20b&item=c';
      const session = await ctx.api.session(org, { checkoutMethod: 'card', redirectUrl });
      const { redirectTo } = await ctx.target.pay(org, session.id, 'card');
      if (redirectTo === null) {
        throw new CheckSkipped(
          'the adapter does not say where the payer was sent on success (attempt gave redirectTo null)',
        );
      }
      const problem = redirectProblem(redirectTo, redirectUrl, session.id);
      if (problem) fail(problem);
    },
  },
];

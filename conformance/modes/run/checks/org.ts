/**
 * The organisation a request comes from, for every input that names a resource: a path id,
 * an Idempotency-Key, a transaction id from a redirect. From another organisation it is
 * another's resource, answered 404 not_found (Authentication 8), never given; from the other
 * mode of the same organisation, what the key decides (Authentication 7: test or live is the
 * key's). Each asked every run, not left to the exploration's draw.
 */
import { randomUUID } from 'node:crypto';
import { at, show, text } from '../../../core/json.ts';
import { CheckSkipped, NoVerdict } from '../../../core/outcome.ts';
import { expect, expectError, expectStatus } from '../assert.ts';
import { sessionBody } from '../context/api.ts';
import type { CheckContext, RunCheck } from '../context/check-context.ts';
import type { Org } from '../context/organisations.ts';
import { fixedClass } from '../input-space.ts';

const section = 'Input space: organisations';

function exercised(ctx: CheckContext, id: string): void {
  ctx.run.inputs.add(fixedClass(id).id);
}

/** GET `path` with a token of `org` in `mode`. */
async function read(ctx: CheckContext, org: Org, path: string, mode: 'test' | 'live' = 'test') {
  return ctx.api.send('GET', path, { token: await ctx.api.token(org, mode) });
}

export const organisationChecks: RunCheck[] = [
  {
    id: 'ORG-001',
    clauses: ['auth.isolation', 'read.isolation', 'code.not-found', 'link.endpoints', 'legacy.link'],
    section,
    title:
      'a session, a payment link and a link’s transaction read by another organisation: 404 not_found; read with the same organisation’s other mode: either answer',
    uses: ['paymentLinks'],
    async run(ctx) {
      const owner = await ctx.target.sharedOrganisation();
      const other = await ctx.target.secondOrganisation();
      const session = await ctx.api.session(owner);
      const path = `/api/checkout-sessions/${encodeURIComponent(session.id)}`;
      expectStatus(await read(ctx, owner, path), 200, 'the owner reading its session');
      const foreign = await read(ctx, other, path);
      exercised(ctx, 'read.organisation.other');
      expectError(foreign, 404, 'not_found', 'a session read by another organisation');
      const notes: string[] = [];
      if (owner.keys.live) {
        const live = await read(ctx, owner, path, 'live');
        exercised(ctx, 'read.organisation.other-mode');
        // Whether a mode sees the other's payments, the document does not say: 200 (its own
        // organisation's) or 404 (another mode's) are both right; nothing else is.
        if (live.status !== 200) expectError(live, 404, 'not_found', 'a test session read with a live key');
        else
          expect(
            at(live.json, 'testMode') === true,
            `A test session read with a live key must still say testMode true; it says ${show(at(live.json, 'testMode'))}.`,
            live,
          );
        notes.push(`a test session read with a live key: ${live.status}`);
      }
      const link = await ctx.target.paymentLink(owner, { reference: 'ORG-LINK' }).catch(() => undefined);
      if (link !== undefined) {
        const linkPath = `/api/payment-links/${encodeURIComponent(link)}`;
        expectStatus(await read(ctx, owner, linkPath), 200, 'the owner reading its payment link');
        const foreignLink = await read(ctx, other, linkPath);
        exercised(ctx, 'link.organisation.other');
        expectError(foreignLink, 404, 'not_found', 'a payment link read by another organisation');
        // The link id is its transaction id: the retired path must not open it to another either.
        const foreignLegacy = await read(ctx, other, `/api/transaction/${encodeURIComponent(link)}`);
        exercised(ctx, 'legacy.organisation.other');
        expectError(foreignLegacy, 404, 'not_found', 'a link’s transaction read by another organisation');
      } else notes.push('no payment link could be made: links not judged');
      ctx.note = notes.join('; ');
    },
  },
  {
    id: 'ORG-002',
    clauses: ['auth.isolation', 'idem.replay', 'create.ok'],
    section,
    title:
      'another organisation’s Idempotency-Key with an identical body makes the second organisation’s own session, or is refused idempotency_error: never answered with the first one’s',
    async run(ctx) {
      const first = await ctx.target.sharedOrganisation();
      const second = await ctx.target.secondOrganisation();
      const key = ctx.newKey();
      const body = sessionBody({ foreignTransactionId: `org-${randomUUID()}` });
      const made = await ctx.api.createSession(first, body, { idempotencyKey: key });
      expectStatus(made, 200, 'the first organisation’s create');
      const firstId = text(made.json, 'id');
      const theirs = await ctx.api.createSession(second, body, { idempotencyKey: key });
      exercised(ctx, 'create.organisation.key-other');
      // The keys' scope the document leaves open: a target keeping them across organisations
      // may refuse the reuse (idempotency_error); what it may never do is give the first one's session.
      if (theirs.status === 400) {
        expectError(theirs, 400, 'idempotency_error', 'the second organisation’s create with the same key and body');
        ctx.note = 'the key reused by another organisation was refused idempotency_error';
        return;
      }
      expectStatus(theirs, 200, 'the second organisation’s create with the same key and body');
      const secondId = text(theirs.json, 'id');
      expect(
        secondId !== undefined && secondId !== firstId,
        `The second organisation's create with the first one's Idempotency-Key and an identical body was answered with the first organisation's session ${show(firstId)}: a resource of another organisation, which the document answers 404, never gives.`,
        theirs,
      );
      expectStatus(
        await read(ctx, second, `/api/checkout-sessions/${encodeURIComponent(secondId!)}`),
        200,
        'the second organisation reading the session its create gave',
      );
      expectError(
        await read(ctx, first, `/api/checkout-sessions/${encodeURIComponent(secondId!)}`),
        404,
        'not_found',
        'the first organisation reading the second one’s session',
      );
    },
  },
  {
    id: 'ORG-003',
    clauses: ['auth.mode', 'conv.mode', 'res.create.test-mode', 'create.ok'],
    section,
    title:
      'the test mode’s Idempotency-Key with an identical body, sent with a live key, makes a live session or is refused idempotency_error: never answered with the test payment',
    async run(ctx) {
      const org = await ctx.target.organisation();
      if (!org.keys.live) {
        throw new CheckSkipped(
          'needs an organisation with a live key: createOrganisation, or a --config profile with liveClientId and liveClientSecret',
          ['createOrganisation'],
        );
      }
      const key = ctx.newKey();
      const body = sessionBody({ foreignTransactionId: `mode-${randomUUID()}` });
      const test = await ctx.api.createSession(org, body, { idempotencyKey: key });
      expectStatus(test, 200, 'the test-mode create');
      const live = await ctx.api.createSession(org, body, { idempotencyKey: key, mode: 'live' });
      exercised(ctx, 'create.organisation.key-other-mode');
      // Keys kept per organisation whatever the mode (the scope is open) may refuse the reuse;
      // never may a live key's create be answered with the test payment.
      if (live.status === 400) {
        expectError(live, 400, 'idempotency_error', 'the live-mode create with the test create’s key and body');
        ctx.note = 'the test key reused in live mode was refused idempotency_error';
        return;
      }
      expectStatus(live, 200, 'the live-mode create with the test create’s key and body');
      expect(
        at(live.json, 'testMode') === false && text(live.json, 'id') !== text(test.json, 'id'),
        `A create with a live key must make a live payment (testMode false), whatever a test create did with the same Idempotency-Key; it was answered ${show(text(live.json, 'id'))} with testMode ${show(at(live.json, 'testMode'))} (the test create made ${show(text(test.json, 'id'))}).`,
        live,
      );
    },
  },
  {
    id: 'ORG-004',
    clauses: ['auth.isolation', 'code.not-found', 'link.endpoints', 'legacy.retired', 'redirect.params'],
    section,
    title:
      'a paid session’s transactionId (from its redirect) names no payment link, and the retired transaction path answers it 404, for its organisation and another',
    requires: ['attempt'],
    async run(ctx) {
      const owner = await ctx.target.sharedOrganisation();
      const other = await ctx.target.secondOrganisation();
      const session = await ctx.api.session(owner, { checkoutMethod: 'card' });
      const { redirectTo } = await ctx.target.pay(owner, session.id, 'card', 'succeeded');
      const transactionId =
        redirectTo && URL.canParse(redirectTo) ? new URL(redirectTo).searchParams.get('transactionId') : null;
      // The redirect itself is LIFE-003's to judge: without a transactionId there is nothing to try here.
      if (transactionId === null)
        throw new NoVerdict(
          `Not judged: the paid session's redirect ${show(redirectTo)} gives no transactionId to try.`,
        );
      for (const [org, whose] of [
        [owner, 'its organisation'],
        [other, 'another organisation'],
      ] as const) {
        const link = await read(ctx, org, `/api/payment-links/${encodeURIComponent(transactionId!)}`);
        exercised(ctx, 'link.organisation.transaction');
        expectError(link, 404, 'not_found', `a session's transactionId read as a payment link by ${whose}`);
        const legacy = await read(ctx, org, `/api/transaction/${encodeURIComponent(transactionId!)}`);
        exercised(ctx, 'legacy.organisation.transaction');
        expectError(legacy, 404, 'not_found', `a session's transactionId on the retired path, by ${whose}`);
      }
    },
  },
];

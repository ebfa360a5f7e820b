/**
 * One predicate per rule: a hand-written check and the exploration judge a rule through the same
 * predicate (conformance/rules/), so one run gives one verdict. Shown on the case that once
 * split them, the success redirect (LIFE-003 and EXPL-001, clause redirect.params): a
 * parameter of the target's own beside the two ids passes both; a value added to the
 * merchant's own parameter fails both.
 *
 * @tags long
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explain } from '../support/conformance-cli.ts';
import { pathOf, runVariant } from '../support/conformance-variants.ts';
import { editJson, type Mutation } from '../support/mutating-proxy.ts';
import { paced } from '../support/pace.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
});
afterAll(async () => {
  await t?.close();
});

/** The target sends the payer of every paid session somewhere else than the reference server does. */
const redirect = (edit: (url: URL) => void): Mutation => ({
  response: (m, r) =>
    /^\/sandbox\/checkout-sessions\/[^/]+\/attempts$/.test(pathOf(m)) && r.status === 200
      ? editJson(r, (b) => {
          if (typeof b.redirectTo !== 'string') return b;
          const url = new URL(b.redirectTo);
          edit(url);
          return { ...b, redirectTo: url.toString() };
        })
      : r,
});

// Both runs draw the same sequences from one seed: the defect is found in one of them, so the
// legal variant's run goes through that sequence's paid session and its redirect too.
const RUN = { only: 'LIFE-003,EXPL-001', args: ['--explore-cases', '30', '--seed', '1'] };

describe('LIFE-003 and EXPL-001 give one verdict on the success redirect', () => {
  it(
    'a parameter of the target’s own beside transactionId and checkoutSessionId: both pass',
    async () => {
      const run = await runVariant(
        t.url,
        { name: 'own parameter', api: redirect((url) => url.searchParams.append('utm_source', 'payments')), ...RUN },
        'pass',
      );
      expect(run.code, explain(run)).toBe(0);
      expect(run.result('LIFE-003').status, explain(run)).toBe('passed');
      expect(run.result('EXPL-001').status, explain(run)).toBe('passed');
    },
    paced(300_000),
  );

  it(
    'a value added to the merchant’s own order parameter: both fail, citing redirect.params',
    async () => {
      const run = await runVariant(t.url, {
        name: 'merchant parameter changed',
        api: redirect((url) => url.searchParams.append('order', '0')),
        ...RUN,
      });
      expect(run.code, explain(run)).toBe(1);
      for (const id of ['LIFE-003', 'EXPL-001']) {
        expect(run.result(id).status, explain(run)).toBe('failed');
        expect(run.result(id).reason).toMatch(/merchant's own query parameter order=\S+ must be kept as it was/);
      }
      expect(run.result('EXPL-001').clauses).toContain('redirect.params');
    },
    paced(300_000),
  );
});

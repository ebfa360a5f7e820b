/**
 * Targets the suite may not judge in full, and how it says so rather than failing them
 * (service document: what is not part of the contract): a suite too slow to judge a
 * token's five minutes gives no verdict; a target that throttles (429) is waited out, or
 * left unjudged; a target that refuses the suite's plain-http receiver, or answers the
 * modelled legacy request in a shape of its own, has those checks skipped, saying why; a
 * payment link of another shape differs from our modelling only at level assumption.
 *
 * @tags long
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explain } from '../support/conformance-cli.ts';
import { parse, pathOf, runVariant } from '../support/conformance-variants.ts';
import { editJson, type Message, type Mutation } from '../support/mutating-proxy.ts';
import { paced } from '../support/pace.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
});
afterAll(async () => {
  await t?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.concurrent('targets the suite does not judge in full: no verdict, skipped or differs, never failed', () => {
  it(
    'a suite too slow to tell a token refused early from one five minutes old gives no verdict (AUTH-007)',
    async () => {
      // The clock's move is answered fifteen seconds late and every read of a session reaches
      // the target eighteen seconds after the suite sent it (the suite's reachability probe
      // aside): the token is past its five minutes by the time its read arrives, and the target
      // is right to refuse it.
      const lateReads: Mutation = {
        request: async (m) => {
          if (m.method === 'GET' && /^\/api\/checkout-sessions\/cs_(?!conformance_preflight)/.test(pathOf(m)))
            await sleep(18_000);
          if (m.method === 'POST' && /^\/sandbox\/organisations\/[^/]+\/clock$/.test(pathOf(m))) await sleep(15_000);
          return m;
        },
      };
      const run = await runVariant(t.url, { name: 'late reads', api: lateReads, only: 'AUTH-007' });
      expect(run.code, explain(run)).toBe(2);
      expect(run.result('AUTH-007').status).toBe('error');
      expect(run.result('AUTH-007').reason).toMatch(
        /may have been five minutes old when the target judged it\. The suite was too late to judge this\.$/,
      );
    },
    paced(180_000),
  );

  it(
    'a target that throttles (429, the rate limits the document does not show): waited out as Retry-After asks, never a verdict',
    async () => {
      const throttled = (reply: (m: Message) => boolean): Mutation => ({
        request: (m) =>
          reply(m)
            ? { status: 429, headers: { 'retry-after': '1', 'content-type': 'application/json' }, body: '{}' }
            : m,
      });
      // The first try of every public API request throttled: the verdicts are those of the target.
      const seen = new Set<string>();
      const firstTries = throttled((m) => {
        if (!pathOf(m).startsWith('/api/')) return false;
        const key = `${m.method} ${m.url} ${m.headers.authorization ?? ''} ${m.body}`;
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      });
      const once = await runVariant(t.url, {
        name: 'first tries throttled',
        api: firstTries,
        only: 'TOKEN-*,AUTH-008',
      });
      expect(once.code, explain(once)).toBe(0);
      expect(once.report!.summary.failed, explain(once)).toBe(0);
      // One request throttled whatever the wait: its check has no verdict (error), not failed.
      const always = throttled((m) => pathOf(m) === '/api/token' && /clientId=[^&]*x9(&|$)/.test(m.body));
      const run = await runVariant(t.url, { name: 'throttled for good', api: always, only: 'TOKEN-005,TOKEN-001' });
      expect(run.code, explain(run)).toBe(2);
      expect(run.result('TOKEN-005').status).toBe('error');
      expect(run.result('TOKEN-005').reason).toMatch(/answered 429 after \d+ s of waiting as its Retry-After asked/);
      expect(run.result('TOKEN-001').status).toBe('passed');
    },
    paced(120_000),
  );

  it(
    'a target that refuses the suite’s plain-http receiver address (webhookUrl must be HTTPS): webhook checks are skipped with what to do, nothing fails',
    async () => {
      // The document requires webhookUrl to be HTTPS and publicly reachable: a strict target
      // refuses http://127.0.0.1 with 400 validation_failed param webhookUrl (here: the server's
      // own answer for a public http:// address).
      const strict: Mutation = {
        request: (m) => {
          const body =
            m.method === 'POST' &&
            ['/api/checkout-sessions', '/api/payment-links', '/api/transaction'].includes(pathOf(m))
              ? parse(m.body)
              : undefined;
          if (typeof body?.webhookUrl !== 'string' || !body.webhookUrl.startsWith('http://127.0.0.1')) return m;
          return { ...m, body: JSON.stringify({ ...body, webhookUrl: 'http://shop.example.com/hooks' }) };
        },
      };
      const run = await runVariant(t.url, {
        name: 'https only',
        api: strict,
        only: 'HOOK-001,HOOK-006,HOOK-007,HOOK-010,HOOK-021,HOOK-022,HOOK-023,VAL-031,LIFE-001',
        args: ['--reporter', 'console,json'],
      });
      expect(run.code, explain(run)).toBe(0);
      expect(run.report!.summary.failed, explain(run)).toBe(0);
      for (const id of ['HOOK-001', 'HOOK-006', 'HOOK-007', 'HOOK-010', 'HOOK-021', 'HOOK-022', 'HOOK-023']) {
        expect(run.result(id).status, explain(run)).toBe('skipped');
        expect(run.result(id).reason).toMatch(/--receiver-public-url https:\/\//);
      }
      for (const id of ['VAL-031', 'LIFE-001']) expect(run.result(id).status, explain(run)).toBe('passed');
      // Every run ends saying how many must checks were judged; asking for all makes the gap a setup error.
      expect(run.stdout.trim().split('\n').at(-1)).toMatch(/^2 of 9 must checks judged$/);
      const all = await runVariant(t.url, {
        name: 'https only, all required',
        api: strict,
        only: 'HOOK-001,HOOK-006,LIFE-001',
        args: ['--require-capabilities', 'all', '--reporter', 'json,console'],
      });
      expect(all.code, explain(all)).toBe(2);
      for (const id of ['HOOK-001', 'HOOK-006']) {
        expect(all.result(id).status, explain(all)).toBe('error');
        expect(all.result(id).reason).toMatch(/^--require-capabilities all: not judged: the target refused/);
      }
      expect(all.result('LIFE-001').status, explain(all)).toBe('passed');
      // The verdict names the real reason: no adapter call failed here.
      expect(all.stdout).toContain(
        'ERROR: 2 checks could not be judged (2: not judged, and --require-capabilities all asks for every must check)',
      );
      expect(all.stdout).not.toContain('adapter call failed');
    },
    paced(120_000),
  );

  it(
    'POST /api/transaction answering another shape (not shown by the document): the legacy checks are skipped, not failed',
    async () => {
      const otherShape: Mutation = {
        response: (m, r) =>
          m.method === 'POST' && pathOf(m) === '/api/transaction' && r.status === 200
            ? editJson(r, (b) => ({ id: `txn_${String(b.transactionId).replace(/-/g, '')}` }))
            : r,
      };
      const run = await runVariant(t.url, { name: 'legacy shape', api: otherShape, only: 'HOOK-022,HOOK-025' });
      expect(run.code, explain(run)).toBe(0);
      for (const id of ['HOOK-022', 'HOOK-025']) {
        expect(run.result(id).status, explain(run)).toBe('skipped');
        expect(run.result(id).reason).toMatch(/UUID transactionId/);
      }
    },
    paced(120_000),
  );

  it(
    'a payment link read answering another shape (a modelled operation) differs only in RESP-004, at level assumption: exit 0',
    async () => {
      const linkShape: Mutation = {
        response: (m, r) =>
          m.method === 'GET' && /^\/api\/payment-links\//.test(pathOf(m)) && r.status === 200
            ? editJson(r, (b) => ({ ...b, amount: 'fifteen' }))
            : r,
      };
      const run = await runVariant(t.url, {
        name: 'link shape',
        api: linkShape,
        only: 'READ-008,RESP-001,RESP-002,RESP-003,RESP-004',
      });
      expect(run.code, explain(run)).toBe(0);
      expect(run.result('RESP-004').status).toBe('differs');
      expect(run.result('RESP-004').level).toBe('assumption');
      expect(run.result('RESP-004').assumption).toMatch(/payment links, legacy transactions/);
      expect(run.report!.summary.failed, explain(run)).toBe(0);
      for (const id of ['READ-008', 'RESP-001', 'RESP-002', 'RESP-003'])
        expect(run.result(id).status, explain(run)).toBe('passed');
    },
    paced(120_000),
  );
});

/**
 * Several `payment-server` processes on one PostgreSQL database are one service: behind a
 * round-robin proxy (no affinity) the whole conformance suite passes, concurrent creates
 * with one key make one payment, the hosted page works through any server, and killing a
 * server under load loses no acknowledged create while its webhook attempts pass to a
 * survivor, each made once. Skipped, with the other PostgreSQL tests, where none answers.
 *
 * @tags long
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, explain, expectPassed, runSuite } from '../support/conformance-cli.ts';
import { type Instance, startInstances } from '../support/instances.ts';
import { type FreshDatabase, freshDatabase, postgresAvailable } from '../support/postgres.ts';
import { startReceiver } from '../support/receiver.ts';
import { type RoundRobinProxy, roundRobinProxy } from '../support/round-robin-proxy.ts';
import { checkedRequest, sessionRequest } from '../support/server.ts';
import { paced, until } from '../support/pace.ts';

const SANDBOX = 'sbx_multi_instance';

/** A service of `count` servers on a fresh database behind a round-robin proxy. */
async function service(count: number) {
  const db = await freshDatabase();
  const proxy = await roundRobinProxy();
  const instances = await startInstances(count, { db: db.url, sandboxToken: SANDBOX, publicUrl: proxy.url });
  proxy.upstreams.push(...instances.map((i) => i.url));
  return { db, proxy, instances };
}

async function teardown(parts: { db: FreshDatabase; proxy: RoundRobinProxy; instances: Instance[] } | undefined) {
  if (!parts) return;
  await Promise.all(parts.instances.map((i) => i.stop()));
  await parts.proxy.close();
  await parts.db.drop();
}

/** A client of the service at `base`: sandbox calls, tokens, and checked API requests. */
function client(base: string) {
  const request = (method: string, path: string, options: Parameters<typeof checkedRequest>[3] = {}) =>
    checkedRequest(base, method, path, options);
  const sandbox = async (method: string, path: string, body?: unknown) => {
    const answer = await request(method, path, { token: SANDBOX, body });
    if (answer.status !== 200) throw new Error(`sandbox ${method} ${path}: ${answer.status} ${answer.text}`);
    return answer.body;
  };
  return {
    request,
    sandbox,
    async organisation() {
      const org = await sandbox('POST', '/sandbox/organisations', {
        settlementCurrency: 'NZD',
        cardEnabled: true,
        openBankingApproved: true,
        settlementAccount: true,
      });
      const answer = await request('POST', '/api/token', {
        form: { clientId: org.apiKeys.test.clientId, clientSecret: org.apiKeys.test.clientSecret },
      });
      return { ...org, token: answer.body.accessToken as string };
    },
  };
}

describe.skipIf(!postgresAvailable())('three servers on one PostgreSQL database behind a round-robin proxy', () => {
  let parts: Awaited<ReturnType<typeof service>> | undefined;
  beforeAll(async () => {
    parts = await service(3);
  }, paced(60_000));
  afterAll(() => teardown(parts));

  it(
    'pass the whole conformance suite: no failure, no skip',
    async () => {
      const { proxy } = parts!;
      const listed = (await cli(['list'])).stdout
        .trim()
        .split('\n')
        .filter((line) => !/^(RCV|CLIENT|TRAFFIC)-/.test(line)).length;
      // The exploration too: its sequences meet a different server at every step.
      const run = await runSuite([
        '--base-url',
        proxy.url,
        '--sandbox-token',
        SANDBOX,
        '--reporter',
        'json,console',
        '--explore',
        '5',
        '--seed',
        '20261126',
      ]);
      console.log(run.stdout.split('\n').slice(-6).join('\n'));
      const late = expectPassed(run).length;
      expect(run.report!.summary, explain(run)).toEqual({
        passed: listed - late,
        failed: 0,
        differs: 0,
        skipped: 0,
        error: late,
      });
      // The proxy spread the suite's requests over every server.
      for (const instance of parts!.instances) expect(proxy.answered.get(instance.url) ?? 0).toBeGreaterThan(100);
    },
    paced(240_000),
  );

  it('make one session of 50 concurrent creates with one key, spread over the servers', async () => {
    const c = client(parts!.proxy.url);
    const org = await c.organisation();
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        c.request('POST', '/api/checkout-sessions', {
          token: org.token,
          body: sessionRequest(),
          headers: { 'idempotency-key': key },
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).toHaveLength(49);
  });

  it('serve the hosted page and its test-mode form through any server', async () => {
    const c = client(parts!.proxy.url);
    const org = await c.organisation();
    const session = (await c.request('POST', '/api/checkout-sessions', { token: org.token, body: sessionRequest() }))
      .body;
    for (let i = 0; i < 3; i++) expect((await fetch(session.url)).status).toBe(200);
    const paid = await fetch(`${session.url}/attempts`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'rail=card&outcome=succeeded',
      redirect: 'manual',
    });
    expect(paid.status).toBe(303);
    for (let i = 0; i < 3; i++) {
      const read = await c.request('GET', `/api/checkout-sessions/${session.id}`, { token: org.token });
      expect(read.body.status).toBe('completed');
    }
  });
});

describe.skipIf(!postgresAvailable())('a server killed (SIGKILL) under load, of two on one database', () => {
  let parts: Awaited<ReturnType<typeof service>> | undefined;
  beforeAll(async () => {
    parts = await service(2);
  }, paced(60_000));
  afterAll(() => teardown(parts));

  it(
    'loses no acknowledged create, and its webhook attempts pass to the survivor, each made once',
    async () => {
      const [victim, survivor] = parts!.instances as [Instance, Instance];
      const viaProxy = client(parts!.proxy.url);
      const receiver = await startReceiver();
      try {
        const org = await viaProxy.organisation();
        // Card payments whose first attempt fails (a retry is then due a minute later), and one
        // whose first attempt the victim is making when it dies (the receiver never answers it).
        const failing = [];
        for (let i = 0; i < 5; i++) {
          const path = `/failing/${i}`;
          receiver.behave(path, { status: 500 });
          const body = sessionRequest({ webhookUrl: `${receiver.url}${path}` });
          const s = (await viaProxy.request('POST', '/api/checkout-sessions', { token: org.token, body })).body;
          await viaProxy.sandbox('POST', `/sandbox/checkout-sessions/${s.id}/attempts`, {
            rail: 'card',
            outcome: 'succeeded',
          });
          failing.push({ path, session: s });
        }
        for (const { path } of failing) await receiver.waitFor(path, 1);
        receiver.behave('/hung', { hang: true });
        const hungBody = sessionRequest({ webhookUrl: `${receiver.url}/hung` });
        const direct = client(victim.url);
        const hung = (await direct.request('POST', '/api/checkout-sessions', { token: org.token, body: hungBody }))
          .body;
        await direct.sandbox('POST', `/sandbox/checkout-sessions/${hung.id}/attempts`, {
          rail: 'card',
          outcome: 'succeeded',
        });
        await receiver.waitFor('/hung', 1);

        // Load through the proxy; the victim dies in the middle of it: after as many creates
        // were acknowledged as come after it, however long either takes on this machine.
        const acknowledged: string[] = [];
        let stop = false;
        const worker = async () => {
          while (!stop) {
            const answer = await viaProxy
              .request('POST', '/api/checkout-sessions', {
                token: org.token,
                body: sessionRequest(),
                undocumented: true,
              })
              .catch(() => undefined);
            if (answer?.status === 200) acknowledged.push(answer.body.id);
          }
        };
        const load = Array.from({ length: 8 }, worker);
        await until(
          () => acknowledged.length,
          (n) => n >= 60,
          30_000,
        );
        const beforeKill = acknowledged.length;
        await victim.stop('SIGKILL');
        await until(
          () => acknowledged.length - beforeKill,
          (n) => n >= 60,
          30_000,
        );
        stop = true;
        await Promise.all(load);
        parts!.proxy.upstreams.splice(parts!.proxy.upstreams.indexOf(victim.url), 1);

        const viaSurvivor = client(survivor.url);
        const missing = [];
        for (const id of acknowledged) {
          const read = await viaSurvivor.request('GET', `/api/checkout-sessions/${id}`, { token: org.token });
          if (read.status !== 200) missing.push(id);
        }
        console.log(`SIGKILL under load: ${acknowledged.length} creates acknowledged, ${missing.length} missing`);
        expect(beforeKill).toBeGreaterThanOrEqual(60);
        expect(acknowledged.length - beforeKill).toBeGreaterThanOrEqual(60);
        expect(missing).toEqual([]);

        // The retries fall due a minute later on the organisation's clock; the survivor makes
        // them, and, once the victim's lease on the hung attempt ends, that one's next too.
        for (const { path } of failing) receiver.behave(path, { status: 200 });
        receiver.behave('/hung', { status: 200 });
        await viaSurvivor.sandbox('POST', `/sandbox/organisations/${org.id}/clock`, { advanceSeconds: 61 });
        for (const { path } of failing) await receiver.waitFor(path, 2, 30_000);
        const deliveries = async (id: string) =>
          (await viaSurvivor.sandbox('GET', `/sandbox/webhook-deliveries?checkoutSessionId=${id}`))
            .deliveries as Array<{
            attempt: number;
            responseStatus: number | null;
            error: string | null;
          }>;
        // The receiver sees an attempt before the sender has recorded its answer: read until
        // the record holds as many attempts as the receiver saw.
        const recorded = (id: string, count: number) =>
          until(
            () => deliveries(id),
            (found) => found.length >= count,
            30_000,
          );
        for (const { path, session } of failing) {
          expect(receiver.deliveries.filter((d) => d.path === path)).toHaveLength(2);
          expect((await recorded(session.id, 2)).map((d) => [d.attempt, d.responseStatus])).toEqual([
            [1, 500],
            [2, 200],
          ]);
        }
        // The hung attempt: the victim's lease ends, the survivor records it as interrupted
        // (attempt 1, failed) and makes attempt 2 a minute later on the organisation's clock.
        await recorded(hung.id, 1);
        await viaSurvivor.sandbox('POST', `/sandbox/organisations/${org.id}/clock`, { advanceSeconds: 61 });
        await receiver.waitFor('/hung', 2, 30_000);
        const hungDeliveries = await recorded(hung.id, 2);
        expect(hungDeliveries.map((d) => d.attempt)).toEqual([1, 2]);
        expect(hungDeliveries[0]!.error).toMatch(/interrupted/);
        expect(hungDeliveries[1]!.responseStatus).toBe(200);
        expect(receiver.deliveries.filter((d) => d.path === '/hung')).toHaveLength(2);
      } finally {
        await receiver.close();
      }
    },
    paced(120_000),
  );
});

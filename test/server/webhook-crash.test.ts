/**
 * Webhook delivery across a crash (service document: Events, Response and retry
 * behaviour: card rail, up to three attempts in total, from a queue; the body, and so
 * `createdAt`, identical on a repeated delivery; every delivery signed). The server runs
 * as a child process (its bin, through test/support/instances.ts) on a SQLite file and is killed with
 * SIGKILL, then started again on the same file:
 *
 * 1. attempt 1 of each card webhook fails (the receiver answers 500) and is recorded;
 *    the server is killed; after the restart and one minute on the organisation's clock,
 *    attempt 2 is made and succeeds: the count continued ([1, 2]), it was not reset, and
 *    the receiver got two byte-identical, validly signed bodies per transaction.
 * 2. the server is killed the moment the card payments complete, with the first delivery
 *    maybe not started, maybe in flight (the receiver is slow to answer): after restart
 *    every webhook arrives, attempt numbers run 1, 2, ... with no gap or repeat, never more
 *    than three, and the receiver never saw more deliveries than were recorded.
 *
 * @tags long, slow
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNATURE_HEADER, verifyWebhook } from '../../client/webhooks.ts';
import { type Instance, startInstance } from '../support/instances.ts';
import { type Delivery as Arrival, type Receiver, startReceiver } from '../support/receiver.ts';
import { checkedRequest, sessionRequest } from '../support/server.ts';
import { paced } from '../support/pace.ts';

const SANDBOX = 'crash-test-sandbox-token';
const N = 3;

const tmp = mkdtempSync(path.join(os.tmpdir(), 'payment-crash-'));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `check` returns a value other than undefined/false, or fails with `what` and the last state. */
async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
  describeState?: () => unknown,
): Promise<T> {
  const deadline = Date.now() + paced(timeoutMs);
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${paced(timeoutMs)} ms waiting for ${what}${describeState ? `\nlast state: ${JSON.stringify(describeState(), null, 2)}` : ''}`,
      );
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------
// The server as a child process

const instances = new Set<Instance>();

async function startServer(db: string): Promise<Instance> {
  const server = await startInstance(['--db', db, '--sandbox-token', SANDBOX]);
  instances.add(server);
  void server.exited.then(() => instances.delete(server));
  return server;
}

async function kill(server: Instance): Promise<void> {
  server.child.kill('SIGKILL');
  const { signal } = await server.exited;
  expect(signal).toBe('SIGKILL');
}

/** A client of one running server; every answer is checked against the descriptions. */
function client(server: Instance) {
  const request = <T = any>(
    method: string,
    pathname: string,
    options: { token?: string; body?: unknown; form?: Record<string, string> } = {},
  ) => checkedRequest<T>(server.url, method, pathname, options);
  async function ok<T = any>(
    method: string,
    pathname: string,
    options: Parameters<typeof request>[2] = {},
  ): Promise<T> {
    const answer = await request<T>(method, pathname, options);
    if (answer.status !== 200) throw new Error(`${method} ${pathname} answered ${answer.status}: ${answer.text}`);
    return answer.body;
  }
  const sandbox = <T = any>(method: string, pathname: string, body?: unknown) =>
    ok<T>(method, pathname, { token: SANDBOX, body });
  return {
    request,
    sandbox,
    token: async (clientId: string, clientSecret: string) =>
      (await ok<{ accessToken: string }>('POST', '/api/token', { form: { clientId, clientSecret } })).accessToken,
    deliveries: async (checkoutSessionId: string) =>
      (
        await sandbox<{ deliveries: Delivery[] }>(
          'GET',
          `/sandbox/webhook-deliveries?checkoutSessionId=${encodeURIComponent(checkoutSessionId)}`,
        )
      ).deliveries,
    advanceClock: (orgId: string, seconds: number) =>
      sandbox('POST', `/sandbox/organisations/${orgId}/clock`, { advanceSeconds: seconds }),
  };
}

interface Delivery {
  transactionId: string;
  url: string;
  attempt: number;
  at: string;
  signed: boolean;
  responseStatus: number | null;
  error: string | null;
  final: boolean;
}

// ---------------------------------------------------------------------------------------
// The merchant's webhook receiver

let receiver: Receiver;
/** What the receiver answers, and how long it waits before answering. */
const behaviour = { status: 500, delayMs: 0 };

const received = () => receiver.deliveries;
const transactionOf = (delivery: Arrival): unknown => delivery.body?.transactionId;
const receivedFor = (transactionId: string) => received().filter((d) => transactionOf(d) === transactionId);

// ---------------------------------------------------------------------------------------
// Shared steps

interface Paid {
  sessionId: string;
  transactionId: string;
}

async function newOrganisation(api: ReturnType<typeof client>) {
  const org = await api.sandbox<{
    id: string;
    webhookSigningSecret: string;
    apiKeys: { test: { clientId: string; clientSecret: string } };
  }>('POST', '/sandbox/organisations', {
    name: 'Crash test merchant',
    settlementCurrency: 'NZD',
    cardEnabled: true,
    openBankingApproved: true,
    settlementAccount: true,
  });
  const token = await api.token(org.apiKeys.test.clientId, org.apiKeys.test.clientSecret);
  return { ...org, token };
}

async function createCardSessions(api: ReturnType<typeof client>, token: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const answer = await api.request<{ id: string }>('POST', '/api/checkout-sessions', {
      token,
      body: sessionRequest({
        checkoutMethod: 'card',
        creditorReference: { reference: `CRASH-${i + 1}` },
        foreignTransactionId: `order-${i + 1}`,
        webhookUrl: `${receiver.url}/hooks`,
      }),
    });
    expect(answer.status, answer.text).toBe(200);
    ids.push(answer.body.id);
  }
  return ids;
}

async function payByCard(api: ReturnType<typeof client>, sessionId: string): Promise<Paid> {
  const done = await api.sandbox<{ session: { status: string; transactionId: string }; redirectTo: string | null }>(
    'POST',
    `/sandbox/checkout-sessions/${sessionId}/attempts`,
    {
      rail: 'card',
      outcome: 'succeeded',
    },
  );
  expect(done.session.status).toBe('completed');
  return { sessionId, transactionId: done.session.transactionId };
}

/** Each delivery the receiver got for a payment: signed with the org's secret, the same bytes every time. */
function expectSignedIdenticalBodies(paid: Paid, secret: string): Arrival[] {
  const got = receivedFor(paid.transactionId);
  expect(got.length, `deliveries received for ${paid.transactionId}`).toBeGreaterThan(0);
  for (const [n, delivery] of got.entries()) {
    expect(delivery.path).toBe('/hooks');
    expect(delivery.headers['content-type']).toMatch(/^application\/json/);
    const header = delivery.headers[SIGNATURE_HEADER.toLowerCase()];
    expect(typeof header, `${SIGNATURE_HEADER} header on delivery ${n + 1}`).toBe('string');
    const verified = verifyWebhook(delivery.raw, header as string, secret);
    expect(verified.kind).toBe('event');
    if (verified.kind === 'event') {
      expect(verified.event).toMatchObject({
        event: 'checkout_session.completed',
        checkoutSessionId: paid.sessionId,
        transactionId: paid.transactionId,
      });
    }
    expect(
      delivery.raw.equals(got[0]!.raw),
      `delivery ${n + 1} body differs from the first:\n${delivery.raw}\n${got[0]!.raw}`,
    ).toBe(true);
  }
  return got;
}

beforeAll(async () => {
  receiver = await startReceiver({
    handle: async () => {
      const { status, delayMs } = behaviour;
      await sleep(delayMs);
      return status;
    },
  });
});

afterAll(async () => {
  for (const server of instances) server.child.kill('SIGKILL');
  await receiver?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe('card webhooks across a server crash (SIGKILL) and restart on the same database', () => {
  it(
    'continues the attempt count after a crash: attempt 1 failed (500) before, attempt 2 succeeds after',
    async () => {
      const db = path.join(tmp, 'retry-after-crash.sqlite');
      behaviour.status = 500;
      behaviour.delayMs = 0;

      let server = await startServer(db);
      let api = client(server);
      const org = await newOrganisation(api);
      const sessions = await createCardSessions(api, org.token, N);
      const paid: Paid[] = [];
      for (const id of sessions) paid.push(await payByCard(api, id));

      // Attempt 1 of each is made shortly after the attempt answer, fails with 500, and is recorded.
      await waitFor(
        'attempt 1 of every webhook at the receiver',
        () => paid.every((p) => receivedFor(p.transactionId).length === 1),
        15_000,
        () => received().map(transactionOf),
      );
      for (const p of paid) {
        const recorded = await waitFor(
          `attempt 1 of ${p.sessionId} recorded as failed`,
          async () => {
            const list = await api.deliveries(p.sessionId);
            return list.length === 1 && list[0]!.responseStatus === 500 ? list : undefined;
          },
          10_000,
        );
        expect(recorded[0]).toMatchObject({
          transactionId: p.transactionId,
          attempt: 1,
          responseStatus: 500,
          final: false,
          signed: true,
          url: `${receiver.url}/hooks`,
        });
      }

      await kill(server);
      behaviour.status = 200;
      server = await startServer(db);
      api = client(server);

      // Nothing is due before the retry delay (one minute on the organisation's clock).
      await sleep(500);
      for (const p of paid) expect(receivedFor(p.transactionId), 'no delivery before the retry is due').toHaveLength(1);

      await api.advanceClock(org.id, 61);
      await waitFor(
        'attempt 2 of every webhook at the receiver',
        () => paid.every((p) => receivedFor(p.transactionId).length >= 2),
        15_000,
        () => received().map(transactionOf),
      );
      const lists = new Map<string, Delivery[]>();
      for (const p of paid) {
        lists.set(
          p.sessionId,
          await waitFor(`attempt 2 of ${p.sessionId} recorded`, async () => {
            const list = await api.deliveries(p.sessionId);
            return list.length >= 2 ? list : undefined;
          }),
        );
      }

      // Once delivered, nothing more: not even after the 5-minute third-attempt delay.
      await api.advanceClock(org.id, 301);
      await sleep(1000);

      for (const p of paid) {
        const list = lists.get(p.sessionId)!;
        expect(
          list.map((d) => [d.attempt, d.responseStatus, d.final]),
          `delivery list of ${p.sessionId}: the count must continue after the crash (attempt 2), not restart at 1`,
        ).toEqual([
          [1, 500, false],
          [2, 200, true],
        ]);
        expect(list.every((d) => d.signed && d.transactionId === p.transactionId && d.error === null)).toBe(true);
        expect(await api.deliveries(p.sessionId)).toEqual(list);
        const got = expectSignedIdenticalBodies(p, org.webhookSigningSecret);
        expect(got, `exactly two deliveries of ${p.transactionId}`).toHaveLength(2);
        const body = JSON.parse(got[0]!.raw.toString('utf8'));
        expect(body).toEqual({
          event: 'checkout_session.completed',
          createdAt: expect.any(String),
          checkoutSessionId: p.sessionId,
          transactionId: p.transactionId,
          foreignTransactionId: expect.stringMatching(/^order-\d$/),
        });
        expect(JSON.parse(got[1]!.raw.toString('utf8')).createdAt).toBe(body.createdAt);
      }

      // The merchant reads the session back: completed by card.
      for (const p of paid) {
        const read = await api.request('GET', `/api/checkout-sessions/${p.sessionId}`, {
          token: await api.token(org.apiKeys.test.clientId, org.apiKeys.test.clientSecret),
        });
        expect(read.body).toMatchObject({
          status: 'completed',
          transactionType: 'card',
          transactionId: p.transactionId,
        });
      }
      await kill(server);
    },
    paced(90_000),
  );

  it(
    'delivers every webhook after a crash the moment the payments completed, attempts 1, 2, ... at most 3',
    async () => {
      const db = path.join(tmp, 'crash-before-delivery.sqlite');
      // A slow receiver: a delivery already under way when the server dies is cut off mid-answer.
      behaviour.status = 200;
      behaviour.delayMs = 1500;

      let server = await startServer(db);
      let api = client(server);
      const org = await newOrganisation(api);
      const sessions = await createCardSessions(api, org.token, N);
      const paid = await Promise.all(sessions.map((id) => payByCard(api, id)));
      await kill(server);
      const beforeRestart = new Map(paid.map((p) => [p.transactionId, receivedFor(p.transactionId).length]));

      server = await startServer(db);
      api = client(server);
      behaviour.delayMs = 0;

      // Each transaction ends with a successful, final attempt; the clock is moved on
      // (past the 1- then 5-minute retry delays) while any is still waiting for a retry.
      const finished = async () => {
        const lists = await Promise.all(paid.map((p) => api.deliveries(p.sessionId)));
        return lists.every((list) => list.some((d) => d.responseStatus === 200 && d.final)) ? lists : undefined;
      };
      let lists: Delivery[][] | undefined;
      for (const advance of [0, 61, 301]) {
        if (advance) await api.advanceClock(org.id, advance);
        lists = await waitFor(
          `every webhook delivered (after advancing ${advance} s)`,
          async () => (await finished()) ?? false,
          3000,
        ).catch(() => undefined);
        if (lists) break;
      }
      lists ??= await Promise.all(paid.map((p) => api.deliveries(p.sessionId)));

      const summary = paid.map((p, i) => ({
        transactionId: p.transactionId,
        receivedBeforeRestart: beforeRestart.get(p.transactionId),
        received: receivedFor(p.transactionId).length,
        attempts: lists![i]!.map((d) => ({
          attempt: d.attempt,
          responseStatus: d.responseStatus,
          error: d.error,
          final: d.final,
        })),
      }));
      console.info(`crash right after completion: ${JSON.stringify(summary)}`);

      for (const [i, p] of paid.entries()) {
        const list = lists[i]!;
        const attempts = list.map((d) => d.attempt);
        expect(attempts, `attempt numbers of ${p.sessionId} run 1, 2, ... (${JSON.stringify(summary[i])})`).toEqual(
          attempts.map((_, k) => k + 1),
        );
        expect(list.length, `at most three attempts for ${p.sessionId}`).toBeLessThanOrEqual(3);
        expect(
          list.at(-1),
          `the last attempt of ${p.sessionId} succeeded and is final (${JSON.stringify(summary[i])})`,
        ).toMatchObject({ responseStatus: 200, final: true });
        expect(
          list.slice(0, -1).every((d) => !d.final && d.responseStatus === null),
          `earlier attempts of ${p.sessionId} were interrupted, not answered`,
        ).toBe(true);
        const got = expectSignedIdenticalBodies(p, org.webhookSigningSecret);
        // Every attempt is recorded before it is made: the receiver never saw more than the record.
        expect(got.length, `deliveries received for ${p.transactionId} vs attempts recorded`).toBeLessThanOrEqual(
          list.length,
        );
        expect(got.length).toBeLessThanOrEqual(3);
      }
      await kill(server);
    },
    paced(90_000),
  );
});

describe('a card webhook in flight when the server is asked to stop (SIGTERM)', () => {
  it(
    'waits for the answer and records it as it was, so no repeat follows the restart',
    async () => {
      const db = path.join(tmp, 'sigterm-in-flight.sqlite');
      behaviour.status = 200;
      behaviour.delayMs = 1500;
      const server = await startServer(db);
      const api = client(server);
      const org = await newOrganisation(api);
      const [sessionId] = await createCardSessions(api, org.token, 1);
      const paid = await payByCard(api, sessionId!);
      await waitFor('the attempt at the receiver', () => receivedFor(paid.transactionId).length === 1);
      server.child.kill('SIGTERM');
      const { code } = await server.exited;
      expect(code).toBe(0);

      const again = await startServer(db);
      const api2 = client(again);
      const records = await api2.deliveries(paid.sessionId);
      expect(records.map((r) => [r.attempt, r.responseStatus, r.error, r.final])).toEqual([[1, 200, null, true]]);
      await sleep(1000);
      expect(receivedFor(paid.transactionId)).toHaveLength(1);
      again.child.kill('SIGTERM');
      await again.exited;
      behaviour.delayMs = 0;
    },
    paced(60_000),
  );
});

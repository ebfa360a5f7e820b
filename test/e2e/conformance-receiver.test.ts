/**
 * `payment-conformance receiver` against a tiny correct merchant receiver (it passes)
 * and broken ones (each caught by the check meant for it), run as a user runs it.
 *
 * @tags long
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CLAUSES } from '../../conformance/core/clauses.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { createPaymentClient } from '../../client/index.ts';
import { verifyWebhook } from '../../client/webhooks.ts';
import { createReceiver, openShopDb } from '../../examples/merchant-receiver.ts';
import { cli, type JsonReport } from '../support/conformance-cli.ts';
import { SANDBOX_TOKEN, startTestServer } from '../support/server.ts';
import {
  BROKEN_RECEIVERS,
  correctReceiver,
  startMerchantReceiver,
  trustingReceiver,
  type Handler,
  type MerchantReceiver,
} from '../support/merchant-receivers.ts';
import { paced } from '../support/pace.ts';

const SECRET = 'whsec_conformance_receiver_test_secret';
const started: MerchantReceiver[] = [];
afterAll(async () => {
  await Promise.all(started.map((r) => r.close()));
});

async function check(handler: Handler, extra: string[] = []) {
  const receiver = await startMerchantReceiver(handler);
  started.push(receiver);
  const run = await cli(['receiver', '--url', receiver.url, '--secret', SECRET, ...extra]);
  const marked = (mark: string) =>
    [...run.stdout.matchAll(new RegExp(`^\\[\\s*\\d+/\\d+\\] ${mark} (RCV-\\d{3})`, 'gm'))].map((m) => m[1]).sort();
  const failed = marked('✗');
  const passed = marked('✓');
  const warned = marked('!');
  return { ...run, failed, passed, warned };
}

describe.concurrent('payment-conformance receiver', () => {
  it('passes a receiver that follows the document (legacy bodies accepted)', async () => {
    const run = await check(correctReceiver(SECRET, { allowLegacy: true }), ['--legacy', 'accept']);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.failed).toEqual([]);
    expect(run.passed).toHaveLength(16);
  });

  it(
    'without --legacy, handling legacy bodies is optional: RCV-014 is a should check and a receiver that accepts or rejects them passes',
    async () => {
      for (const allowLegacy of [true, false]) {
        const run = await check(correctReceiver(SECRET, { allowLegacy }));
        expect(run.code, run.stdout + run.stderr).toBe(0);
        expect(run.failed).toEqual([]);
        expect(run.passed).toHaveLength(16);
        expect(run.stdout).toMatch(/✓ RCV-014 .*\(should\) \d+ ms$/m);
      }
      const accepting = await check(correctReceiver(SECRET, { allowLegacy: true }), ['--legacy', 'reject']);
      expect(accepting.failed).toEqual(['RCV-014']);
      const rejecting = await check(correctReceiver(SECRET, { allowLegacy: false }), ['--legacy', 'accept']);
      expect(rejecting.code).toBe(1);
      expect(rejecting.failed).toEqual(['RCV-014']);
    },
    paced(60_000),
  ); // four receiver runs one after the other

  it('with --legacy reject, passes a receiver that refuses unsigned legacy bodies and fails one that takes them', async () => {
    const strict = await check(correctReceiver(SECRET, { allowLegacy: false }), ['--legacy', 'reject']);
    expect(strict.code, strict.stdout).toBe(0);
    const lenient = await check(correctReceiver(SECRET, { allowLegacy: true }), ['--legacy', 'reject']);
    expect(lenient.code).toBe(1);
    expect(lenient.failed).toEqual(['RCV-014']);
  });

  const broken = BROKEN_RECEIVERS;
  /** The receiver clauses each broken receiver breaks (with the lenient legacy one above). */
  const breaks: Record<string, string[]> = {
    're-serialises the JSON before verifying': ['verify.raw'],
    'does not check the age of t': ['verify.age'],
    'reads the header parts by position': ['verify.split', 'sig.versions'],
    'answers 409 to a repeat': ['retry.duplicates'],
    'refuses unknown event values': ['event.unknown'],
    'verifies nothing': ['sig.reject-unsigned', 'verify.split', 'verify.raw'],
    'allows only 30 seconds of signature age': ['limit.signature-age'],
    'answers unknown events before verifying them': ['verify.parse-after'],
    'answers after six seconds': ['retry.wait'],
    'takes unsigned legacy bodies under --legacy reject': ['legacy.branch'],
  };
  it('breaks every checkable receiver clause of the register in at least one receiver', () => {
    expect(Object.keys(breaks).filter((name) => !broken.some((b) => b.name === name))).toEqual([
      'takes unsigned legacy bodies under --legacy reject',
    ]);
    const covered = new Set(Object.values(breaks).flat());
    const receiverClauses = CLAUSES.filter((c) => c.subject === 'receiver' && !c.notCheckable).map((c) => c.id);
    expect(receiverClauses.filter((id) => !covered.has(id))).toEqual([]);
  });

  for (const { name, handler, caughtBy, args } of broken) {
    it(
      `fails a receiver that ${name}: ${caughtBy.join(', ')}`,
      async () => {
        const run = await check(handler(SECRET), args);
        expect(run.code, run.stdout).toBe(1);
        for (const id of caughtBy) expect(run.failed, run.stdout).toContain(id);
        if (name !== 'answers after six seconds') expect(run.failed.length, run.stdout).toBe(caughtBy.length);
      },
      paced(60_000),
    );
  }

  it('exits 2 for an unreachable receiver and for a bad secret or flag', async () => {
    expect((await cli(['receiver', '--url', 'http://127.0.0.1:9/hooks', '--secret', SECRET])).code).toBe(2);
    expect(
      (await cli(['receiver', '--url', 'http://127.0.0.1:9/hooks', '--secret', 'sk_not_a_webhook_secret'])).code,
    ).toBe(2);
    expect(
      (await cli(['receiver', '--url', 'http://127.0.0.1:9/hooks', '--secret', SECRET, '--legacy', 'maybe'])).code,
    ).toBe(2);
  });
});

/** The receiver run with every report written; its JSON report read back. */
async function reported(url: string, extra: string[]) {
  const dir = mkdtempSync(path.join(tmpdir(), 'conformance-receiver-'));
  const run = await cli(['receiver', '--url', url, ...extra, '--reporter', 'console,json,junit,html', '--out', dir]);
  const report = JSON.parse(readFileSync(path.join(dir, 'conformance.json'), 'utf8')) as JsonReport;
  const result = (id: string) => report.results.find((r) => r.id === id)!;
  return { ...run, dir, report, result };
}

describe('payment-conformance receiver: reports, --only and real events', () => {
  it('writes the four reports, each check with its clauses and each failure with the delivery, the answer and a curl line', async () => {
    const receiver = await startMerchantReceiver(trustingReceiver);
    started.push(receiver);
    const run = await reported(receiver.url, ['--secret', SECRET, '--legacy', 'reject']);
    expect(run.code, run.stdout).toBe(1);
    const tampered = run.result('RCV-002');
    expect(tampered).toMatchObject({ status: 'failed', level: 'must', clauses: ['verify.raw'], rule: 'verify.raw' });
    expect(tampered.evidence!.request).toMatch(
      /^POST \/webhooks HTTP\/1.1\n[\s\S]*service-signature: t=\d+,v1=[0-9a-f]{64}/i,
    );
    expect(tampered.evidence!.response).toMatch(/^HTTP\/1.1 200/);
    expect(tampered.evidence!.curl).toMatch(/^curl .* -H 'Service-Signature: t=\d+,v1=[0-9a-f]{64}' --data-raw '\{/);
    expect(run.result('RCV-014')).toMatchObject({ level: 'must', status: 'failed' });
    expect(run.result('RCV-017')).toMatchObject({
      status: 'skipped',
      reason: expect.stringMatching(/needs real payments/),
    });
    expect(run.report.results.map((r) => r.id)).toHaveLength(17);
    const junit = readFileSync(path.join(run.dir, 'conformance.junit.xml'), 'utf8');
    expect(junit).toMatch(/<testcase [^>]*RCV-002[\s\S]*?<failure [\s\S]*?--- sent [^\n]*\ncurl /);
    const html = readFileSync(path.join(run.dir, 'conformance.html'), 'utf8');
    expect(html).toContain('id="RCV-002"');
    expect(html).toContain('<abbr class="clause"');
    expect(run.stdout).toMatch(/sent: curl /);
    expect(JSON.stringify(run.report)).not.toContain(SECRET);
  });

  it('the curl line replays the delivery byte for byte, its headers included', async () => {
    const seen: { raw: Buffer; signature: string | undefined }[] = [];
    const receiver = await startMerchantReceiver((raw, signature) => {
      seen.push({ raw, signature });
      return 400;
    });
    started.push(receiver);
    const run = await reported(receiver.url, ['--secret', SECRET, '--only', 'RCV-003']);
    expect(run.report.results.map((r) => [r.id, r.status])).toEqual([['RCV-003', 'failed']]);
    const original = seen.at(-1)!;
    await promisify(execFile)('sh', ['-c', run.result('RCV-003').evidence!.curl]);
    const replayed = seen.at(-1)!;
    expect(replayed).not.toBe(original);
    expect(replayed.raw.equals(original.raw)).toBe(true);
    expect(replayed.signature).toBe(original.signature);
  });

  it('--only selects receiver checks by glob, exclusions included, and an unmatched glob is a setup error', async () => {
    const receiver = await startMerchantReceiver(correctReceiver(SECRET, { allowLegacy: true }));
    started.push(receiver);
    const run = await reported(receiver.url, ['--secret', SECRET, '--only', 'RCV-00?,RCV-013,!RCV-009']);
    expect(run.code, run.stdout).toBe(0);
    expect(run.report.results.map((r) => r.id)).toEqual([
      'RCV-001',
      'RCV-002',
      'RCV-003',
      'RCV-004',
      'RCV-005',
      'RCV-006',
      'RCV-007',
      'RCV-008',
      'RCV-013',
    ]);
    expect((await cli(['receiver', '--url', receiver.url, '--secret', SECRET, '--only', 'HOOK-*'])).code).toBe(2);
  });

  it(
    'with --base-url, sends events of real payments: the example merchant receiver, and one that reads every payment back, pass',
    async () => {
      const t = await startTestServer({ webhookPollIntervalMs: 20 });
      const servers: http.Server[] = [];
      try {
        const org = await t.organisation();
        const credentials = org.apiKeys.test;
        const client = createPaymentClient({ baseUrl: t.url, ...credentials });
        const shop = createReceiver({ client, db: openShopDb(), signingSecret: org.webhookSigningSecret });
        servers.push(shop);
        await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
        const shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}/webhooks`;
        const real = [
          '--secret',
          org.webhookSigningSecret,
          '--base-url',
          t.url,
          '--sandbox-token',
          SANDBOX_TOKEN,
          '--client-id',
          credentials.clientId,
          '--client-secret',
          credentials.clientSecret,
        ];
        const example = await reported(shopUrl, real);
        expect(example.code, example.stdout + example.stderr).toBe(0);
        expect(example.report.summary).toEqual({ passed: 17, failed: 0, differs: 0, skipped: 0, error: 0 });
        expect(example.result('RCV-017').status).toBe('passed');
        expect(JSON.stringify(example.report)).not.toContain(credentials.clientSecret);

        // Fulfils only what it reads back as paid, and answers 500 otherwise (the service retries).
        const readsBack = await startMerchantReceiver(async (raw, signature) => {
          try {
            const verified = verifyWebhook(raw, signature, org.webhookSigningSecret);
            if (verified.kind !== 'event' || verified.event.event !== 'checkout_session.completed') return 200;
            const confirmation = await client.confirmPayment(verified.event.checkoutSessionId!);
            return confirmation.paid ? 200 : 500;
          } catch (error) {
            return (error as Error).name === 'WebhookVerificationError' ? 400 : 500;
          }
        });
        started.push(readsBack);
        const madeUp = await reported(readsBack.url, ['--secret', org.webhookSigningSecret]);
        expect(madeUp.code).toBe(1);
        expect(madeUp.result('RCV-001').reason).toMatch(/made-up payment/);
        const withReal = await reported(readsBack.url, real);
        expect(withReal.code, withReal.stdout + withReal.stderr).toBe(0);
        expect(withReal.report.summary).toEqual({ passed: 17, failed: 0, differs: 0, skipped: 0, error: 0 });
      } finally {
        for (const s of servers) await new Promise((resolve) => s.close(resolve));
        await t.close();
      }
    },
    paced(120_000),
  );

  it('with --base-url but no credentials of the receiver’s organisation, or no way to pay, exits 2', async () => {
    const receiver = await startMerchantReceiver(correctReceiver(SECRET, { allowLegacy: true }));
    started.push(receiver);
    const base = ['receiver', '--url', receiver.url, '--secret', SECRET, '--base-url', 'http://127.0.0.1:9'];
    const noKey = await cli([...base, '--sandbox-token', 'x']);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/--client-id and --client-secret/);
    const noWay = await cli([...base, '--client-id', 'a', '--client-secret', 'b']);
    expect(noWay.code).toBe(2);
    expect(noWay.stderr).toMatch(/--sandbox-token or --adapter/);
  });
});

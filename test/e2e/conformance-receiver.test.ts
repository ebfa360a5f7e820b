/**
 * `payment-conformance receiver` against a tiny correct merchant receiver (it passes)
 * and broken ones (each caught by the check meant for it), run as a user runs it.
 */
import { CLAUSES } from '../../conformance/clauses.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from '../support/conformance-cli.ts';
import {
  conflictOnRepeatReceiver,
  correctReceiver,
  noToleranceReceiver,
  positionalReceiver,
  reserialisingReceiver,
  shortToleranceReceiver,
  slowReceiver,
  startMerchantReceiver,
  strictEventReceiver,
  trustingReceiver,
  unknownEventFirstReceiver,
  type Handler,
  type MerchantReceiver,
} from '../support/merchant-receivers.ts';

const SECRET = 'whsec_conformance_receiver_test_secret';
const started: MerchantReceiver[] = [];
afterAll(async () => {
  await Promise.all(started.map((r) => r.close()));
});

async function check(handler: Handler, extra: string[] = []) {
  const receiver = await startMerchantReceiver(handler);
  started.push(receiver);
  const run = await cli(['receiver', '--url', receiver.url, '--secret', SECRET, ...extra]);
  const failed = [...run.stdout.matchAll(/^✗ (RCV-\d{3})/gm)].map((m) => m[1]);
  const passed = [...run.stdout.matchAll(/^✓ (RCV-\d{3})/gm)].map((m) => m[1]);
  const warned = [...run.stdout.matchAll(/^! (RCV-\d{3})/gm)].map((m) => m[1]);
  return { ...run, failed, passed, warned };
}

describe.concurrent('payment-conformance receiver', () => {
  it('passes a receiver that follows the document (legacy bodies accepted)', async () => {
    const run = await check(correctReceiver(SECRET, { allowLegacy: true }), ['--legacy', 'accept']);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.failed).toEqual([]);
    expect(run.passed).toHaveLength(16);
  });

  it('without --legacy, handling legacy bodies is optional: RCV-014 is a should check and a receiver that accepts or rejects them passes', async () => {
    for (const allowLegacy of [true, false]) {
      const run = await check(correctReceiver(SECRET, { allowLegacy }));
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.failed).toEqual([]);
      expect(run.passed).toHaveLength(16);
      expect(run.stdout).toMatch(/^✓ RCV-014 .*\(should\)$/m);
    }
    const accepting = await check(correctReceiver(SECRET, { allowLegacy: true }), ['--legacy', 'reject']);
    expect(accepting.failed).toEqual(['RCV-014']);
    const rejecting = await check(correctReceiver(SECRET, { allowLegacy: false }), ['--legacy', 'accept']);
    expect(rejecting.code).toBe(1);
    expect(rejecting.failed).toEqual(['RCV-014']);
  });

  it('with --legacy reject, passes a receiver that refuses unsigned legacy bodies and fails one that takes them', async () => {
    const strict = await check(correctReceiver(SECRET, { allowLegacy: false }), ['--legacy', 'reject']);
    expect(strict.code, strict.stdout).toBe(0);
    const lenient = await check(correctReceiver(SECRET, { allowLegacy: true }), ['--legacy', 'reject']);
    expect(lenient.code).toBe(1);
    expect(lenient.failed).toEqual(['RCV-014']);
  });

  // The first three take no legacy bodies, so they are run with --legacy reject.
  const broken: [string, () => Handler, string[], string[]?][] = [
    [
      're-serialises the JSON before verifying',
      () => reserialisingReceiver(SECRET),
      ['RCV-003', 'RCV-004'],
      ['--legacy', 'reject'],
    ],
    ['does not check the age of t', () => noToleranceReceiver(SECRET), ['RCV-005'], ['--legacy', 'reject']],
    [
      'reads the header parts by position',
      () => positionalReceiver(SECRET),
      ['RCV-007', 'RCV-008'],
      ['--legacy', 'reject'],
    ],
    ['answers 409 to a repeat', () => conflictOnRepeatReceiver(SECRET), ['RCV-009']],
    ['refuses unknown event values', () => strictEventReceiver(SECRET), ['RCV-010']],
    [
      'verifies nothing',
      () => trustingReceiver,
      ['RCV-002', 'RCV-004', 'RCV-005', 'RCV-006', 'RCV-011', 'RCV-012', 'RCV-015'],
    ],
    ['allows only 30 seconds of signature age', () => shortToleranceReceiver(SECRET), ['RCV-016']],
    ['answers unknown events before verifying them', () => unknownEventFirstReceiver(SECRET), ['RCV-015']],
    ['answers after six seconds', () => slowReceiver(SECRET), ['RCV-013']],
  ];
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
    expect(Object.keys(breaks).filter((name) => !broken.some(([n]) => n === name))).toEqual([
      'takes unsigned legacy bodies under --legacy reject',
    ]);
    const covered = new Set(Object.values(breaks).flat());
    const receiverClauses = CLAUSES.filter((c) => c.subject === 'receiver' && !c.notCheckable).map((c) => c.id);
    expect(receiverClauses.filter((id) => !covered.has(id))).toEqual([]);
  });

  for (const [name, handler, caughtBy, extra] of broken) {
    it(`fails a receiver that ${name}: ${caughtBy.join(', ')}`, async () => {
      const run = await check(handler(), extra);
      expect(run.code, run.stdout).toBe(1);
      for (const id of caughtBy) expect(run.failed, run.stdout).toContain(id);
      if (name !== 'answers after six seconds') expect(run.failed.length, run.stdout).toBe(caughtBy.length);
    }, 60_000);
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

/**
 * The SQLite store's memory caches are bounded by estimated bytes as well as by count
 * (server/store/sqlite/reads.ts): payments carrying merchant strings at their longest
 * must not let the session cache hold far more than its bytes, however many are read.
 */
import { describe, expect, it } from 'vitest';
import { Bounded, SessionCache } from '../../server/store/sqlite/reads.ts';
import type { Payment } from '../../server/store/types.ts';

const MiB = 1024 * 1024;

function payment(n: number, stringLength: number): Payment {
  const long = 'x'.repeat(stringLength);
  return {
    transactionId: `tx-${n}`,
    kind: 'checkout_session',
    sessionId: `cs_${n}`,
    orgId: 'org_1',
    mode: 'test',
    status: 'created',
    amountTotal: 25.5,
    currency: 'NZD',
    checkoutMethod: 'card',
    reference: 'REF',
    particulars: '',
    code: 'CODE',
    redirectUrl: `https://shop.example.com/${long}`,
    webhookUrl: null,
    foreignTransactionId: long,
    description: null,
    transactionType: 'open_banking',
    createdAt: 0,
    updatedAt: 0,
    expiresAt: null,
    completedAt: null,
  };
}

describe('Bounded', () => {
  const sizeOf = (value: string) => value.length;
  const rows: { given: { limit: number; maxBytes: number; values: string[] }; want: string[] }[] = [
    { given: { limit: 2, maxBytes: 100, values: ['a', 'b', 'c'] }, want: ['b', 'c'] },
    { given: { limit: 10, maxBytes: 5, values: ['aa', 'bb', 'cc'] }, want: ['bb', 'cc'] },
    { given: { limit: 10, maxBytes: 5, values: ['aa', 'bbbbbbbb'] }, want: ['bbbbbbbb'] },
    { given: { limit: 10, maxBytes: 100, values: ['a', 'b'] }, want: ['a', 'b'] },
  ];
  it.each(rows)('keeps the newest within count and bytes: $given.values → $want', ({ given, want }) => {
    const dropped: string[] = [];
    const map = new Bounded<string, string>(given.limit, given.maxBytes, sizeOf, (v) => dropped.push(v));
    for (const value of given.values) map.set(value, value);
    expect([...map.values()]).toEqual(want);
    expect(map.estimatedBytes).toBe(want.join('').length);
    expect(dropped).toEqual(given.values.filter((v) => !want.includes(v)));
  });

  it('counts a replaced entry once, and tells of the one it replaced', () => {
    const dropped: string[] = [];
    const map = new Bounded<string, string>(10, 100, sizeOf, (v) => dropped.push(v));
    map.set('k', 'aaaa').set('k', 'bb');
    expect(map.estimatedBytes).toBe(2);
    expect(dropped).toEqual(['aaaa']);
    map.delete('k');
    expect(map.estimatedBytes).toBe(0);
  });
});

describe('SessionCache', () => {
  it('holds payments with 10,000-character strings up to its 8 MiB, not its count of 2000', () => {
    const cache = new SessionCache();
    const count = 2000;
    for (let n = 0; n < count; n++) cache.keep(payment(n, 10_000));
    const held = Array.from({ length: count }, (_, n) => cache.get('org_1', `cs_${n}`)).filter(Boolean).length;
    // Each is estimated at two bytes a character of its strings: some 40 KiB.
    expect(held).toBeGreaterThan(100);
    expect(held).toBeLessThan((8 * MiB) / 40_000 + 1);
    expect(cache.get('org_1', `cs_${count - 1}`)).toBeDefined();
    expect(cache.get('org_1', 'cs_0')).toBeUndefined();
  });

  it('holds its count of small payments, and forgets one whose payment changed', () => {
    const cache = new SessionCache();
    for (let n = 0; n < 2500; n++) cache.keep(payment(n, 10));
    expect(cache.get('org_1', 'cs_499')).toBeUndefined();
    expect(cache.get('org_1', 'cs_500')).toBeDefined();
    cache.forget('tx-2499');
    expect(cache.get('org_1', 'cs_2499')).toBeUndefined();
    // Forgetting an evicted payment is harmless.
    cache.forget('tx-0');
  });
});

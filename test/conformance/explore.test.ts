/**
 * The exploration's own parts, without a target: the boundary values it derives from the
 * description (and that a changed description changes them), and the model's answers
 * where the document allows several, at the edges of time, and across scopes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { description } from '../../conformance/core/description.ts';
import {
  bodyWith,
  deriveVariants,
  expectedOf,
  parseClassPattern,
  type Variant,
} from '../../conformance/modes/run/explore/boundary.ts';
import { SETTINGS_POOL } from '../../conformance/modes/run/explore/inputs.ts';
import { expectCreate } from '../../conformance/modes/run/explore/model-creates.ts';
import { configCodes } from '../../conformance/rules/configuration.ts';
import { statusesOf } from '../../conformance/modes/run/explore/model-payments.ts';
import {
  authOf,
  DAY_S,
  EDGE_S,
  initialModel,
  type Model,
  TOKEN_LIFETIME_S,
} from '../../conformance/modes/run/explore/model.ts';
import type { JsonObject } from '../../conformance/core/json.ts';

const variants = deriveVariants();
const verdictOf = (field: string, value: unknown) =>
  variants.find((v) => v.field === field && JSON.stringify(v.value) === JSON.stringify(value))?.verdict;

describe('boundary values derived from the create schema', () => {
  it('give every field of the body absent, null and other types, required ones refused when absent', () => {
    const fields = new Set(variants.map((v) => v.field));
    for (const field of [
      'type',
      'amount',
      'amount.total',
      'creditorReference.reference',
      'redirectUrl',
      'checkoutMethod',
    ])
      expect(variants.find((v) => v.field === field && v.absent)?.verdict, field).toBe('invalid');
    for (const field of ['description', 'webhookUrl', 'foreignTransactionId', 'creditorReference.particulars'])
      expect(variants.find((v) => v.field === field && v.absent)?.verdict, field).toBe('valid');
    expect(fields).toContain('unknownField');
    expect(verdictOf('amount.total', '25.00')).toBe('invalid');
    expect(verdictOf('description', null)).toBe('may');
  });

  it('put numbers on each side of every bound and the two-decimal rule', () => {
    expect(verdictOf('amount.total', 0)).toBe('invalid');
    expect(verdictOf('amount.total', 0.01)).toBe('valid');
    expect(verdictOf('amount.total', 10000)).toBe('valid');
    expect(verdictOf('amount.total', 10000.01)).toBe('invalid');
    expect(verdictOf('amount.total', 19.99)).toBe('valid');
    expect(verdictOf('amount.total', 0.1 + 0.2)).toBe('invalid');
    expect(verdictOf('amount.total', 1.005)).toBe('invalid');
  });

  it('read patterns by character class, with the characters next to each range refused', () => {
    const reference = parseClassPattern("^[0-9A-Za-z '.,@_-]{1,12}$")!;
    expect(reference.members).toHaveLength(10 + 26 + 26 + 7);
    expect([reference.min, reference.max]).toEqual([1, 12]);
    for (const c of ['/', ':', '[', '`', '{', 'é', '😀'])
      expect(verdictOf('creditorReference.reference', `A${c}A`), c).toBe('invalid');
    expect(verdictOf('creditorReference.reference', '')).toBe('invalid');
    expect(verdictOf('creditorReference.reference', 'A'.repeat(12))).toBe('valid');
    expect(verdictOf('creditorReference.reference', 'A'.repeat(13))).toBe('invalid');
    expect(verdictOf('creditorReference.particulars', '')).toBe('valid');
  });

  it('judge a length only where every reading of "chars" agrees', () => {
    expect(verdictOf('description', 'é'.repeat(255))).toBe('valid');
    expect(verdictOf('description', 'd'.repeat(256))).toBe('invalid');
    // 255 code points, 510 UTF-16 units: the document's "chars" may mean either.
    expect(verdictOf('description', '😀'.repeat(255))).toBe('may');
  });

  it('leave to the target what only our modelling (x-assumption) decides, but not the document’s own rules', () => {
    expect(verdictOf('redirectUrl', 'not a url')).toBe('invalid');
    expect(verdictOf('redirectUrl', 25)).toBe('invalid');
    expect(
      variants.filter((v) => v.field === 'redirectUrl' && /characters$/.test(v.label)).map((v) => v.verdict),
    ).toEqual(['may', 'may']);
    expect(verdictOf('foreignTransactionId', 'd'.repeat(256))).toBe('may');
  });

  it('follow the description: a changed limit changes the cases', () => {
    const changed = structuredClone(description) as JsonObject;
    (
      changed as { components: { schemas: { Description: { maxLength: number } } } }
    ).components.schemas.Description.maxLength = 100;
    const derived = deriveVariants(changed);
    const of = (value: string) => derived.find((v) => v.field === 'description' && v.value === value)?.verdict;
    expect(of('d'.repeat(100))).toBe('valid');
    expect(of('d'.repeat(101))).toBe('invalid');
    expect(of('d'.repeat(256))).toBeUndefined();
  });

  it('drop what lies under a field left out, in the body and in what is expected', () => {
    const absent: Variant = { field: 'amount', value: undefined, absent: true, verdict: 'invalid', label: 'absent' };
    const total: Variant = { field: 'amount.total', value: 0, verdict: 'invalid', label: '0' };
    expect(expectedOf([absent, total])).toEqual({ must: ['amount'], may: [] });
    expect(bodyWith({ amount: { total: 5 }, type: 'single' }, [total, absent])).toEqual({ type: 'single' });
  });
});

const model = (): Model => initialModel(SETTINGS_POOL[0]!, [true, true], false);
const latestTest = { kind: 'latest' as const, org: 0, mode: 'test' as const };

describe('the model of the document', () => {
  it('orders configuration codes only where the document does: the AUD bank rail first', () => {
    const aud = {
      settlementCurrency: 'AUD' as const,
      cardEnabled: true,
      openBankingApproved: false,
      settlementAccount: false,
    };
    expect(configCodes(aud, 'open_banking')).toEqual(['open_banking_currency_unsupported']);
    const none = {
      settlementCurrency: 'NZD' as const,
      cardEnabled: false,
      openBankingApproved: false,
      settlementAccount: false,
    };
    expect(configCodes(none, 'both').sort()).toEqual([
      'card_not_enabled',
      'open_banking_not_enabled',
      'settlement_account_missing',
    ]);
    expect(configCodes(SETTINGS_POOL[0]!, 'card', 'AUD')).toEqual(['currency_mismatch']);
  });

  it('takes a token at the edge of its five minutes either way, and refuses it after', () => {
    const m = model();
    m.orgs[0]!.clockS = TOKEN_LIFETIME_S - EDGE_S + 1;
    const edge = authOf(m, latestTest);
    expect([edge.passes, edge.surely]).toEqual([true, false]);
    m.orgs[0]!.clockS = TOKEN_LIFETIME_S + EDGE_S;
    expect(authOf(m, latestTest).passes).toBe(false);
    m.orgs[0]!.keys[0]!.removed = true;
    expect(authOf(m, latestTest).refusals.map((a) => (a.kind === 'error' ? a.code : a.kind))).toEqual([
      'unknown_api_key',
      'token_expired',
    ]);
  });

  it('never takes back a refusal as the clock moves on (a property of the model)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 2 * DAY_S }), { maxLength: 12 }), (moves) => {
        const m = model();
        let refused = false;
        for (const move of moves) {
          m.orgs[0]!.clockS += move;
          const passes = authOf(m, latestTest).passes;
          if (refused) expect(passes).toBe(false);
          refused ||= !passes;
        }
      }),
    );
  });

  it('allows idempotency_error for a key another organisation used only without --strict-assumptions', () => {
    for (const strict of [false, true]) {
      const m = initialModel(SETTINGS_POOL[0]!, [true, true], strict);
      m.idem.push({ org: 1, mode: 'test', key: 'k1', body: 0, atS: 0, result: { payment: 0 }, muddled: false });
      const codes = expectCreate(m, latestTest, 0, 'k1').answers.map((a) => (a.kind === 'error' ? a.code : a.kind));
      expect(codes).toEqual(strict ? ['new'] : ['new', 'idempotency_error']);
    }
  });

  it('reads a session created, then created or expired at its 24 hours, then expired', () => {
    const m = model();
    m.payments.push({ kind: 'session', org: 0, mode: 'test', body: 0, hook: false, createdS: 0, status: 'created' });
    m.orgs[0]!.clockS = DAY_S - 2 * EDGE_S;
    expect(statusesOf(m, 0)).toEqual(['created']);
    m.orgs[0]!.clockS = DAY_S;
    expect(statusesOf(m, 0)).toEqual(['created', 'expired']);
    m.orgs[0]!.clockS = DAY_S + EDGE_S;
    expect(statusesOf(m, 0)).toEqual(['expired']);
  });
});

describe('EXPL-001’s citations', () => {
  it('cite every clause the model and the rules it calls can say was broken, and only those', async () => {
    const { readdirSync, readFileSync } = await import('node:fs');
    const { CLAUSES } = await import('../../conformance/core/clauses.ts');
    const { MODEL_CLAUSES } = await import('../../conformance/modes/run/checks/expl.ts');
    const ids = new Set(CLAUSES.map((c) => c.id));
    const cited = new Set<string>();
    // The exploration's files, and the rules they call that name clauses themselves.
    const explore = new URL('../../conformance/modes/run/explore/', import.meta.url);
    const sources = readdirSync(explore).map((file) => readFileSync(new URL(file, explore), 'utf8'));
    const rules = new Set(
      sources.flatMap((s) => [...s.matchAll(/from '(?:\.\.\/)+rules\/([a-z-]+\.ts)'/g)].map((m) => m[1]!)),
    );
    for (const rule of rules)
      sources.push(readFileSync(new URL(`../../conformance/rules/${rule}`, import.meta.url), 'utf8'));
    for (const source of sources)
      for (const [, id] of source.matchAll(/'([a-z0-9-]+\.[a-z0-9.-]+)'/g)) if (ids.has(id!)) cited.add(id!);
    // Clauses built from a status name (`state.${status}`) are cited through the statuses.
    for (const status of ['created', 'pending', 'completed', 'failed']) cited.add(`state.${status}`);
    expect([...cited].filter((id) => !MODEL_CLAUSES.includes(id)).sort()).toEqual([]);
    expect(MODEL_CLAUSES.filter((id) => !cited.has(id)).sort()).toEqual([]);
  });
});

/**
 * How a create of boundary values (explore/boundary.ts) is judged: answered 200 when every
 * value is valid, validation_failed naming exactly the fields that fail (param by the rule)
 * when one is not, either where the document leaves it open. EXPL-002 judges combinations
 * drawn at random, INP-001 each value alone.
 */
import type { Exchange } from '../../core/exchange.ts';
import { at, show } from '../../core/json.ts';
import { namedFields, validationDetailsProblem } from '../../rules/errors.ts';
import { expectedOf, liveVariants, type Variant } from './explore/boundary.ts';
import { Divergence, invariants } from './explore/judge.ts';

/** The clause of each create field (Endpoints: POST /api/checkout-sessions parameters). */
export const FIELD_CLAUSES: Record<string, string> = {
  type: 'create.type',
  amount: 'create.amount',
  'amount.total': 'create.total',
  'amount.currency': 'create.currency',
  creditorReference: 'create.creditor-reference',
  'creditorReference.reference': 'create.reference',
  'creditorReference.particulars': 'create.particulars',
  'creditorReference.code': 'create.code',
  redirectUrl: 'create.redirect-url',
  checkoutMethod: 'create.checkout-method',
  webhookUrl: 'create.webhook-url',
  foreignTransactionId: 'create.foreign-id',
  description: 'create.description',
};

export const BOUNDARY_CLAUSES = [
  'order.validation',
  'code.validation-failed',
  'err.details',
  'err.details-entry',
  'err.param',
  'create.ok',
  'limit.total',
  'limit.reference',
  'limit.particulars',
  'limit.code',
  'limit.description',
  'order.currency-mismatch',
  ...new Set(Object.values(FIELD_CLAUSES)),
];

/** The answers a body of boundary values may get, judged; a Divergence when it is none of them. */
export function judgeBoundary(e: Exchange, variants: readonly Variant[], strict: boolean): void {
  const { must, may } = expectedOf(variants);
  const sent = JSON.parse(e.request.body ?? '{}');
  const currency = at(sent, 'amount', 'currency');
  // The shared organisation settles in NZD: any other currency also mismatches (VAL-030).
  const mismatch = typeof currency === 'string' && currency !== 'NZD';
  const clauses = [...new Set([...must, ...may].map((f) => FIELD_CLAUSES[f] ?? 'order.validation'))];
  const what = liveVariants(variants)
    .map((v) => `${v.field} ${v.label} (${v.verdict})`)
    .join('; ');
  if (e.status === 429) return; // throttled: the document shows no rate limits, so no verdict
  if (e.status >= 500 || e.status === 401 || e.status === 404)
    throw new Divergence(`${what}: answered ${e.status}.`, ['order.validation', 'create.ok'], e);
  invariants(e);
  const code = at(e.json, 'error', 'code');
  if (e.status === 200) {
    if (must.length === 0 && !mismatch) return;
    throw new Divergence(
      `${what}: accepted (200), but ${must.length > 0 ? `the document says ${must.join(', ')} fail${must.length === 1 ? 's' : ''}` : `amount.currency ${show(currency)} is not the organisation's settlement currency`}.`,
      must.length > 0 ? [...clauses, 'order.validation'] : ['order.currency-mismatch', 'create.currency'],
      e,
    );
  }
  if (code === 'currency_mismatch' && mismatch) {
    // Validation before configuration is our reading of the table (CFG-009's assumption).
    const others = must.filter((f) => f !== 'amount.currency');
    if (!strict || others.length === 0) return;
  }
  if (code !== 'validation_failed')
    throw new Divergence(
      `${what}: answered ${e.status} ${show(code)}; expected ${must.length + may.length > 0 ? 'validation_failed' : '200'}${mismatch ? ' or currency_mismatch' : ''}.`,
      clauses.length > 0 ? clauses : ['create.ok'],
      e,
    );
  if (must.length === 0 && namedFields(e.json).length === 0)
    throw new Divergence(`${what}: refused with validation_failed naming no field.`, ['err.details'], e);
  if (must.length === 0 && may.length === 0)
    throw new Divergence(
      `${what}: refused with validation_failed, but every value is valid by the document.`,
      clauses,
      e,
    );
  const problem = validationDetailsProblem(e.json, must, may);
  if (problem) throw new Divergence(`${what}: ${problem}`, ['err.details', 'err.param', 'code.validation-failed'], e);
}

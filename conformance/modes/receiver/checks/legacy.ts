/**
 * RCV-014, the Legacy payload (Events): a body of only transactionId and foreignTransactionId,
 * with no event and no signature. Handling it is optional, so without --legacy the check is
 * `should` (either answer passes); a receiver declared to accept or reject it is held to
 * that answer at the strength of the clauses it cites.
 */
import { randomUUID } from 'node:crypto';
import type { Check } from '../../../runner/check-definition.ts';
import { CheckFailure } from '../../../core/outcome.ts';
import { type ReceiverContext, show } from '../context.ts';

const LEGACY = 'Events: Legacy payload';

export function legacyCheck(legacy: 'accept' | 'reject' | undefined): Check<ReceiverContext> {
  return {
    id: 'RCV-014',
    ...(legacy === undefined ? { level: 'should' as const } : {}),
    // Accepting an unsigned legacy body follows legacy.branch; rejecting it, the rule that
    // receivers reject deliveries with no signature.
    clauses: legacy === 'accept' ? ['legacy.branch'] : ['legacy.branch', 'sig.reject-unsigned'],
    section: LEGACY,
    title:
      legacy === 'accept'
        ? 'a legacy two-field body (no event, no signature) is accepted (--legacy accept)'
        : legacy === 'reject'
          ? 'a legacy two-field body (no event, no signature) is rejected (--legacy reject)'
          : 'a legacy two-field body (no event, no signature) gets an answer: handling it is optional (give --legacy accept|reject to require one)',
    // Legacy bodies come from transactions made through POST /api/transaction, whose shape
    // the document does not show: this one names a made-up transaction even with a target.
    run: async (r) => {
      const raw = JSON.stringify({ transactionId: randomUUID(), foreignTransactionId: 'legacy-1' });
      const sent = await r.send(raw, undefined);
      if (r.legacy === 'accept') return r.accepts('A legacy body', sent);
      if (r.legacy === 'reject') return r.rejects('A legacy body', sent);
      if (sent.status === null) throw new CheckFailure(`A legacy body got ${show(sent)}.`, { evidence: sent.evidence });
    },
  };
}

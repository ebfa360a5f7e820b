/**
 * One broken variant (at least) per checkable clause of the service document, each
 * designed from the clause's own words rather than from a check: a mutating proxy between
 * the suite and the reference server (or between the server and the suite's receiver)
 * makes the server break that clause. test/e2e/conformance-clause-mutants.test.ts runs
 * them; the exploration's kill rates count them too.
 */
import { createRegistry } from '../../conformance/modes/run/checks/index.ts';
import { clausePartMutants } from './clause-part-mutants.ts';
import { authenticationClauseMutants } from './clause-mutants/authentication.ts';
import { endpointClauseMutants } from './clause-mutants/endpoints.ts';
import { errorClauseMutants } from './clause-mutants/errors.ts';
import { eventClauseMutants } from './clause-mutants/events.ts';
import { inputClauseMutants } from './clause-mutants/inputs.ts';
import type { ClauseMutant } from './clause-mutants/kit.ts';
import { serviceClauseMutants } from './clause-mutants/service.ts';

export type { ClauseMutant } from './clause-mutants/kit.ts';

/** Every clause mutant, section by section of the service document. */
export const clauseMutants: ClauseMutant[] = [
  ...serviceClauseMutants,
  ...endpointClauseMutants,
  ...authenticationClauseMutants,
  ...eventClauseMutants,
  ...errorClauseMutants,
  // The classes of input the document allows, the organisations and modes, the configuration table.
  ...inputClauseMutants,
  // The parts of clauses a looser reading leaves unjudged.
  ...clausePartMutants,
];

/**
 * One exchange of each kind of answer the document names (a token, each 401 code's cause,
 * a create and a read, not_found, validation_failed, a configuration code,
 * currency_mismatch, idempotency_error), so that the response checks, which judge every answer of the run,
 * have each kind to judge whatever section is selected.
 */
export const BASELINE = [
  'TOKEN-001',
  'TOKEN-003',
  'AUTH-001',
  'READ-001',
  'READ-002',
  'VAL-001',
  'CFG-001',
  'CFG-006',
  'IDEM-002',
];

/**
 * What a run for the mutant selects: every check citing a clause the mutant breaks, and the
 * baseline. A mutant caught only by a check that cites none of its clauses would say the
 * register misses a citation, so it counts as not caught.
 */
export function selectionFor(mutant: ClauseMutant): string {
  return createRegistry()
    .all()
    .filter((c) => BASELINE.includes(c.id) || c.clauses.some((id) => mutant.clauses.includes(id)))
    .map((c) => c.id)
    .join(',');
}

/** Each mutant's exit code: 1 a must check failed, 2 the suite could not judge, 0 it passed. */

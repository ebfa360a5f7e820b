/**
 * Which checks judge each clause of the register: the `run` checks (the registry), the
 * `receiver` checks and the `client` checks. A clause judged by none must say why it cannot be judged from
 * outside; `gaps` lists those that do neither, and the test suite holds it empty.
 */
import { createRegistry } from './modes/run/checks/index.ts';
import { CLAUSES } from './core/clauses.ts';
import { createClientRegistry } from './modes/client/checks/index.ts';
import { createReceiverRegistry } from './modes/receiver/checks/index.ts';

export interface Traceability {
  judgedBy: Map<string, string[]>;
  checkable: number;
  notCheckable: number;
  /** Clauses with neither a check nor a reason. */
  gaps: string[];
}

export function traceability(): Traceability {
  const judgedBy = new Map<string, string[]>();
  const cite = (id: string, clauses: readonly string[]) => {
    for (const c of clauses) judgedBy.set(c, [...(judgedBy.get(c) ?? []), id]);
  };
  for (const check of createRegistry().all()) cite(check.id, check.clauses);
  for (const check of createReceiverRegistry(undefined).all()) cite(check.id, check.clauses);
  for (const check of createClientRegistry().all()) cite(check.id, check.clauses);
  const notCheckable = CLAUSES.filter((c) => c.notCheckable).length;
  return {
    judgedBy,
    checkable: CLAUSES.filter((c) => judgedBy.has(c.id)).length,
    notCheckable,
    gaps: CLAUSES.filter((c) => !c.notCheckable && !judgedBy.has(c.id)).map((c) => c.id),
  };
}

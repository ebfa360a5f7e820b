/**
 * Which checks judge each clause of the register: the checks of every mode (modes/index.ts).
 * A clause judged by none must say why it cannot be judged from outside; `gaps` lists
 * those that do neither, and the test suite holds it empty.
 */
import { CLAUSES } from './core/clauses.ts';
import { MODES } from './modes/index.ts';

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
  for (const mode of MODES) for (const check of mode.checks()) cite(check.id, check.clauses);
  const notCheckable = CLAUSES.filter((c) => c.notCheckable).length;
  return {
    judgedBy,
    checkable: CLAUSES.filter((c) => judgedBy.has(c.id)).length,
    notCheckable,
    gaps: CLAUSES.filter((c) => !c.notCheckable && !judgedBy.has(c.id)).map((c) => c.id),
  };
}

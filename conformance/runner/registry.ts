/**
 * The registry of checks: each check is registered once under its id (duplicates are
 * refused, so an id always names one rule), listed in registration order and selected
 * by glob (`--only 'IDEM-*,AUTH-003'`).
 */
import type { Check, RegisteredCheck } from './check-definition.ts';
import { clause, renderRule } from '../core/clauses.ts';
import type { Level } from '../core/outcome.ts';
import { SetupError } from '../core/outcome.ts';

/**
 * A check's level is the strength of what it cites: `must` when any cited clause is a
 * must, `should` when all are; a rule of our own makes it `assumption`.
 */
export function levelOf(check: Pick<Check<unknown>, 'assumption' | 'level' | 'clauses'>): Level {
  if (check.assumption) return 'assumption';
  if (check.level === 'should') return 'should';
  return check.clauses.some((id) => clause(id).strength === 'must') ? 'must' : 'should';
}

/** `Ctx`: what the checks run against, given by the mode (a target, a receiver, a client's run). */
export class Registry<Ctx> {
  private readonly checks = new Map<string, RegisteredCheck<Ctx>>();

  register(...checks: Check<Ctx>[]): this {
    for (const check of checks) {
      if (!/^[A-Z]+-\d{3}$/.test(check.id)) throw new Error(`Check id ${check.id} is not of the form ABC-123.`);
      if (this.checks.has(check.id)) throw new Error(`Check id ${check.id} is registered twice; ids must be unique.`);
      if (check.clauses.length === 0) throw new Error(`Check ${check.id} cites no clause of the document.`);
      for (const id of check.clauses) {
        if (clause(id).notCheckable) throw new Error(`Check ${check.id} cites ${id}, registered as not checkable.`);
      }
      this.checks.set(check.id, { ...check, level: levelOf(check), rule: renderRule(check.clauses) });
    }
    return this;
  }

  all(): RegisteredCheck<Ctx>[] {
    return [...this.checks.values()];
  }

  get(id: string): RegisteredCheck<Ctx> | undefined {
    return this.checks.get(id);
  }

  /**
   * Checks whose id matches any of the comma-separated globs (`*` and `?`), less those
   * matching a glob written `!glob`; exclusions alone start from every check.
   */
  select(globs: string | undefined): RegisteredCheck<Ctx>[] {
    if (!globs) return this.all();
    const parts = globs
      .split(',')
      .map((g) => g.trim())
      .filter(Boolean);
    const include = parts.filter((g) => !g.startsWith('!')).map(globToRegExp);
    const exclude = parts.filter((g) => g.startsWith('!')).map((g) => globToRegExp(g.slice(1)));
    return this.all().filter(
      (check) =>
        (include.length === 0 || include.some((p) => p.test(check.id))) && !exclude.some((p) => p.test(check.id)),
    );
  }
}

/** `*` any run of characters, `?` one character, `[...]` a character class. */
export function globToRegExp(glob: string): RegExp {
  const escaped = glob
    .replace(/[.+^${}()|\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  try {
    return new RegExp(`^${escaped}$`, 'i');
  } catch {
    throw new SetupError(`--only ${glob}: not a valid glob.`);
  }
}

/**
 * The registry of checks: each check is registered once under its id (duplicates are
 * refused, so an id always names one rule), listed in registration order and selected
 * by glob (`--only 'IDEM-*,AUTH-003'`).
 */
import type { Check } from './check.ts';
import { SetupError } from './outcome.ts';

export class Registry {
  private readonly checks = new Map<string, Check>();

  register(...checks: Check[]): this {
    for (const check of checks) {
      if (!/^[A-Z]+-\d{3}$/.test(check.id)) throw new Error(`Check id ${check.id} is not of the form ABC-123.`);
      if (this.checks.has(check.id)) throw new Error(`Check id ${check.id} is registered twice; ids must be unique.`);
      this.checks.set(check.id, check);
    }
    return this;
  }

  all(): Check[] {
    return [...this.checks.values()];
  }

  get(id: string): Check | undefined {
    return this.checks.get(id);
  }

  /** Checks whose id matches any of the comma-separated globs (`*` and `?`). */
  select(globs: string | undefined): Check[] {
    if (!globs) return this.all();
    const patterns = globs
      .split(',')
      .map((g) => g.trim())
      .filter(Boolean)
      .map(globToRegExp);
    return this.all().filter((check) => patterns.some((p) => p.test(check.id)));
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

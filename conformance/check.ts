/** A check: one rule of the service document, registered under a stable id. */
import type { Capability } from './adapter.ts';
import type { CheckContext } from './context/check.ts';
import type { Level } from './outcome.ts';

export interface Check {
  /** Stable id, e.g. IDEM-002; the registry refuses duplicates. */
  id: string;
  level: Level;
  /** The clause of the service document the check enforces, e.g. "Idempotency rules 2". */
  rule: string;
  /** The document section it belongs to, for the grouped summary. */
  section: string;
  title: string;
  /**
   * The adapter capabilities it cannot run without (it is skipped, naming them, when the
   * adapter lacks one). Checks that change an organisation (its clock, keys, secret,
   * faults) work on one of their own, so they need createOrganisation too.
   */
  requires?: readonly Capability[];
  /** Capabilities it uses when the adapter offers them, and does without otherwise (to finish sooner). */
  uses?: readonly Capability[];
  /** `after` checks read what the `main` ones saw (response conformance). */
  phase?: 'main' | 'after';
  /** Waits in real time (the webhook answer limit): started first so it overlaps the rest. */
  slow?: boolean;
  run(ctx: CheckContext): Promise<void>;
}

/** A check: clauses of the service document, enforced under a stable id. */
import type { Capability } from '../core/adapter.ts';
import type { Level } from '../core/outcome.ts';

/**
 * `Ctx` is what the check runs against, given by its mode: a target (`run`), a merchant's
 * receiver (`receiver`) or a client's driver (`client`), so every mode shares ids,
 * clauses, levels, the judge (runner/judge.ts) and the reports.
 */
export interface Check<Ctx> {
  /** Stable id, e.g. IDEM-002; the registry refuses duplicates. */
  id: string;
  /** The clause ids (conformance/core/clauses.ts, anchors in SERVICE.md) it enforces; at least one. */
  clauses: readonly string[];
  /**
   * A rule of ours the check also relies on, where the document leaves a choice open
   * ("identical body" means the same JSON value): the check is then at level `assumption`.
   */
  assumption?: string;
  /** Softer than the clauses it cites, when its bound is an allowance of ours. */
  level?: 'should';
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
  /** Judges what reaches the suite's receiver: it runs only after the delivery preflight saw one arrive. */
  webhooks?: boolean;
  /** Gives payments the suite's receiver as webhookUrl when the delivery preflight saw one arrive, and does without otherwise. */
  usesWebhooks?: boolean;
  /** Searches for as long as --explore says (skipped with --explore 0), with time to shrink what it finds. */
  explores?: boolean;
  run(ctx: Ctx): Promise<void>;
}

/** A check as the registry holds it: its level and rule worked out from its clauses. */
export interface RegisteredCheck<Ctx> extends Omit<Check<Ctx>, 'level'> {
  level: Level;
  /** The cited clause ids rendered for people: "idem.conflict, order.idempotency". */
  rule: string;
}

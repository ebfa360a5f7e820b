/**
 * What a check works with, by concern: `api` (the target's public API, every exchange
 * recorded), `target` (the adapter: organisations, clock, attempts, deliveries, faults,
 * keys), `hooks` (the suite's webhook receiver). Assertions are plain functions
 * (assert.ts). Everything is recorded under the check's id.
 */
import { randomUUID } from 'node:crypto';
import type { Capability } from '../../../core/adapter.ts';
import type { Exchange } from '../../../core/exchange.ts';
import type { Check, RegisteredCheck } from '../../../runner/check-definition.ts';
import { Api } from './api.ts';
import { Hooks } from './hooks.ts';
import type { RunContext } from './run-context.ts';
import { Target } from './target.ts';

export class CheckContext {
  readonly exchanges: Exchange[] = [];
  readonly api: Api;
  readonly target: Target;
  readonly hooks: Hooks;
  /** What a passed check says of its run (how much it explored, from which seed). */
  note = '';

  constructor(
    readonly run: RunContext,
    readonly id: string,
    /** What the check declared it requires or uses: the only capabilities it may call. */
    declared: readonly Capability[],
    /** Aborted when the check is abandoned (its time ran out): its requests and waits stop. */
    readonly signal: AbortSignal = new AbortController().signal,
    /** The clauses the check enforces. */
    clauses: readonly string[] = [],
  ) {
    this.api = new Api(run, id, signal, this.exchanges);
    this.target = new Target(run, this.api, declared, clauses);
    this.hooks = new Hooks(run, id, signal);
  }

  /** A fresh Idempotency-Key, named after the check. */
  newKey(): string {
    return `conf-${this.id}-${randomUUID()}`;
  }
}

/** A check of `run`: it runs against a target, through its context. */
export type RunCheck = Check<CheckContext>;
/** A check of `run` as the registry holds it. */
export type RegisteredRunCheck = RegisteredCheck<CheckContext>;

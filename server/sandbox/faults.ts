/**
 * Faults armed through the sandbox API (`POST /sandbox/faults`), taken by the code paths
 * they break: each arming makes the next matching operation of that organisation fail
 * once. The counts live in the store, so they survive a restart; the set of organisations
 * with any armed fault is kept here, so that the common case, no fault, costs a create no
 * write of its own.
 */
import type { FaultKind, Store } from '../store/types.ts';

export class Faults {
  private constructor(
    private readonly store: Store,
    private readonly armed: Set<string>,
  ) {}

  static async open(store: Store): Promise<Faults> {
    return new Faults(store, new Set(await store.organisationsWithFaults()));
  }

  async arm(orgId: string, kind: FaultKind, times: number): Promise<void> {
    this.armed.add(orgId);
    await this.store.setFault(orgId, kind, times);
  }

  /** Uses up one arming of the fault; true when it was armed. */
  async take(orgId: string, kind: FaultKind): Promise<boolean> {
    if (!this.armed.has(orgId)) return false;
    return this.store.takeFault(orgId, kind);
  }
}

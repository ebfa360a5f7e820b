/**
 * Faults armed through the sandbox API (`POST /sandbox/faults`), taken by the code paths
 * they break: each arming makes the next matching operation of that organisation fail
 * once. The counts live in the store, so they survive a restart. A store's only user
 * (SQLite) also keeps here the set of organisations with any armed fault, so that the
 * common case, no fault, costs a create no write of its own; servers sharing a database
 * ask it every time, since a fault may be armed through any of them.
 */
import type { FaultKind, Store } from '../store/types.ts';

export class Faults {
  private constructor(
    private readonly store: Store,
    /** Organisations with an armed fault, when the store is exclusive. */
    private readonly armed: Set<string> | undefined,
  ) {}

  static async open(store: Store): Promise<Faults> {
    return new Faults(store, store.exclusive ? new Set(await store.organisationsWithFaults()) : undefined);
  }

  async arm(orgId: string, kind: FaultKind, times: number): Promise<void> {
    this.armed?.add(orgId);
    await this.store.setFault(orgId, kind, times);
  }

  /** Uses up one arming of the fault; true when it was armed. */
  async take(orgId: string, kind: FaultKind): Promise<boolean> {
    if (this.armed && !this.armed.has(orgId)) return false;
    return this.store.takeFault(orgId, kind);
  }
}

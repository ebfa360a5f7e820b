/** The messages between the server and its background thread (thread.ts ↔ worker.ts). */
import type { ScryptOptions } from 'node:crypto';

export interface WorkerData {
  /** How often the thread checkpoints each watched database. */
  checkpointIntervalMs: number;
}

/** Asked of the thread; each `id` gets one Answer. */
export type Question =
  | { type: 'scrypt'; id: number; password: string; salt: Uint8Array; keylen: number; options: ScryptOptions }
  | { type: 'watch'; id: number; file: string; rewindFrames: number }
  | { type: 'unwatch'; id: number; watchId: number };

export interface Answer {
  id: number;
  key?: Uint8Array;
  error?: string;
}

/** The rewind handshake: the thread asks for a hold, the server confirms it, the thread releases it. */
export type Rewind = { type: 'hold' | 'release'; watchId: number };
export type Held = { type: 'held'; watchId: number };

export type FromServer = Question | Held;
export type FromThread = Answer | Rewind;

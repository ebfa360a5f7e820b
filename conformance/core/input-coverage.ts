/**
 * What a run exercised of the input space (modes/run/input-space.ts): the classes of input
 * the document allows, by operation, and the configuration table's cells. A report carries it
 * beside the description coverage; `--min-input-coverage` holds a run to it.
 */
export interface InputCoverage {
  /** Exercised of all, in percent (one decimal, rounded down). */
  percent: number;
  exercised: number;
  total: number;
  /** The configuration table's cells apart: exercised of all. */
  cells: { exercised: number; total: number };
  /** Each operation's classes (cells included), and those not exercised (cells left out: they are many and named alike). */
  byOperation: Array<{ operation: string; exercised: number; total: number; notExercised: string[] }>;
}

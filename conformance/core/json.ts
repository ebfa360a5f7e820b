/**
 * Reading JSON received from a target, whose shape is exactly what is under test: a path
 * that does not exist reads as undefined, never as an exception.
 */

export type JsonObject = Record<string, unknown>;

export const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The value at a path of object keys and array indexes, or undefined where the path does not exist. */
export function at(value: unknown, ...path: Array<string | number>): unknown {
  let here = value;
  for (const step of path) {
    if (typeof step === 'number') {
      if (!Array.isArray(here)) return undefined;
      here = here[step];
    } else {
      if (!isObject(here)) return undefined;
      here = here[step];
    }
  }
  return here;
}

/** The string at a path, or undefined. */
export function text(value: unknown, ...path: Array<string | number>): string | undefined {
  const found = at(value, ...path);
  return typeof found === 'string' ? found : undefined;
}

/** The array at a path, or an empty one. */
export function list(value: unknown, ...path: Array<string | number>): unknown[] {
  const found = at(value, ...path);
  return Array.isArray(found) ? found : [];
}

/** A JSON value for a message: `"completed"`, `null`, `undefined`. */
export const show = (value: unknown): string => (value === undefined ? 'undefined' : JSON.stringify(value));

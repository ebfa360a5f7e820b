/**
 * JSON text typed by the value it holds. The handlers' replies (http/operation.ts) and the
 * answers the services keep (scope.ts, SessionAnswers) both carry it, so it lives below both.
 */

declare const shapeOf: unique symbol;
/** JSON text known to hold a `T`: an answer serialised once and kept (a create's, to replay it). */
export type JsonText<T> = string & { readonly [shapeOf]: T };
export const jsonText = <T>(value: T): JsonText<T> => JSON.stringify(value) as JsonText<T>;

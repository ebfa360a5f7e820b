/**
 * Handlers typed by the description: each operation's request (path and query parameters,
 * body) and its answers (a body per documented status) come from the generated
 * `operations`, so a description change that breaks a handler fails `tsc`. The pipeline
 * (openapi/pipeline.ts) validates every request against the same description before a
 * handler sees it; that is what makes the one cast between the two (`untyped`) sound.
 * The handlers (handlers/, sandbox/handlers.ts) are written to these types and handed to
 * the HTTP layer by the composition root (app.ts).
 */
import type { JsonText } from '../json-text.ts';

/** What every operation of openapi-typescript's `operations` looks like. */
interface OperationShape {
  parameters: { query?: unknown; path?: unknown };
  requestBody?: unknown;
  responses: object;
}

type ContentOf<B> = B extends { content: infer C } ? C[keyof C] : undefined;
type JsonOf<R> = R extends { content: { 'application/json': infer J } } ? J : never;
type Responses<O> = O extends { responses: infer R } ? R : never;

export type BodyOf<O extends OperationShape> = O extends { requestBody: infer B } ? ContentOf<B> : undefined;
export type PathOf<O extends OperationShape> = O['parameters'] extends { path: infer P } ? P : Record<string, never>;
export type QueryOf<O extends OperationShape> = O['parameters'] extends { query?: infer Q }
  ? [Q] extends [undefined]
    ? Record<string, never>
    : NonNullable<Q>
  : Record<string, never>;
/** The body of the operation's 200 answer. */
export type OkBody<O extends OperationShape> = JsonOf<Responses<O>[200 & keyof Responses<O>]>;

export interface OperationRequest<O extends OperationShape> {
  params: PathOf<O>;
  query: QueryOf<O>;
  /** Lower-case names, as Node gives them. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: BodyOf<O>;
}

/** An answer the description documents: one of its statuses with that status's body. */
export type Reply<O extends OperationShape> =
  | {
      [S in keyof Responses<O> & number]: {
        status: S;
        body: JsonOf<Responses<O>[S]>;
        headers?: Readonly<Record<string, string>>;
      };
    }[keyof Responses<O> & number]
  | { status: number; json: JsonText<OkBody<O>>; replayed?: boolean };

export type Handler<O extends OperationShape, S> = (request: OperationRequest<O>, scope: S) => Promise<Reply<O>>;

type Method = 'get' | 'put' | 'post' | 'delete' | 'patch';
/** The operations some path of `Paths` serves (webhooks, which the server sends, are not among them). */
type PathOperation<Paths> = {
  [P in keyof Paths]: { [M in Method & keyof Paths[P]]: Paths[P][M] }[Method & keyof Paths[P]];
}[keyof Paths];

/** One handler per operation the description's paths serve, keyed by operationId. */
export type Handlers<Operations, Paths, S> = {
  [K in keyof Operations as Operations[K] extends PathOperation<Paths>
    ? K
    : never]: Operations[K] extends OperationShape ? Handler<Operations[K], S> : never;
};

/** What the pipeline sends on: a status with a body or with the JSON text of one. */
export interface AnyReply {
  status: number;
  body?: unknown;
  json?: string;
  replayed?: boolean;
  headers?: Readonly<Record<string, string>>;
}

export interface AnyRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: unknown;
}

export type AnyHandler<S> = (request: AnyRequest, scope: S) => Promise<AnyReply>;

/**
 * The registry as the pipeline calls it. Sound because the pipeline calls a handler only
 * with a request its operation's schemas accepted, and every Reply is an AnyReply.
 */
export const untyped = <Operations, Paths, S>(
  handlers: Handlers<Operations, Paths, S>,
): Readonly<Record<string, AnyHandler<S>>> => handlers as unknown as Record<string, AnyHandler<S>>;

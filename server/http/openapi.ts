/**
 * One openapi-backend instance per description. The request pipeline, in order:
 *
 *   route    unknown path → 404 not_found; known path, other method → 405
 *   security bearer check → 401 with the precise code
 *   validate parameters and body against the description → 400 validation_failed
 *   handler  keyed by operationId
 *
 * ajv is the 2020-12 dialect of OpenAPI 3.1, with formats, `uri` also parsed by the URL
 * Standard and `multipleOf` decided on decimals (formats.ts): 19.99 passes
 * `multipleOf: 0.01`; 1.005 and 1e-10 do not.
 *
 * The library's definition handling, handler registry and ajv validators stay; its
 * router (`matchOperation`, `parseRequest`), the request validator's orchestration and
 * the pipeline that runs them are replaced by equivalents (router.ts,
 * validate-request.ts, `Backend.pipeline`) that give the same answers for a fraction of
 * the per-request work.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Context as KoaContext } from 'koa';
import { OpenAPIBackend, type Context, type Document, type Operation, type Request } from 'openapi-backend';
import { ApiError, methodNotAllowed, validationFailed, type ErrorDetail } from './errors.ts';
import { readExactly } from './formats.ts';
import type { Reply } from '../domain/idempotency.ts';
import { LeanRouter } from './router.ts';
import { leanValidateRequest } from './validate-request.ts';
import { detailsFromAjv } from './validation.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export type Handler<S> = (c: Context, scope: S) => Promise<Reply>;

export interface BackendOptions<S> {
  definition: Document;
  handlers: Record<string, Handler<S>>;
  security: Record<string, (c: Context, scope: S) => Promise<boolean>>;
  /** The error for a failed security check (the scope can carry the reason). */
  unauthorized: (c: Context, scope: S) => ApiError;
  /** Operations that answer validation failures in their own way (the token endpoint). */
  onValidationFail?: (c: Context, scope: S) => Reply | undefined;
  /**
   * Field checks the schemas cannot make (they depend on the caller), run with schema
   * validation so that `details` lists every problem at once; a field the schemas already
   * refused is not checked again.
   */
  moreValidation?: (c: Context, scope: S) => readonly ErrorDetail[];
}

/** The validation result, with what `moreValidation` found (merged by `validationFail`). */
type Validation = Context['validation'] & { more?: readonly ErrorDetail[] };

export interface RequestInput {
  method: string;
  path: string;
  headers: KoaContext['headers'];
  query: Record<string, string | string[]>;
  body: unknown;
}

export class Backend<S> {
  private constructor(
    private readonly api: OpenAPIBackend,
    /** Every query parameter some operation declares. */
    private readonly queryNames: ReadonlySet<string>,
    private readonly moreValidation?: BackendOptions<S>['moreValidation'],
  ) {}

  static async create<S>(options: BackendOptions<S>): Promise<Backend<S>> {
    const api = new OpenAPIBackend({
      definition: options.definition,
      // Quick mode skips openapi-backend's definition check, which knows OpenAPI 3.0 only
      // (ours is 3.1, linted by Redocly), and compiles each operation's validators on its
      // first request instead of all of them (responses included) at start: start-up
      // takes milliseconds instead of seconds.
      quick: true,
      strict: false,
      validate: true,
      ignoreTrailingSlashes: false,
      customizeAjv: (_ajv: unknown, ajvOpts: object) => {
        // validateSchema off: each of openapi-backend's ajv instances would otherwise compile
        // the 2020-12 meta-schema (about a second of CPU and several MB) only to check our
        // own schemas, which Redocly lint and the example tests already check. Requests are
        // validated exactly as before.
        const ajv = new Ajv2020({ ...ajvOpts, strict: false, allErrors: true, validateSchema: false });
        readExactly(addFormats(ajv));
        return ajv as never;
      },
    });
    await api.init();
    // The router rebuilds its flat list of operations (with lodash) twice per request;
    // the definition never changes after init, so build it once.
    const operations = api.router.getOperations();
    api.router.getOperations = () => operations;
    // Routing and request parsing, precompiled once (see router.ts); the validator shares
    // this router object, so its own parse goes the same way.
    const lean = new LeanRouter(operations, api.router.apiRoot, {
      parseRequest: api.router.parseRequest.bind(api.router),
    });
    api.router.matchOperation = lean.matchOperation.bind(lean) as typeof api.router.matchOperation;
    api.router.parseRequest = lean.parseRequest.bind(lean);
    api.validator.validateRequest = leanValidateRequest(api.validator, api.router);
    const queryNames = new Set(
      operations.flatMap((op) => (op.parameters ?? []).flatMap((p) => ('in' in p && p.in === 'query' ? [p.name] : []))),
    );

    const wrap = (h: Handler<S>) => (c: Context, scope: S) => h(c, scope);
    for (const [operationId, handler] of Object.entries(options.handlers)) api.register(operationId, wrap(handler));
    for (const [name, check] of Object.entries(options.security))
      api.registerSecurityHandler(name, (c: Context, scope: S) => check(c, scope));
    api.register({
      notFound: async () => {
        throw new ApiError(404, 'not_found', 'No such resource.');
      },
      methodNotAllowed: async (c: Context) => {
        throw methodNotAllowed(c.request.method, c.request.path, lean.allowedMethods(c.request.path));
      },
      unauthorizedHandler: async (c: Context, scope: S) => {
        throw options.unauthorized(c, scope);
      },
      validationFail: async (c: Context, scope: S) => {
        const own = options.onValidationFail?.(c, scope);
        if (own) return own;
        const details = detailsFromAjv(c.validation.errors ?? []);
        for (const detail of (c.validation as Validation).more ?? []) {
          if (!details.some((d) => d.field === detail.field)) details.push(detail);
        }
        throw validationFailed(details);
      },
      // Every described operation has a handler; reaching this is a server bug.
      notImplemented: async (c: Context) => {
        throw new Error(`no handler for ${c.operation?.operationId}`);
      },
    });
    return new Backend<S>(api, queryNames, options.moreValidation);
  }

  handle(input: RequestInput, scope: S): Promise<Reply> {
    // Query parameters no operation declares are ignored, not refused: clients and proxies
    // add harmless ones (cache busters) and the document names no error for them.
    const query: Record<string, string | string[]> = {};
    for (const name of this.queryNames) if (input.query[name] !== undefined) query[name] = input.query[name]!;
    // HEAD is GET without the body (RFC 9110 9.3.2); Node leaves the body out.
    const method = input.method === 'HEAD' ? 'GET' : input.method;
    return this.pipeline({ ...input, method, query } as Request, scope);
  }

  /**
   * The steps of `OpenAPIBackend.handleRequest`, in its order and with its outcomes, for
   * what this server registers (no pre- or post-handlers, validation on, no coercion):
   * route (404, 405) → every security scheme of the operation (401 through
   * `unauthorizedHandler` unless one requirement is wholly met) → request validation,
   * with our `moreValidation` (`validationFail`) → the operation's handler. The library
   * wraps these steps in an async closure, lodash calls and three promise chains per
   * scheme, about a twentieth of a GET.
   */
  private async pipeline(req: Request, scope: S): Promise<Reply> {
    const { api } = this;
    const handlers = api.handlers as Record<string, Handler<S> | undefined>;
    const context = { api, request: api.router.parseRequest(req) } as Context;
    let operation: Operation;
    try {
      operation = api.router.matchOperation(req, true);
    } catch (error) {
      const methodNotAllowed = error instanceof Error && error.message.startsWith('405');
      return handlers[methodNotAllowed ? 'methodNotAllowed' : 'notFound']!(context, scope);
    }
    context.operation = operation;
    context.request = api.router.parseRequest(req, operation);

    const requirements = operation.security ?? [];
    const results: Record<string, unknown> = {};
    for (const requirement of requirements) {
      for (const name of Object.keys(requirement)) {
        if (name in results) continue;
        const check = api.securityHandlers[name];
        try {
          results[name] = check ? await check(context, scope) : undefined;
        } catch (error) {
          results[name] = { error };
        }
      }
    }
    const met = (name: string) => {
      const result = results[name];
      return Boolean(result) && !(typeof result === 'object' && (result as { error?: unknown }).error);
    };
    const authorized = requirements.some((requirement) => Object.keys(requirement).every(met));
    context.security = { authorized, ...results } as Context['security'];
    if (!authorized && requirements.length > 0) return handlers.unauthorizedHandler!(context, scope);

    context.validation = api.validator.validateRequest(req, operation);
    const more = this.moreValidation?.(context, scope) ?? [];
    if (more.length > 0) Object.assign(context.validation, { valid: false, more } satisfies Partial<Validation>);
    if (context.validation.errors || more.length > 0) return handlers.validationFail!(context, scope);
    const handler = handlers[operation.operationId!] ?? handlers.notImplemented!;
    return handler(context, scope);
  }
}

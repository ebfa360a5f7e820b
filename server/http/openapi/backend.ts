/**
 * One API served from one description: openapi-backend reads the description (operations,
 * security, compiled ajv validators), the pipeline (pipeline.ts) decides each request,
 * and here each decision becomes its answer:
 *
 *   notFound → 404 not_found; methodNotAllowed → 405 with Allow; unauthorized → 401 (the
 *   caller's error, with the precise code); invalid (or a `moreValidation` finding) → 400
 *   validation_failed listing every failing field; valid → the operation's handler.
 *
 * ajv is the 2020-12 dialect of OpenAPI 3.1, with formats, `uri` also parsed by the URL
 * Standard and `multipleOf` decided on decimals (formats.ts): 19.99 passes
 * `multipleOf: 0.01`; 1.005 and 1e-10 do not.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { type Document, OpenAPIBackend, type Operation, type ParsedRequest } from 'openapi-backend';
import { type ErrorDetail, validationFailed } from '../../domain/errors.ts';
import { ApiError, methodNotAllowed } from '../errors.ts';
import type { AnyHandler, AnyReply } from '../operation.ts';
import { readExactly } from './formats.ts';
import { Pipeline, type SecurityCheck } from './pipeline.ts';
import type { PipelineRequest } from './router.ts';
import { detailsFromAjv } from './validation.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** openapi-backend set up for a description of ours, initialised. */
export async function openApi(definition: Document): Promise<OpenAPIBackend> {
  const api = new OpenAPIBackend({
    definition,
    // Quick mode skips openapi-backend's definition check, which knows OpenAPI 3.0 only
    // (ours is 3.1, linted by Redocly), and compiles each operation's validators on its
    // first request instead of all of them (responses included) at start.
    quick: true,
    strict: false,
    validate: true,
    ignoreTrailingSlashes: false,
    customizeAjv: (_ajv: unknown, ajvOpts: object) => {
      // validateSchema off: each of openapi-backend's ajv instances would otherwise compile
      // the 2020-12 meta-schema only to check our own schemas, which Redocly lint and the
      // example tests already check. Requests are validated exactly as before.
      const ajv = new Ajv2020({ ...ajvOpts, strict: false, allErrors: true, validateSchema: false });
      readExactly(addFormats(ajv));
      return ajv as never;
    },
  });
  await api.init();
  return api;
}

export interface BackendOptions<S> {
  definition: Document;
  handlers: Readonly<Record<string, AnyHandler<S>>>;
  security: Readonly<Record<string, SecurityCheck<S>>>;
  /** The error for a failed security check (the scope can carry the reason). */
  unauthorized: (scope: S) => ApiError;
  /** An answer of the operation's own for a request that fails validation (the token endpoint's). */
  onInvalid?: (operation: Operation, scope: S) => AnyReply | undefined;
  /**
   * Field checks the schemas cannot make (they depend on the caller), run with schema
   * validation so that `details` lists every problem at once; a field the schemas already
   * refused is not checked again.
   */
  moreValidation?: (operation: Operation, request: ParsedRequest, scope: S) => readonly ErrorDetail[];
}

export class Backend<S> {
  private constructor(
    private readonly pipeline: Pipeline<S>,
    private readonly options: BackendOptions<S>,
    /** Every query parameter some operation declares. */
    readonly queryNames: ReadonlySet<string>,
  ) {}

  static async create<S>(options: BackendOptions<S>): Promise<Backend<S>> {
    const api = await openApi(options.definition);
    const queryNames = new Set(
      api
        .getOperations()
        .flatMap((op) => (op.parameters ?? []).flatMap((p) => ('in' in p && p.in === 'query' ? [p.name] : []))),
    );
    return new Backend(new Pipeline(api, options.security), options, queryNames);
  }

  async handle(req: PipelineRequest, scope: S): Promise<AnyReply> {
    const decision = await this.pipeline.decide(req, scope);
    switch (decision.outcome) {
      case 'notFound':
        throw new ApiError('not_found', 'No such resource.');
      case 'methodNotAllowed':
        throw methodNotAllowed(req.method, req.path, decision.allowed);
      case 'unauthorized':
        throw this.options.unauthorized(scope);
    }
    const { operation, request } = decision;
    const more = this.options.moreValidation?.(operation, request, scope) ?? [];
    if (decision.outcome === 'invalid' || more.length > 0) {
      const own = this.options.onInvalid?.(operation, scope);
      if (own) return own;
      const details = detailsFromAjv(decision.outcome === 'invalid' ? decision.errors : []);
      for (const detail of more) if (!details.some((d) => d.field === detail.field)) details.push(detail);
      throw validationFailed(details);
    }
    const handler = this.options.handlers[operation.operationId!];
    // Every described operation has a handler (the registries are typed so); reaching this is a server bug.
    if (!handler) throw new Error(`no handler for ${operation.operationId}`);
    const { params, query, headers, requestBody } = request;
    return handler({ params, query, headers, body: requestBody }, scope);
  }
}

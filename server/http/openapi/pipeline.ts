/**
 * What openapi-backend's `handleRequest` decides about a request, in its order and with
 * its outcomes, for what this server uses of it (no pre- or post-handlers, validation on,
 * no coercion), made by our own components (router.ts, request-validator.ts) on the
 * library's operations and validators:
 *
 *   route    unknown path → notFound; known path, other method → methodNotAllowed
 *   security every scheme of the operation; unless one requirement is wholly met → unauthorized
 *   validate parameters and body against the description → invalid, with ajv's errors
 *   otherwise → valid, with the request as parsed for the handler
 *
 * The library wraps these steps in closures, lodash calls and promise chains per scheme,
 * and parses the request three times. The differential test
 * (test/server/pipeline.test.ts) runs requests generated from the description through
 * both and checks that the decisions are the same.
 */
import type { ErrorObject } from 'ajv';
import type { OpenAPIBackend, Operation, ParsedRequest } from 'openapi-backend';
import { RequestValidator } from './request-validator.ts';
import { OperationRouter, type PipelineRequest } from './router.ts';

/** A security scheme's check: truthy (and not `{ error }`) when the request meets it. */
export type SecurityCheck<S> = (request: ParsedRequest, scope: S) => unknown;

/** Each checked scheme's result, as the library keeps them in `context.security`. */
export type SecurityResults = Record<string, unknown>;

export type Decision =
  | { outcome: 'notFound' }
  | { outcome: 'methodNotAllowed'; allowed: string[] }
  | { outcome: 'unauthorized'; operation: Operation; request: ParsedRequest; security: SecurityResults }
  | { outcome: 'invalid'; operation: Operation; request: ParsedRequest; errors: ErrorObject[] }
  | { outcome: 'valid'; operation: Operation; request: ParsedRequest };

const met = (result: unknown) =>
  Boolean(result) && !(typeof result === 'object' && (result as { error?: unknown }).error);

export class Pipeline<S> {
  private readonly router: OperationRouter;
  private readonly validator: RequestValidator;

  /** `api`: initialised; its operations and validators are read, nothing of it is changed. */
  constructor(
    api: OpenAPIBackend,
    private readonly security: Readonly<Record<string, SecurityCheck<S>>>,
  ) {
    this.router = new OperationRouter(api.router.getOperations(), api.router.apiRoot);
    this.validator = new RequestValidator(api.validator);
  }

  async decide(req: PipelineRequest, scope: S): Promise<Decision> {
    const match = this.router.match(req.method, req.path);
    if (!match.found) {
      return match.allowed.length > 0
        ? { outcome: 'methodNotAllowed', allowed: match.allowed }
        : { outcome: 'notFound' };
    }
    const { operation } = match;
    const request = this.router.parse(req, operation);

    // Each scheme once, even when several requirements name it; a check that throws fails.
    const requirements = operation.security ?? [];
    const results: SecurityResults = {};
    for (const requirement of requirements) {
      for (const name of Object.keys(requirement)) {
        if (name in results) continue;
        const check = this.security[name];
        try {
          results[name] = check ? await check(request, scope) : undefined;
        } catch (error) {
          results[name] = { error };
        }
      }
    }
    if (requirements.length > 0 && !requirements.some((r) => Object.keys(r).every((name) => met(results[name])))) {
      return { outcome: 'unauthorized', operation, request, security: results };
    }

    const errors = this.validator.validate(req, request, operation);
    if (errors) return { outcome: 'invalid', operation, request, errors };
    return { outcome: 'valid', operation, request };
  }
}

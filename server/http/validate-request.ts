/**
 * openapi-backend's `validator.validateRequest`, step for step, without lodash: its
 * `_.omitBy`, `_.entries` and `_.find` over every request cost more than the ajv
 * validation itself. The validators are the library's own (compiled by its
 * OpenAPIValidator with our ajv), run on the same object in the same order, so the
 * answers and ajv's errors are unchanged:
 *
 *   { path, query, header, cookie } from the router's parse (nil ones left out), a
 *   one-value query parameter whose schema is an array made an array, a `parse` error
 *   when a non-object body is not JSON and the operation takes JSON only, and the body
 *   included when it is an object or the content type is exactly application/json.
 */
import type { ErrorObject } from 'ajv';
import type { Operation, OpenAPIRouter, OpenAPIValidator, Request, ValidationResult } from 'openapi-backend';

interface Parameter {
  name?: string;
  in?: string;
  schema?: { type?: unknown };
}

export function leanValidateRequest(
  validator: OpenAPIValidator,
  router: Pick<OpenAPIRouter, 'matchOperation' | 'getOperation' | 'parseRequest'>,
) {
  return function validateRequest(req: Request, given?: Operation | string): ValidationResult<Request> {
    const errors: ErrorObject[] = [];
    const coerced: Request = { ...req };
    const result: ValidationResult<Request> = { valid: true, coerced, errors };
    const operation =
      given === undefined ? router.matchOperation(req) : typeof given === 'string' ? router.getOperation(given) : given;
    if (!operation?.operationId) throw new Error('Unknown operation');
    const validators = validator.getRequestValidatorsForOperation(operation.operationId) || [];
    const { params, query, headers, cookies, requestBody } = router.parseRequest(req, operation);

    if (query) {
      for (const name of Object.keys(query)) {
        if (typeof query[name] !== 'string') continue;
        const parameter = ((operation.parameters ?? []) as Parameter[]).find(
          (p) => p.name === name && p.in === 'query',
        );
        if (parameter?.schema && parameter.schema.type === 'array') query[name] = [query[name] as string];
      }
    }

    const parameters: Record<string, unknown> = {};
    if (params != null) parameters.path = params;
    if (query != null) parameters.query = query;
    if (headers != null) parameters.header = headers;
    if (cookies != null) parameters.cookie = cookies;

    if (typeof req.body !== 'object' && req.body !== undefined) {
      const content = (operation.requestBody as { content?: Record<string, unknown> | null } | undefined)?.content;
      const formats = content == null ? [] : Object.keys(content);
      if (formats.length === 1 && formats[0] === 'application/json') {
        try {
          JSON.parse(`${req.body}`);
        } catch (err) {
          if (err instanceof Error)
            errors.push({
              keyword: 'parse',
              instancePath: '',
              schemaPath: '#/requestBody',
              params: [] as never,
              message: err.message,
            });
        }
      }
    }
    if (typeof requestBody === 'object' || headers['content-type'] === 'application/json')
      parameters.requestBody = requestBody;

    for (const validate of validators) {
      validate(parameters);
      if (validate.errors) errors.push(...validate.errors);
      else if (validator.coerceTypes) {
        coerced.query = parameters.query as Request['query'];
        (coerced as Request & { params?: unknown }).params = parameters.path as never;
      }
    }
    if (errors.length === 0) result.errors = null;
    else result.valid = false;
    return result;
  };
}

/**
 * Request validation as openapi-backend's `validator.validateRequest` makes it, step for
 * step, on our router's parse and without lodash (whose `_.omitBy`, `_.entries` and
 * `_.find` over every request cost more than the validation itself). The validators are
 * the library's own, compiled from the description by its OpenAPIValidator with our ajv
 * (`getRequestValidatorsForOperation`), run on the same object in the same order, so
 * ajv's errors are the library's:
 *
 *   { path, query, header, cookie } from the parse (nil ones left out), a one-value query
 *   parameter whose schema is an array made an array, a `parse` error when a non-object
 *   body is not JSON and the operation takes JSON only, and the body included when it is
 *   an object or the content type is exactly application/json.
 */
import type { ErrorObject } from 'ajv';
import type { OpenAPIValidator, Operation, ParsedRequest } from 'openapi-backend';
import type { PipelineRequest } from './router.ts';

interface Parameter {
  name?: string;
  in?: string;
  schema?: { type?: unknown };
}

export class RequestValidator {
  constructor(private readonly validator: OpenAPIValidator) {}

  /** ajv's errors, or null when the request is valid. `parsed` is left as it was. */
  validate(req: PipelineRequest, parsed: ParsedRequest, operation: Operation): ErrorObject[] | null {
    const errors: ErrorObject[] = [];
    const validators = this.validator.getRequestValidatorsForOperation(operation.operationId!) || [];
    const { cookies, requestBody } = parsed;
    // Copies: the parameter validators coerce types in place, and in the library they work
    // on a parse of their own, so the handler's request stays as it was parsed.
    const params = copy(parsed.params);
    const headers = copy(parsed.headers);
    const query = copy(parsed.query);

    for (const name of Object.keys(query)) {
      if (typeof query[name] !== 'string') continue;
      const parameter = ((operation.parameters ?? []) as Parameter[]).find((p) => p.name === name && p.in === 'query');
      if (parameter?.schema?.type === 'array') query[name] = [query[name] as string];
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
    }
    return errors.length === 0 ? null : errors;
  }
}

function copy<T extends Record<string, unknown>>(values: T): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name in values) {
    const value = values[name];
    out[name] = Array.isArray(value) ? value.slice() : value;
  }
  return out;
}

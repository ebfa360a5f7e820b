/**
 * The request pipeline (server/http/openapi/pipeline.ts, with its router and request
 * validator) against openapi-backend's own `handleRequest`, on requests fast-check
 * generates from both descriptions: known and unknown paths and methods, path parameters
 * with escapes, headers (security checks that pass, fail, throw or return an error
 * object), declared and undeclared query parameters, and bodies taken from the
 * description's examples, mutated, or arbitrary. For each request both must reach the same
 * outcome (404, 405, 401, 400 or the operation), for the same operation, with the same
 * security results, the same ajv errors, and the same request as a handler would see it;
 * or both must throw.
 *
 * The library is the version the server pins (server/package.json); an upgrade that
 * changes any of its answers fails this test.
 */
import fc from 'fast-check';
import type { Context, Document, OpenAPIBackend, Operation } from 'openapi-backend';
import { describe, expect, it } from 'vitest';
import { openApi } from '../../server/http/openapi/backend.ts';
import { type Decision, Pipeline, type SecurityCheck } from '../../server/http/openapi/pipeline.ts';
import type { PipelineRequest } from '../../server/http/openapi/router.ts';
import { loadDescription } from '../support/description.ts';

const RUNS = Number(process.env.PIPELINE_RUNS ?? 1500);

/** A security check's answer, chosen by the Authorization header the request carries. */
function securityAnswer(header: unknown): unknown {
  switch (header) {
    case 'Bearer good':
      return true;
    case 'Bearer user':
      return { user: 'u1' };
    case 'Bearer error-object':
      return { error: 'refused', user: 'u1' };
    case 'Bearer null-error':
      return { error: null, user: 'u1' };
    case 'Bearer throws':
      throw new Error('security check failed');
    case 'Bearer text':
      return 'yes';
    default:
      return false;
  }
}

/** The description's security schemes. */
const schemesOf = (api: OpenAPIBackend) => Object.keys(api.definition.components?.securitySchemes ?? {});

function pipelineFor(api: OpenAPIBackend): Pipeline<undefined> {
  const security: Record<string, SecurityCheck<undefined>> = {};
  for (const name of schemesOf(api)) security[name] = (request) => securityAnswer(request.headers.authorization);
  return new Pipeline(api, security);
}

/** The library's verdict, in the pipeline's terms. */
type Verdict = Omit<Decision, 'operation'> & { operationId?: string };

function referenceFor(api: OpenAPIBackend): (req: PipelineRequest) => Promise<Verdict> {
  for (const name of schemesOf(api))
    api.registerSecurityHandler(name, (c: Context) => securityAnswer(c.request.headers.authorization));
  const operationId = (c: Context) => c.operation.operationId!;
  api.register({
    notFound: () => ({ outcome: 'notFound' }),
    methodNotAllowed: () => ({ outcome: 'methodNotAllowed' }),
    unauthorizedHandler: (c: Context) => {
      const { authorized: _, ...security } = c.security;
      return { outcome: 'unauthorized', operationId: operationId(c), request: c.request, security };
    },
    validationFail: (c: Context) => ({
      outcome: 'invalid',
      operationId: operationId(c),
      request: c.request,
      errors: c.validation.errors,
    }),
  });
  for (const operation of api.getOperations())
    api.register(operation.operationId!, (c: Context) => ({
      outcome: 'valid',
      operationId: operationId(c),
      request: c.request,
    }));
  return (req) => api.handleRequest({ ...req, headers: { ...req.headers } as Record<string, string | string[]> });
}

/** The pipeline's decision with the operation named as the library's verdict names it. */
function verdictOf(decision: Decision): Verdict {
  if (decision.outcome === 'notFound') return decision;
  if (decision.outcome === 'methodNotAllowed') return { outcome: 'methodNotAllowed' };
  const { operation, ...rest } = decision;
  return { ...rest, operationId: operation.operationId };
}

type Outcome = { verdict: Verdict } | { threw: string };
const settle = (run: () => Promise<Verdict>): Promise<Outcome> =>
  run().then(
    (verdict) => ({ verdict }),
    (error: unknown) => ({ threw: error instanceof Error ? error.constructor.name : typeof error }),
  );

/** Every example request body of an operation (dereferenced by openapi-backend). */
function examplesOf(operation: Operation): unknown[] {
  const content = (operation.requestBody as { content?: Record<string, { examples?: object; example?: unknown }> })
    ?.content;
  return Object.values(content ?? {}).flatMap((media) => [
    ...Object.values(media.examples ?? {}).map((e) => (e as { value: unknown }).value),
    ...(media.example === undefined ? [] : [media.example]),
  ]);
}

/** A path segment: plain, escaped (well or badly), empty, or a dot segment. */
const segment = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9_-]{1,24}$/),
  fc.constantFrom('', '.', '..', '%20', '%2F', '%25', '%E2%82%AC', '%', '%zz', '%E2%82', 'a%2Cb', '{id}', 'cs_123'),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
);

function requests(operations: readonly Operation[]): fc.Arbitrary<PipelineRequest> {
  const templates = [...new Set(operations.map((op) => op.path))];
  const queryNames = operations.flatMap((op) =>
    (op.parameters ?? []).flatMap((p) => ('in' in p && p.in === 'query' ? [p.name] : [])),
  );
  const examples = operations.flatMap(examplesOf);

  const fill = (template: string) =>
    fc.array(segment, { minLength: 4, maxLength: 4 }).map((values) => {
      let i = 0;
      return template.replace(/\{[^}]+\}/g, () => values[i++ % values.length]!);
    });
  const path = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...templates).chain(fill) },
    { weight: 1, arbitrary: fc.constantFrom(...templates) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom(...templates).chain(fill),
          fc.constantFrom('/', '/extra', '?q=1', '//', '/attempts', ' '),
        )
        .map(([p, suffix]) => p + suffix),
    },
    { weight: 1, arbitrary: fc.constantFrom(...templates).map((p) => p.toUpperCase()) },
    { weight: 1, arbitrary: fc.webPath() },
  );
  const method = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'get', 'Post', ' post ');
  const headerValue = fc.oneof(fc.string({ maxLength: 40 }), fc.array(fc.string({ maxLength: 10 }), { maxLength: 2 }));
  const headers = fc.record(
    {
      authorization: fc.oneof(
        fc.constantFrom(
          'Bearer good',
          'Bearer user',
          'Bearer error-object',
          'Bearer null-error',
          'Bearer throws',
          'Bearer text',
          'Bearer bad',
        ),
        headerValue,
      ),
      'content-type': fc.oneof(
        fc.constantFrom(
          'application/json',
          'application/json; charset=utf-8',
          'application/x-www-form-urlencoded',
          'text/plain',
          'application/merge-patch+json',
        ),
        headerValue,
      ),
      'idempotency-key': fc.oneof(fc.uuid(), fc.string({ maxLength: 300 }), headerValue),
    },
    { requiredKeys: [] },
  );
  const queryValue = fc.oneof(fc.string({ maxLength: 30 }), fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 }));
  const query = fc.dictionary(
    fc.oneof(fc.constantFrom(...(queryNames.length > 0 ? queryNames : ['q'])), fc.string({ maxLength: 8 })),
    queryValue,
    { maxKeys: 3 },
  );
  const mutated = fc
    .tuple(
      fc.constantFrom(...(examples.length > 0 ? examples : [{}])),
      fc.string({ maxLength: 16 }),
      fc.jsonValue(),
      fc.nat(3),
    )
    .map(([example, key, value, how]) => {
      const body = structuredClone(example) as Record<string, unknown>;
      if (typeof body !== 'object' || body === null) return body;
      const keys = Object.keys(body);
      const existing = keys.length > 0 ? keys[key.length % keys.length]! : key;
      if (how === 0) delete body[existing];
      else if (how === 1) body[existing] = value;
      else body[key] = value;
      return body;
    });
  const body = fc.oneof(
    { weight: 2, arbitrary: fc.constant(undefined) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(...(examples.length > 0 ? examples : [{}])).map((e) => structuredClone(e)),
    },
    { weight: 4, arbitrary: mutated },
    { weight: 1, arbitrary: fc.jsonValue() },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 1, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)) },
    {
      weight: 1,
      arbitrary: fc.record({ clientId: queryValue, clientSecret: queryValue }, { requiredKeys: [] }),
    },
  );
  return fc.record({ method, path, headers, query, body });
}

describe.each(['openapi', 'sandbox'] as const)('the %s pipeline against OpenAPIBackend.handleRequest', (name) => {
  it(`decides ${RUNS} generated requests as the library does`, async () => {
    const definition = () => loadDescription(name) as unknown as Document;
    const [ours, library] = await Promise.all([openApi(definition()), openApi(definition())]);
    const pipeline = pipelineFor(ours);
    const reference = referenceFor(library);
    const seen = new Map<string, number>();

    await fc.assert(
      fc.asyncProperty(requests(library.getOperations()), async (req) => {
        const expected = await settle(() => reference(structuredClone(req)));
        const actual = await settle(async () => verdictOf(await pipeline.decide(structuredClone(req), undefined)));
        expect(actual).toEqual(expected);
        const label = 'threw' in expected ? 'threw' : expected.verdict.outcome;
        seen.set(label, (seen.get(label) ?? 0) + 1);
      }),
      { numRuns: RUNS },
    );
    // The generator reached every outcome, so each was compared.
    expect([...seen.keys()].sort()).toEqual(
      expect.arrayContaining(['invalid', 'methodNotAllowed', 'notFound', 'unauthorized', 'valid']),
    );
  });
});

/**
 * Routing and request parsing, compiled once from the operations openapi-backend read
 * from the description. The library's router rebuilds everything on every call (a lodash
 * deep clone of the query, re-keyed headers, a cookie parse, a regular expression per path
 * template and a path-template compiler per call); the answers here are the library's, to
 * the letter, which the differential test (test/server/pipeline.test.ts) checks against
 * `OpenAPIBackend.handleRequest`:
 *
 * - an exact path wins; otherwise templates are tried from the most specific (longest
 *   once its `{...}` parts are removed; ties in document order);
 * - a path some template matches with no operation for the method is 405, no match at all
 *   is 404;
 * - path parameters are extracted as bath-es5 does (`[^/]*` per parameter,
 *   percent-decoded, a name repeated with two values matches nothing); query parameters
 *   of style `explode: false` and `content: application/json` are decoded as the library
 *   does.
 *
 * Its input is what the server forwards (PipelineRequest): a query already parsed into an
 * object, and no Cookie header.
 */
import type { Operation, ParsedRequest } from 'openapi-backend';

type QueryValue = string | string[];
type Query = Record<string, QueryValue>;

/** A request as the server hands it to the pipeline. */
export interface PipelineRequest {
  method: string;
  path: string;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  query: Readonly<Query>;
  body: unknown;
}

export type Match =
  | { found: true; operation: Operation }
  /** `allowed`: the methods the path takes (HEAD wherever GET is), for a 405's Allow; empty for a 404. */
  | { found: false; allowed: string[] };

interface QueryParameter {
  name: string;
  content?: Record<string, unknown>;
  explode?: boolean;
  style?: string;
}

interface Template {
  /** openapi-backend's matcher for the path (`{name}` becomes `[^/]+`, nothing escaped). */
  matches: RegExp;
  /** Operations of the path, by lower-case method. */
  byMethod: Map<string, Operation>;
}

interface Compiled {
  /** bath-es5's extractor: `{name}` becomes `([^/]*)`. */
  params: RegExp;
  names: string[];
  /** Query parameters the operation declares that need decoding beyond the raw string. */
  queryDecoders: Map<string, QueryParameter>;
}

const TEMPLATE_PART = /\{.*?\}/g;
const PARAMETER_NAME = /\{[A-Za-z0-9_-]+\}/g;

export class OperationRouter {
  /** Operations by their path's exact text, then by lower-case method. */
  private readonly exact = new Map<string, Map<string, Operation>>();
  /** Path templates from the most specific to the least. */
  private readonly templates: Template[] = [];
  private readonly compiled = new Map<Operation, Compiled>();
  private readonly apiRootPrefix: RegExp;

  constructor(
    operations: readonly Operation[],
    private readonly apiRoot: string,
  ) {
    this.apiRootPrefix = new RegExp(`^${apiRoot}/?`);
    const byPath = new Map<string, Map<string, Operation>>();
    for (const operation of operations) {
      let methods = byPath.get(operation.path);
      if (!methods) {
        methods = new Map();
        byPath.set(operation.path, methods);
      }
      // The library takes the first operation for a path and method.
      if (!methods.has(operation.method)) methods.set(operation.method, operation);
      this.compiled.set(operation, compile(operation));
    }
    const specificity = (path: string) => path.replace(TEMPLATE_PART, '').length;
    // Array.prototype.sort is stable, as lodash's orderBy is: ties keep document order.
    const paths = [...byPath.keys()].sort((a, b) => specificity(b) - specificity(a));
    for (const path of paths) {
      this.templates.push({
        matches: new RegExp(`^${path.replace(TEMPLATE_PART, '[^/]+')}$`),
        byMethod: byPath.get(path)!,
      });
      // As the library, a request path equal to a template's text is an exact match too.
      this.exact.set(path, byPath.get(path)!);
    }
  }

  match(method: string, path: string): Match {
    const request = normalize(method, path);
    if (!request.path.startsWith(this.apiRoot)) return { found: false, allowed: [] };
    const relative = this.relative(request.path);
    const exact = this.exact.get(relative)?.get(request.method);
    if (exact) return { found: true, operation: exact };
    const methods = new Set<string>();
    for (const template of this.templates) {
      if (!template.matches.test(relative)) continue;
      const operation = template.byMethod.get(request.method);
      if (operation) return { found: true, operation };
      for (const m of template.byMethod.keys()) methods.add(m);
    }
    if (methods.has('get')) methods.add('head');
    return { found: false, allowed: [...methods].map((m) => m.toUpperCase()).sort() };
  }

  /** As the library's `parseRequest(req, operation)`: new objects on every call, as handlers may change them. */
  parse(req: PipelineRequest, operation: Operation): ParsedRequest {
    let requestBody = req.body;
    if (req.body && typeof req.body !== 'object') {
      try {
        requestBody = JSON.parse(String(req.body));
      } catch {
        // As the library: a body that is not JSON stays as it is; validation says why.
      }
    }
    const headers: Record<string, string | string[]> = {};
    for (const name in req.headers) headers[name.toLowerCase()] = req.headers[name]!;
    const query: Query = {};
    for (const name in req.query) {
      const value = req.query[name]!;
      query[name] = Array.isArray(value) ? value.slice() : value;
    }
    const { method, path } = normalize(req.method, req.path);
    const compiled = this.compiled.get(operation) ?? compile(operation);
    const params = extractParams(compiled, this.relative(path));
    if (compiled.queryDecoders.size > 0) decodeQuery(query, compiled.queryDecoders);
    // A literal, not `{ ...req, ... }`: spreading then adding this many properties makes
    // V8 build a slow dictionary-mode object.
    return { method, path, body: req.body, params, headers, query, cookies: {}, requestBody } as ParsedRequest;
  }

  private relative(path: string): string {
    const trimmed = path.trim();
    // ignoreTrailingSlashes is off: a trailing slash names another path.
    return trimmed.startsWith(this.apiRoot) ? trimmed.replace(this.apiRootPrefix, '/') : trimmed;
  }
}

function normalize(method: string, rawPath: string): { method: string; path: string } {
  let path = rawPath.trim();
  if (!path.startsWith('/')) path = `/${path}`;
  const query = path.indexOf('?');
  if (query >= 0) path = path.slice(0, query);
  return { path, method: method.trim().toLowerCase() };
}

function compile(operation: Operation): Compiled {
  const names = (operation.path.match(PARAMETER_NAME) ?? []).map((x) => x.slice(1, -1));
  const params = new RegExp(`^${operation.path.replace(PARAMETER_NAME, '([^\\/]*)')}$`);
  const queryDecoders = new Map<string, QueryParameter>();
  for (const parameter of (operation.parameters ?? []) as Array<QueryParameter & { in?: string; $ref?: string }>) {
    if ('$ref' in parameter || parameter?.in !== 'query' || queryDecoders.has(parameter.name)) continue;
    if (parameter.content?.['application/json'] || parameter.explode === false)
      queryDecoders.set(parameter.name, parameter);
  }
  return { params, names, queryDecoders };
}

function extractParams({ params, names }: Compiled, path: string): Record<string, string> {
  const match = params.exec(path);
  if (!match) return {};
  const out: Record<string, string> = {};
  for (let i = 0; i < names.length; i++) {
    const raw = match[i + 1]!;
    // Without a percent sign there is nothing to decode (and nothing to fail on).
    const value = raw.includes('%') ? decodeURIComponent(raw) : raw;
    const name = names[i]!;
    // A name used twice must carry the same value twice, else nothing matches.
    if (name in out && out[name] !== value) return {};
    out[name] = value;
  }
  return out;
}

function decodeQuery(query: Query, decoders: Map<string, QueryParameter>): void {
  for (const name in query) {
    if (!query[name]) continue;
    const parameter = decoders.get(name);
    if (!parameter) continue;
    if (parameter.content?.['application/json']) {
      const raw = query[name];
      if (typeof raw === 'string') query[name] = JSON.parse(raw);
    } else if (parameter.explode === false) {
      const raw = query[name]!;
      if (Array.isArray(raw) && raw.length > 1) continue;
      const value = Array.isArray(raw) ? raw[0] : raw;
      if (typeof value !== 'string') continue;
      let decoded = value.replace(/%2C/g, ',');
      if (parameter.style === 'spaceDelimited') decoded = decoded.replace(/ /g, ',').replace(/%20/g, ',');
      if (parameter.style === 'pipeDelimited') decoded = decoded.replace(/\|/g, ',').replace(/%7C/g, ',');
      query[name] = decoded.split(',');
    }
  }
}

/**
 * A precompiled stand-in for openapi-backend's `router.matchOperation` and
 * `router.parseRequest`, which run up to three times per request and rebuild everything
 * each time: a lodash deep clone of the query, re-keyed headers, a cookie parse, a
 * regular expression per path template and a path-template compiler (bath-es5) per call.
 *
 * Here every template is compiled once, at start. The answers are the library's, to the
 * letter: an exact path wins; otherwise templates are tried from the most specific
 * (longest once its `{...}` parts are removed; ties in document order); a path some
 * template matches with no operation for the method is 405, no match at all is 404
 * (thrown as the library's `404-...`/`405-...` errors, which `handleRequest` maps to the
 * notFound/methodNotAllowed handlers). Path parameters are extracted as bath-es5 does
 * (`[^/]*` per parameter, percent-decoded, a name repeated with two values matches
 * nothing), query parameters of style `explode: false` and `content: application/json`
 * are decoded as the library does.
 *
 * Requests this fast path does not model (a query given as a string, or a Cookie header,
 * which the server never forwards) go to the library's own implementation.
 */
import type { Operation, OpenAPIRouter, ParsedRequest, Request } from 'openapi-backend';

type QueryValue = string | string[];
type Query = Record<string, QueryValue>;

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

export class LeanRouter {
  /** Operations by their path's exact text, then by lower-case method. */
  private readonly exact = new Map<string, Map<string, Operation>>();
  /** Path templates from the most specific to the least. */
  private readonly templates: Template[] = [];
  private readonly compiled = new Map<Operation, Compiled>();
  private readonly apiRootPrefix: RegExp;

  constructor(
    operations: readonly Operation[],
    private readonly apiRoot: string,
    private readonly fallback: Pick<OpenAPIRouter, 'parseRequest'>,
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

  /** As `OpenAPIRouter.matchOperation(req, true)`: the operation, or throws 404/405. */
  matchOperation(req: Request, strict = false): Operation | undefined {
    const { path, method } = normalizeRequest(req);
    const fail = (message: string) => {
      if (strict) throw new Error(message);
      return undefined;
    };
    if (!path.startsWith(this.apiRoot)) return fail('404-notFound: no route matches request');
    const relative = this.normalizePath(path);
    const exact = this.exact.get(relative)?.get(method);
    if (exact) return exact;
    let pathMatched = false;
    for (const template of this.templates) {
      if (!template.matches.test(relative)) continue;
      pathMatched = true;
      const operation = template.byMethod.get(method);
      if (operation) return operation;
    }
    return fail(
      pathMatched
        ? '405-methodNotAllowed: this method is not registered for the route'
        : '404-notFound: no route matches request',
    );
  }

  /** The methods some operation of `path` takes, upper-case, HEAD wherever GET is (for 405's Allow). */
  allowedMethods(path: string): string[] {
    const relative = this.normalizePath(normalizeRequest({ path, method: 'get' } as Request).path);
    const methods = new Set<string>();
    for (const method of this.exact.get(relative)?.keys() ?? []) methods.add(method);
    for (const template of this.templates)
      if (template.matches.test(relative)) for (const method of template.byMethod.keys()) methods.add(method);
    if (methods.has('get')) methods.add('head');
    return [...methods].map((m) => m.toUpperCase()).sort();
  }

  /** As `OpenAPIRouter.parseRequest`: a new object on every call, as the handlers may change it. */
  parseRequest(req: Request, operation?: Operation): ParsedRequest {
    const rawHeaders = (req.headers ?? {}) as Record<string, string | string[] | undefined>;
    if (req.query === undefined || typeof req.query !== 'object' || hasCookie(rawHeaders))
      return this.fallback.parseRequest(req, operation);

    let requestBody = req.body;
    if (req.body && typeof req.body !== 'object') {
      try {
        requestBody = JSON.parse(String(req.body));
      } catch {
        // As the library: a body that is not JSON stays as it is; validation says why.
      }
    }
    const headers: Record<string, string | string[]> = {};
    for (const name in rawHeaders) headers[name.toLowerCase()] = rawHeaders[name]!;
    const query: Query = {};
    const given = req.query as Query;
    for (const name in given) {
      const value = given[name]!;
      query[name] = Array.isArray(value) ? value.slice() : value;
    }
    const normalized = normalizeRequest(req);
    let params: Record<string, string> = {};
    if (operation) {
      const compiled = this.compiled.get(operation) ?? compile(operation);
      params = extractParams(compiled, this.normalizePath(normalized.path));
      if (compiled.queryDecoders.size > 0) decodeQuery(query, compiled.queryDecoders);
    }
    // A literal, not `{ ...req, ... }`: spreading then adding this many properties makes
    // V8 build a slow dictionary-mode object (microseconds per request). The server's
    // requests carry exactly these fields (RequestInput in openapi.ts).
    return {
      method: normalized.method,
      path: normalized.path,
      body: req.body,
      params,
      headers,
      query,
      cookies: {},
      requestBody,
    } as ParsedRequest;
  }

  private normalizePath(input: string): string {
    const path = input.trim();
    // ignoreTrailingSlashes is off: a trailing slash names another path.
    return path.startsWith(this.apiRoot) ? path.replace(this.apiRootPrefix, '/') : path;
  }
}

function hasCookie(headers: Record<string, unknown>): boolean {
  for (const name in headers) if (name.toLowerCase() === 'cookie' && headers[name] !== undefined) return true;
  return false;
}

function normalizeRequest(req: Request): { path: string; method: string } {
  let path = req.path?.trim() || '';
  if (!path.startsWith('/')) path = `/${path}`;
  const query = path.indexOf('?');
  if (query >= 0) path = path.slice(0, query);
  return { path, method: req.method.trim().toLowerCase() };
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

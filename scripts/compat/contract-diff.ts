/**
 * How the contract changed between two versions of the description, and for whom it
 * breaks. api-smart-diff classifies request and response changes with the polarity of an
 * API's consumer; on top of it:
 *
 * - Webhooks, where the polarity inverts: the service sends the payload and the
 *   merchant's receiver consumes it. Each webhook is judged as an operation whose
 *   *response* is the payload and its headers, so a payload field removed or retyped
 *   breaks receivers, and one added does not. Its signature header must keep `v1`
 *   (Versioning 2: other versions come beside it).
 * - Open sets: the document's status, code and event values "can gain new members"; the
 *   description models each as a known enum beside any string. A member added there is
 *   safe for every party; one added to a closed set is what api-smart-diff says it is.
 * - Parties: the public API's operations concern API clients, its webhooks merchants'
 *   receivers, the sandbox API its users. Changes inside `components` are judged where
 *   they are used, not twice; the security schemes, used by name, are compared apart.
 * - What a request must present (security), a closed body, a value that may now be null in
 *   what a party reads: breaking, whatever the library says.
 */
import { apiCompare } from 'api-smart-diff';

export type Party = 'API clients' | 'webhook receivers' | 'sandbox users';
export const PARTIES: readonly Party[] = ['API clients', 'webhook receivers', 'sandbox users'];
/** `undecided`: a change the gate cannot judge (a pattern of a form it does not read): a person judges it. */
export type Kind = 'breaking' | 'non-breaking' | 'undecided' | 'deprecated' | 'annotation';

export interface Change {
  party: Party;
  kind: Kind;
  action: 'add' | 'remove' | 'replace' | 'rename';
  /** The operation (`POST /api/token`) or webhook (`webhook checkout_session.completed`) it is in. */
  where: string;
  /** In words, for the changelog. */
  description: string;
  /** Where in the operation, as the document's path. */
  path: string;
  /** Why our rules overrode the library's verdict, when they did. */
  why?: string;
  /**
   * The schema of `components/schemas` the changed value belongs to (the innermost one, so
   * that a schema used by many operations is one change, not one per operation), and where
   * in it (`properties/code/enum/3`, '' for the schema itself).
   */
  schema?: { name: string; at: string };
  /** The parameter changed (`header Idempotency-Key`), when the change is in one. */
  parameter?: { in: string; name: string };
  /** The value before and after, when it is a plain one (a type, an enum member, a bound, a pattern). */
  was?: Plain;
  now?: Plain;
}

type Plain = string | number | boolean | null | Array<string | number | boolean | null>;

export interface Contract {
  openapi: Json;
  sandbox: Json;
}

type Json = any;

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);
const SIGNATURE = 'service-signature';

/** The webhooks as operations a receiver consumes: the payload and its headers are the answer it reads. */
export function webhooksAsOperations(doc: Json): Json {
  const paths: Json = {};
  for (const [name, item] of Object.entries<Json>(doc.webhooks ?? {})) {
    const operation = item.post;
    if (!operation) continue;
    const headers = Object.fromEntries(
      (operation.parameters ?? [])
        .filter((p: Json) => p.in === 'header')
        .map((p: Json) => [p.name, { description: p.description ?? '', required: p.required, schema: p.schema }]),
    );
    paths[`/webhooks/${name}`] = {
      post: {
        operationId: operation.operationId,
        responses: {
          '200': {
            description: operation.description ?? '',
            headers,
            content: operation.requestBody?.content ?? {},
          },
        },
      },
    };
  }
  return { openapi: doc.openapi, info: doc.info, paths, components: doc.components };
}

/** The value at `path` in a document, following `$ref`s (local JSON pointers) on the way. */
function at(doc: Json, path: readonly (string | number)[]): Json {
  const resolve = (value: Json): Json => {
    const ref = value?.$ref;
    if (typeof ref !== 'string' || !ref.startsWith('#/')) return value;
    return resolve(
      ref
        .slice(2)
        .split('/')
        .reduce((v: Json, key) => v?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc),
    );
  };
  let value = resolve(doc);
  for (let i = 0; i < path.length; i++) {
    // The library wraps a reference with siblings in `allOf`: a wrapper the document lacks is stepped over.
    if (path[i] === 'allOf' && value?.allOf === undefined && typeof path[i + 1] === 'number') {
      i += 1;
      continue;
    }
    value = resolve(value?.[path[i]!]);
  }
  return value;
}

/**
 * The innermost schema of `components/schemas` that holds the value at `path`, and the path
 * below it: references followed, the library's `allOf` wrappers stepped over as `at` does.
 */
function schemaOf(doc: Json, path: readonly (string | number)[]): { name: string; at: string } | undefined {
  let found: { name: string; depth: number } | undefined;
  const lookup = (ref: string): Json =>
    ref
      .slice(2)
      .split('/')
      .reduce((v: Json, key) => v?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  const resolve = (value: Json, depth: number): Json => {
    const seen = new Set<string>();
    while (typeof value?.$ref === 'string' && value.$ref.startsWith('#/') && !seen.has(value.$ref)) {
      seen.add(value.$ref);
      const schema = /^#\/components\/schemas\/([^/]+)$/.exec(value.$ref);
      if (schema) found = { name: schema[1]!.replace(/~1/g, '/').replace(/~0/g, '~'), depth };
      value = lookup(value.$ref);
    }
    return value;
  };
  // The value's container decides: a property added or removed belongs to the schema that
  // lists it, not to the schema the property refers to.
  let value = resolve(doc, 0);
  for (let i = 0; i < path.length - 1 && value !== undefined; i++) {
    if (path[i] === 'allOf' && value?.allOf === undefined && typeof path[i + 1] === 'number') {
      i += 1;
      continue;
    }
    value = resolve(value?.[path[i]!], i + 1);
  }
  if (!found) return undefined;
  const below = path.slice(found.depth).filter((key, i, all) => {
    // The library's allOf wrappers are not in the schema: left out of where in it.
    if (key === 'allOf' && all[i + 1] === 0) return false;
    return !(key === 0 && all[i - 1] === 'allOf');
  });
  return { name: found.name, at: below.join('/') };
}

const plain = (value: unknown): Plain | undefined =>
  value === null || ['string', 'number', 'boolean'].includes(typeof value)
    ? (value as Plain)
    : Array.isArray(value) && value.every((v) => v === null || ['string', 'number', 'boolean'].includes(typeof v))
      ? (value as Plain)
      : undefined;

/** A member of `anyOf` that takes any string: the catch-all of an open set. */
const catchAll = (schema: Json) =>
  schema?.type === 'string' &&
  schema.enum === undefined &&
  schema.const === undefined &&
  schema.pattern === undefined &&
  schema.format === undefined;

/** The enum of a schema, or of the schemas it is made of (`allOf`), references followed. */
function enumIn(doc: Json, schema: Json): unknown[] | undefined {
  if (Array.isArray(schema?.enum)) return schema.enum;
  for (const part of schema?.allOf ?? []) {
    const found = enumIn(doc, typeof part?.$ref === 'string' ? at(doc, part.$ref.slice(2).split('/')) : part);
    if (found) return found;
  }
  return undefined;
}

/**
 * A change to an enum, judged by what each party may meet: a member gone (removed, or
 * renamed) breaks whoever sends it or reads it; a member added breaks a reader, unless the
 * set is open (a known enum beside any string: Versioning 4), and never a sender.
 */
function enumVerdict(
  before: Json,
  after: Json,
  path: readonly (string | number)[],
): { kind: Kind; why: string } | undefined {
  const enumAt = path.lastIndexOf('enum');
  if (enumAt < 0) return undefined;
  const owner = path.slice(0, enumAt);
  const [was, is] = [enumIn(before, at(before, owner)), enumIn(after, at(after, owner))];
  if (!Array.isArray(was) || !Array.isArray(is)) return undefined;
  if (!was.every((value) => is.includes(value)))
    return { kind: 'breaking', why: 'a value of the set is gone (removed or renamed)' };
  if (inRequest(path)) return { kind: 'non-breaking', why: 'a request may send one more value' };
  let k = enumAt - 2;
  while (k >= 0 && path[k] === 'allOf') k -= 2;
  const anyOf = k >= 0 && path[k] === 'anyOf' ? at(after, path.slice(0, k + 1)) : undefined;
  return Array.isArray(anyOf) && anyOf.some(catchAll)
    ? {
        kind: 'non-breaking',
        why: 'a new member of an open set (Versioning 4: clients ignore or safely handle unknown ones)',
      }
    : { kind: 'breaking', why: 'a value a reader has never met, in a closed set' };
}

/** Whether a diff path is in what a client sends (a request) rather than what it reads. */
const inRequest = (path: readonly (string | number)[]) => path.includes('requestBody') || path.includes('parameters');

const types = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

/**
 * A value's types changed so that a party no longer fits: in a request every type sent
 * before must still be taken; in an answer every type read now must have been read before
 * (a field that may now be null breaks a reader).
 */
function typeVerdict(diff: {
  path: readonly (string | number)[];
  before?: unknown;
  after?: unknown;
}): { kind: Kind; why: string } | undefined {
  if (diff.path.at(-1) !== 'type' || diff.before === undefined || diff.after === undefined) return undefined;
  const [was, is] = [types(diff.before), types(diff.after)];
  const fits = inRequest(diff.path) ? was.every((t) => is.includes(t)) : is.every((t) => was.includes(t));
  return fits
    ? {
        kind: 'non-breaking',
        why: inRequest(diff.path) ? 'a request may send one more type' : 'a reader meets no new type',
      }
    : { kind: 'breaking', why: 'retyped: a value sent before is refused, or one read now was never read before' };
}

/** A pattern of the simple form the description uses: one character class with a bounded repeat. */
interface SimplePattern {
  /** The characters the class takes, as code point ranges, merged and in order. */
  ranges: Array<[number, number]>;
  min: number;
  max: number;
}

/** The character ranges of a class's body (`a-zA-Z0-9 '.,@_-`), or undefined for what this does not read. */
function classRanges(body: string): Array<[number, number]> | undefined {
  // Each character of the class, and whether it was escaped (an escaped dash is a dash).
  const items: Array<{ code: number; escaped: boolean }> = [];
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === '\\') {
      const next = body[i + 1];
      // \d, \w, \s and the like are classes of their own: not read here.
      if (next === undefined || /[a-zA-Z0-9]/.test(next)) return undefined;
      items.push({ code: next.codePointAt(0)!, escaped: true });
      i += 1;
    } else if (c === '[' || (c === '^' && i === 0)) return undefined;
    else items.push({ code: c.codePointAt(0)!, escaped: false });
  }
  const ranges: Array<[number, number]> = [];
  for (let i = 0; i < items.length; i++) {
    const dash = items[i + 1];
    // A dash between two characters makes a range; first or last, or escaped, it is itself.
    if (dash && dash.code === 0x2d && !dash.escaped && i + 2 < items.length) {
      ranges.push([items[i]!.code, items[i + 2]!.code]);
      i += 2;
    } else ranges.push([items[i]!.code, items[i]!.code]);
  }
  ranges.sort((x, y) => x[0] - y[0]);
  const merged: Array<[number, number]> = [];
  for (const [lo, hi] of ranges) {
    const last = merged.at(-1);
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else merged.push([lo, hi]);
  }
  return merged;
}

/** `^[class]{m,n}$` (or `{n}`, `?`, `*`, `+`), read; anything else undefined. */
export function simplePattern(pattern: unknown): SimplePattern | undefined {
  if (typeof pattern !== 'string') return undefined;
  const m = /^\^\[((?:\\.|[^\]\\])+)\](\{(\d+)(,(\d*))?\}|[?*+])?\$$/.exec(pattern);
  if (!m) return undefined;
  const ranges = classRanges(m[1]!);
  if (!ranges) return undefined;
  const [min, max] =
    m[2] === undefined
      ? [1, 1]
      : m[2] === '?'
        ? [0, 1]
        : m[2] === '*'
          ? [0, Number.POSITIVE_INFINITY]
          : m[2] === '+'
            ? [1, Number.POSITIVE_INFINITY]
            : [Number(m[3]), m[4] === undefined ? Number(m[3]) : m[5] === '' ? Number.POSITIVE_INFINITY : Number(m[5])];
  return { ranges, min, max };
}

/** Does every string `inner` matches match `outer` too? */
function within(inner: SimplePattern, outer: SimplePattern): boolean {
  const covered = inner.ranges.every(([lo, hi]) => outer.ranges.some(([a, b]) => a <= lo && hi <= b));
  return covered && outer.min <= inner.min && inner.max <= outer.max;
}

/**
 * A pattern changed: compared when both are of the simple form (every value valid before
 * still is, for what a client sends; every value read now was possible before, for what it
 * reads); otherwise the gate cannot decide, and says so rather than calling it breaking.
 */
function patternVerdict(diff: {
  path: readonly (string | number)[];
  before?: unknown;
  after?: unknown;
}): { kind: Kind; why: string } | undefined {
  if (diff.path.at(-1) !== 'pattern' || diff.before === undefined || diff.after === undefined) return undefined;
  const [was, is] = [simplePattern(diff.before), simplePattern(diff.after)];
  if (!was || !is)
    return {
      kind: 'undecided',
      why: `the gate compares patterns of one character class with a bounded repeat; ${JSON.stringify(diff.before)} → ${JSON.stringify(diff.after)} is not one: judge it`,
    };
  const request = inRequest(diff.path);
  const fits = request ? within(was, is) : within(is, was);
  return fits
    ? {
        kind: 'non-breaking',
        why: request ? 'the pattern takes every value it took before' : 'every value read now was possible before',
      }
    : {
        kind: 'breaking',
        why: request ? 'the pattern refuses values it took before' : 'a value read now was not possible before',
      };
}

/** Extensions that document a value and change nothing on the wire. */
const DOCUMENTATION_EXTENSIONS = new Set(['x-enumDescriptions', 'x-account-configuration', 'x-assumption']);

/**
 * The status of a code new to its set (`x-error-status`, beside the enum): it says when the
 * new code is answered, and no more; the code's own addition is judged on the enum. A status
 * changed for a code a party already meets stays the library's verdict.
 */
function newCodeStatus(before: Json, diff: { action: string; path: readonly (string | number)[] }): boolean {
  const map = diff.path.lastIndexOf('x-error-status');
  if (map < 0 || map !== diff.path.length - 2 || diff.action !== 'add') return false;
  const known = enumIn(before, at(before, diff.path.slice(0, map)));
  return Array.isArray(known) && !known.includes(diff.path.at(-1));
}

/** `GET /api/x` or `webhook name` for a diff path under `paths`. */
function whereOf(path: readonly (string | number)[], party: Party): string {
  const route = String(path[1]);
  const method = String(path[2] ?? '');
  if (party === 'webhook receivers') return `webhook ${route.replace(/^\/webhooks\//, '')}`;
  return METHODS.has(method) ? `${method.toUpperCase()} ${route}` : route;
}

function changesOf(before: Json, after: Json, party: Party): Change[] {
  // apiCompare resolves references in the documents it is given: it gets copies.
  const { diffs } = apiCompare(structuredClone(before), structuredClone(after));
  const out: Change[] = [];
  for (const diff of diffs) {
    if (diff.path[0] !== 'paths') continue;
    // An example is documentation, whatever it shows; so are the extensions that only say
    // something of a value (when a code is answered, which codes the portal fixes, what is
    // our modelling), and the status of a code new to its set: none changes what is sent or read.
    const example =
      diff.path.some((key) => key === 'example' || key === 'examples' || DOCUMENTATION_EXTENSIONS.has(String(key))) ||
      newCodeStatus(before, diff);
    let kind: Kind = example ? 'annotation' : diff.type === 'unclassified' ? 'breaking' : diff.type;
    let why: string | undefined =
      !example && diff.type === 'unclassified' ? 'not classified: taken as breaking until it is' : undefined;
    const verdict = example
      ? undefined
      : (typeVerdict(diff) ?? patternVerdict(diff) ?? enumVerdict(before, after, diff.path));
    if (verdict) ({ kind, why } = verdict);
    if (
      kind !== 'breaking' &&
      inRequest(diff.path) &&
      diff.path.at(-1) === 'additionalProperties' &&
      diff.after === false
    ) {
      kind = 'breaking';
      why = 'a request with fields of its own, taken before, is now refused';
    }
    if (kind !== 'breaking' && diff.path.includes('security')) {
      kind = 'breaking';
      why = 'what a request must present to be let in changed';
    }
    if (
      party === 'webhook receivers' &&
      kind !== 'breaking' &&
      kind !== 'annotation' &&
      closedPayload(before, diff.path)
    ) {
      kind = 'breaking';
      why =
        'a closed body (additionalProperties: false), such as the legacy two-field one kept unchanged (Versioning 3)';
    }
    const description = diff.description ?? `${diff.action} ${diff.path.join('/')}`;
    // Where the value is, in the document that has it (the one before, for what was removed).
    const [first, second] = diff.action === 'remove' ? [before, after] : [after, before];
    const schema = schemaOf(first, diff.path) ?? schemaOf(second, diff.path);
    const param =
      diff.path[3] === 'parameters' && diff.path.length > 4
        ? (at(first, diff.path.slice(0, 5)) ?? at(second, diff.path.slice(0, 5)))
        : undefined;
    const [was, now] = [plain(diff.before), plain(diff.after)];
    out.push({
      party,
      kind,
      action: diff.action,
      where: whereOf(diff.path, party),
      // A webhook's "answer" here is what the receiver is sent: say so.
      description:
        party === 'webhook receivers'
          ? description
              .replace(/in Response 200 content \([^)]*\)/, 'in the payload')
              .replace(/in Response 200 header/, 'in the headers')
          : description,
      path: diff.path.slice(3).join('/'),
      ...(why ? { why } : {}),
      ...(schema ? { schema } : {}),
      ...(typeof param?.name === 'string' ? { parameter: { in: String(param.in ?? ''), name: param.name } } : {}),
      ...(was !== undefined ? { was } : {}),
      ...(now !== undefined ? { now } : {}),
    });
  }
  return out;
}

/** The payload schema of a webhook as an operation (`webhooksAsOperations`) closes the body to other fields. */
function closedPayload(doc: Json, path: readonly (string | number)[]): boolean {
  const content = ['paths', path[1]!, 'post', 'responses', '200', 'content'];
  return Object.keys(at(doc, content) ?? {}).some(
    (media) => at(doc, [...content, media, 'schema'])?.additionalProperties === false,
  );
}

/** A value without its words (descriptions, titles, examples): what it requires, not how it is told. */
function withoutWords(value: Json): Json {
  if (Array.isArray(value)) return value.map(withoutWords);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !['description', 'summary', 'title', 'example', 'examples'].includes(key))
      .map(([key, inner]) => [key, withoutWords(inner)]),
  );
}
const sameRule = (a: Json, b: Json) =>
  JSON.stringify(withoutWords(a ?? null)) === JSON.stringify(withoutWords(b ?? null));

/** What a request must present: the security schemes, and what every operation asks of them. */
function securityChanges(before: Json, after: Json, party: Party): Change[] {
  const why = 'what a request must present to be let in changed';
  const out: Change[] = [];
  if (!sameRule(before.components?.securitySchemes, after.components?.securitySchemes))
    out.push({
      party,
      kind: 'breaking',
      action: 'replace',
      where: 'security schemes',
      description: '[Changed] the security schemes',
      path: 'components/securitySchemes',
      why,
    });
  if (!sameRule(before.security, after.security))
    out.push({
      party,
      kind: 'breaking',
      action: 'replace',
      where: 'every operation',
      description: '[Changed] the security every operation asks for',
      path: 'security',
      why,
    });
  return out;
}

/**
 * What the service expects of a receiver's answer, and how it delivers (the webhook's
 * responses, its security, its delivery rules, whether a body comes): the receiver's side of
 * the exchange, with the polarity of a request the receiver must answer. Any change to it
 * is taken as breaking receivers.
 */
function answerChanges(before: Json, after: Json): Change[] {
  const rules = (op: Json) => ({
    responses: op?.responses,
    security: op?.security,
    delivery: op?.['x-delivery'],
    bodyRequired: op?.requestBody?.required,
  });
  return Object.entries<Json>(before.webhooks ?? {})
    .filter(([name, item]) => after.webhooks?.[name] && !sameRule(rules(item.post), rules(after.webhooks[name].post)))
    .map(([name]) => ({
      party: 'webhook receivers' as const,
      kind: 'breaking' as const,
      action: 'replace' as const,
      where: `webhook ${name}`,
      description: '[Changed] what the service expects of the receiver’s answer, or how it delivers',
      path: 'responses',
      why: 'the receiver answers, and the service judges the answer: its side of the exchange changed',
    }));
}

/** A signed webhook whose signature header no longer admits `t=...,v1=...`: receivers verify v1. */
function signatureChanges(before: Json, after: Json): Change[] {
  const out: Change[] = [];
  for (const [name, item] of Object.entries<Json>(before.webhooks ?? {})) {
    const header = (op: Json) => (op?.parameters ?? []).find((p: Json) => String(p.name).toLowerCase() === SIGNATURE);
    if (!header(item.post)) continue;
    const now = header(after.webhooks?.[name]?.post);
    const pattern = now?.schema?.pattern ? new RegExp(now.schema.pattern) : undefined;
    const sample = 't=1767225600,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd';
    const keepsV1 =
      now && (!pattern || pattern.test(sample)) && (now.example === undefined || /(^|,)v1=/.test(now.example));
    if (!after.webhooks?.[name] || keepsV1) continue;
    out.push({
      party: 'webhook receivers',
      kind: 'breaking',
      action: now ? 'replace' : 'remove',
      where: `webhook ${name}`,
      description: `[Changed] the Service-Signature header ${now ? 'no longer carries v1' : 'is gone'}`,
      path: `parameters/${SIGNATURE}`,
      why: 'receivers verify v1 (Versioning 2: a new digest version comes beside v1, never instead of it)',
    });
  }
  return out;
}

/** Every change from `before` to `after`, with the party it concerns and whether it breaks it. */
export function compareContracts(before: Contract, after: Contract): Change[] {
  return [
    ...securityChanges(before.openapi, after.openapi, 'API clients'),
    ...changesOf(before.openapi, after.openapi, 'API clients'),
    ...changesOf(webhooksAsOperations(before.openapi), webhooksAsOperations(after.openapi), 'webhook receivers'),
    ...signatureChanges(before.openapi, after.openapi),
    ...answerChanges(before.openapi, after.openapi),
    ...securityChanges(before.sandbox, after.sandbox, 'sandbox users'),
    ...changesOf(before.sandbox, after.sandbox, 'sandbox users'),
  ];
}

export const breaking = (changes: readonly Change[]) => changes.filter((c) => c.kind === 'breaking');

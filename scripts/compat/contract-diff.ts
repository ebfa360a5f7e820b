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
 *   they are used, not twice.
 */
import { apiCompare } from 'api-smart-diff';

export type Party = 'API clients' | 'webhook receivers' | 'sandbox users';
export const PARTIES: readonly Party[] = ['API clients', 'webhook receivers', 'sandbox users'];
export type Kind = 'breaking' | 'non-breaking' | 'deprecated' | 'annotation';

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
}

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
  for (const key of path) value = resolve(value?.[key]);
  return value;
}

/** A member of `anyOf` that takes any string: the catch-all of an open set. */
const catchAll = (schema: Json) =>
  schema?.type === 'string' &&
  schema.enum === undefined &&
  schema.const === undefined &&
  schema.pattern === undefined &&
  schema.format === undefined;

/**
 * Whether the diff adds or changes a value of an enum that sits beside a catch-all string:
 * an open set. The enum may be wrapped (`allOf: [$ref]`) inside its `anyOf` member.
 */
function inOpenSet(doc: Json, path: readonly (string | number)[]): boolean {
  let k = path.lastIndexOf('enum') - 2;
  while (k >= 0 && path[k] === 'allOf') k -= 2;
  if (k < 0 || path[k] !== 'anyOf') return false;
  const anyOf = at(doc, path.slice(0, k + 1));
  return Array.isArray(anyOf) && anyOf.some(catchAll);
}

/** A value's type replaced by one that does not include it: whoever reads or sends the old type breaks. */
const retyped = (diff: { action: string; path: readonly (string | number)[]; before?: unknown; after?: unknown }) =>
  diff.action === 'replace' &&
  diff.path.at(-1) === 'type' &&
  !(Array.isArray(diff.after) ? diff.after : [diff.after]).includes(diff.before);

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
    // An example is documentation, whatever it shows.
    const example = diff.path.some((key) => key === 'example' || key === 'examples');
    let kind: Kind = example ? 'annotation' : diff.type === 'unclassified' ? 'breaking' : diff.type;
    let why: string | undefined =
      !example && diff.type === 'unclassified' ? 'not classified: taken as breaking until it is' : undefined;
    if (kind !== 'breaking' && retyped(diff)) {
      kind = 'breaking';
      why = 'retyped: what was read or sent as the old type no longer is';
    }
    if (kind === 'breaking' && (diff.action === 'add' || diff.action === 'replace') && inOpenSet(after, diff.path)) {
      kind = 'non-breaking';
      why = 'a new member of an open set (Versioning 4: clients ignore or safely handle unknown ones)';
    }
    const description = diff.description ?? `${diff.action} ${diff.path.join('/')}`;
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
    });
  }
  return out;
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
    ...changesOf(before.openapi, after.openapi, 'API clients'),
    ...changesOf(webhooksAsOperations(before.openapi), webhooksAsOperations(after.openapi), 'webhook receivers'),
    ...signatureChanges(before.openapi, after.openapi),
    ...changesOf(before.sandbox, after.sandbox, 'sandbox users'),
  ];
}

export const breaking = (changes: readonly Change[]) => changes.filter((c) => c.kind === 'breaking');

/** The changes in words, grouped as a changelog reads: breaking first, then added, changed, deprecated. */
export function changelogOf(changes: readonly Change[]): string {
  const heading: Record<Kind, string> = {
    breaking: 'Breaking',
    'non-breaking': 'Added and changed',
    deprecated: 'Deprecated',
    annotation: 'Documentation',
  };
  const sections: string[] = [];
  for (const kind of ['breaking', 'non-breaking', 'deprecated', 'annotation'] as Kind[]) {
    const lines = [
      ...new Set(
        changes
          .filter((c) => c.kind === kind)
          .map(
            (c) =>
              `- ${c.party}: \`${c.where}\`: ${c.description.replace(/^\[(\w+)\] /, (_m, verb: string) => `${verb.toLowerCase()} `)}`,
          ),
      ),
    ];
    if (lines.length > 0) sections.push(`### ${heading[kind]}\n\n${lines.join('\n')}`);
  }
  return sections.join('\n\n') || 'No change to the description.';
}

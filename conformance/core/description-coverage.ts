/**
 * Coverage of the description itself (the bundled OpenAPI document of
 * `@payment-service/contract`), from what a run sent and received: which documented
 * responses of which operations the target gave, which error codes it answered, which
 * webhook events reached the suite's receiver, and which field constraints of the request
 * bodies the suite tried on their boundary or beyond. Each item names the checks that
 * exercised it. Answers the description does not document are listed apart: they are the
 * target's, not the description's.
 *
 * Only the suite's own requests to the described API count. The adapter's calls (the
 * sandbox API, or whatever an adapter module reaches) are not the described API and are
 * never recorded as exchanges; the hosted payment page is not described either.
 */
import { description, validatorAt } from './description.ts';
import type { Exchange } from './exchange.ts';
import { at, isObject, type JsonObject } from './json.ts';
import type { Received } from './exchange.ts';

/** An item of the description and whether the run exercised it, and by which checks (sorted ids). */
export interface Exercised {
  exercised: boolean;
  checks: string[];
}

/** A documented response of an operation: `POST /api/token` answering `401`. */
export interface ResponseItem extends Exercised {
  operation: string;
  operationId: string | undefined;
  status: string;
  /** Our modelling (x-assumption on the operation or the response), not the document's word. */
  assumption?: true;
}

/** A documented error code, seen in an answer's `error.code`; `operations` says where. */
export interface ErrorCodeItem extends Exercised {
  code: string;
  /** The status the description gives it (`x-error-status`). */
  status: number | undefined;
  operations: string[];
}

/** A documented webhook, received by the suite's receiver: how many deliveries, how many signed. */
export interface WebhookEventItem extends Exercised {
  /** The webhook's name in the description: the `event` value, or the name of an event-less body. */
  event: string;
  operationId: string | undefined;
  deliveries: number;
  signed: number;
  assumption?: true;
}

/**
 * A constraint of a request body field: a JSON Schema keyword with its limit (`maximum`
 * 10000), or `required`. One item per field, keyword and limit, whichever operations'
 * bodies share it (the description writes most of them once, in a component).
 */
export interface ConstraintItem extends Exercised {
  field: string;
  keyword: string;
  limit?: unknown;
  /** The operations whose request body has it. */
  operations: string[];
  /** Those the suite sent a value on its boundary or outside it. */
  exercisedOn: string[];
}

/** What the target answered or sent that the description does not document. */
export interface Undocumented {
  responses: Array<{ operation: string; status: number; checks: string[] }>;
  errorCodes: Array<{ code: string; operations: string[]; checks: string[] }>;
  webhookEvents: Array<{ event: string; deliveries: number; checks: string[] }>;
}

export interface Figure {
  exercised: number;
  total: number;
}

export const CATEGORIES = ['responses', 'errorCodes', 'webhookEvents', 'constraints'] as const;
export type Category = (typeof CATEGORIES)[number];
export const CATEGORY_NAMES: Record<Category, string> = {
  responses: 'responses',
  errorCodes: 'error codes',
  webhookEvents: 'webhook events',
  constraints: 'constraints',
};

export interface DescriptionCoverage {
  /** The description measured: its title and `info.version`. */
  description: { title: string; version: string };
  /** Items exercised of all items, every category alike, in percent rounded down to one decimal. */
  percent: number;
  exercised: number;
  total: number;
  categories: Record<Category, Figure>;
  responses: ResponseItem[];
  errorCodes: ErrorCodeItem[];
  webhookEvents: WebhookEventItem[];
  constraints: ConstraintItem[];
  undocumented: Undocumented;
}

/** What a run sent and received. */
export interface Traffic {
  /** The target's base URL: exchanges' paths are read relative to it. */
  baseUrl: string;
  exchanges: readonly Exchange[];
  deliveries: ReadonlyArray<Pick<Received, 'path' | 'headers' | 'body'>>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const escapePointer = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** Follows `$ref`s; gives the node and the JSON pointer it lives at. */
function resolved(node: unknown, pointer: string): { node: JsonObject; pointer: string } {
  let current = node;
  let where = pointer;
  for (let depth = 0; isObject(current) && typeof current.$ref === 'string' && depth < 20; depth++) {
    where = current.$ref.replace(/^#/, '');
    current = at(
      description,
      ...where
        .split('/')
        .slice(1)
        .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~')),
    );
  }
  return { node: isObject(current) ? current : {}, pointer: where };
}

/** A schema node and every `allOf` member under it, resolved: where its keywords are written. */
function parts(node: unknown, pointer: string, depth = 0): Array<{ node: JsonObject; pointer: string }> {
  const here = resolved(node, pointer);
  const all = Array.isArray(here.node.allOf) ? here.node.allOf : [];
  return [
    here,
    ...(depth < 10 ? all.flatMap((member, i) => parts(member, `${here.pointer}/allOf/${i}`, depth + 1)) : []),
  ];
}

interface Operation {
  key: string;
  operationId: string | undefined;
  method: string;
  template: string;
  pattern: RegExp;
  statuses: string[];
  assumedStatuses: Set<string>;
  /** The request body's field rules, when it has a body. */
  rules: Rule[];
}

/** A constraint as checked on one operation's body. */
interface Rule {
  field: string;
  keyword: string;
  limit: unknown;
  /** The field's schema, for the description's own validator. */
  pointer: string;
}

/** The keywords that bound a value; `type` is left out (every field has one, and a wrong type is no boundary). */
const VALUE_KEYWORDS = [
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'enum',
  'const',
];

function fieldRules(node: unknown, pointer: string, field: string, out: Rule[], depth = 0): void {
  if (depth > 10) return;
  for (const part of parts(node, pointer)) {
    if (field !== '')
      for (const keyword of VALUE_KEYWORDS)
        if (part.node[keyword] !== undefined) out.push({ field, keyword, limit: part.node[keyword], pointer });
    const required = Array.isArray(part.node.required) ? part.node.required : [];
    for (const name of required)
      if (typeof name === 'string')
        out.push({ field: field ? `${field}.${name}` : name, keyword: 'required', limit: undefined, pointer });
    const properties = isObject(part.node.properties) ? part.node.properties : {};
    for (const [name, child] of Object.entries(properties))
      fieldRules(
        child,
        `${part.pointer}/properties/${escapePointer(name)}`,
        field ? `${field}.${name}` : name,
        out,
        depth + 1,
      );
  }
}

function operationsOf(): Operation[] {
  const paths = isObject(description.paths) ? description.paths : {};
  const found: Operation[] = [];
  for (const [template, item] of Object.entries(paths)) {
    if (!isObject(item)) continue;
    const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
    for (const method of METHODS) {
      const operation = item[method];
      if (!isObject(operation)) continue;
      const responses = isObject(operation.responses) ? operation.responses : {};
      const assumed = operation['x-assumption'] === true || item['x-assumption'] === true;
      const assumedStatuses = new Set(
        Object.keys(responses).filter(
          (s) =>
            assumed ||
            resolved(responses[s], `/paths/${escapePointer(template)}/${method}/responses/${s}`).node[
              'x-assumption'
            ] === true,
        ),
      );
      const rules: Rule[] = [];
      const content = at(operation, 'requestBody', 'content');
      if (isObject(content)) {
        // One schema per body: the operations here document one media type each.
        const [type] = Object.keys(content);
        if (type !== undefined)
          fieldRules(
            at(content, type, 'schema'),
            `/paths/${escapePointer(template)}/${method}/requestBody/content/${escapePointer(type)}/schema`,
            '',
            rules,
          );
      }
      found.push({
        key: `${method.toUpperCase()} ${template}`,
        operationId: typeof operation.operationId === 'string' ? operation.operationId : undefined,
        method: method.toUpperCase(),
        template,
        pattern,
        statuses: Object.keys(responses),
        assumedStatuses,
        rules,
      });
    }
  }
  return found;
}

interface Webhook {
  name: string;
  operationId: string | undefined;
  /** A body with this `event` value is this webhook's; undefined: a body without `event` is. */
  event: string | undefined;
  assumption: boolean;
}

function webhooksOf(): { webhooks: Webhook[]; signatureHeaders: string[] } {
  const all = isObject(description.webhooks) ? description.webhooks : {};
  const webhooks: Webhook[] = [];
  const signatureHeaders = new Set<string>();
  for (const [name, item] of Object.entries(all)) {
    const operation = at(item, 'post');
    if (!isObject(operation)) continue;
    const schema = resolved(at(operation, 'requestBody', 'content', 'application/json', 'schema'), '').node;
    const named = isObject(schema.properties) && 'event' in schema.properties;
    webhooks.push({
      name,
      operationId: typeof operation.operationId === 'string' ? operation.operationId : undefined,
      event: named ? name : undefined,
      assumption: operation['x-assumption'] === true || at(item, 'x-assumption') === true,
    });
    for (const parameter of Array.isArray(operation.parameters) ? operation.parameters : []) {
      const p = resolved(parameter, '').node;
      if (p.in === 'header' && typeof p.name === 'string') signatureHeaders.add(p.name.toLowerCase());
    }
  }
  return { webhooks, signatureHeaders: [...signatureHeaders] };
}

/** The documented codes and their statuses: the `KnownErrorCode` enum and its `x-error-status`. */
function errorCodesOf(): Array<{ code: string; status: number | undefined }> {
  const known = at(description, 'components', 'schemas', 'KnownErrorCode');
  const codes = at(known, 'enum');
  const statuses = at(known, 'x-error-status');
  return (Array.isArray(codes) ? codes : [])
    .filter((c): c is string => typeof c === 'string')
    .map((code) => {
      const status = at(statuses, code);
      return { code, status: typeof status === 'number' ? status : undefined };
    });
}

const OPERATIONS = operationsOf();
const WEBHOOKS = webhooksOf();
const ERROR_CODES = errorCodesOf();

/** The path of an exchange relative to the base URL, without query or fragment. */
function pathOf(url: string, baseUrl: string): string {
  const base = baseUrl.replace(/\/+$/, '');
  const rest = url.startsWith(base) ? url.slice(base.length) : new URL(url).pathname;
  return rest.split(/[?#]/)[0] || '/';
}

/** The response key of the description an answer's status falls under: exact, `4XX`, or `default`. */
function documentedKey(statuses: string[], status: number): string | undefined {
  const exact = String(status);
  if (statuses.includes(exact)) return exact;
  const range = statuses.find((s) => s.toUpperCase() === `${exact[0]}XX`);
  return range ?? (statuses.includes('default') ? 'default' : undefined);
}

/** The error code an answer carries: the envelope's `error.code`, or a plain-string `error` that is a code. */
function codeOf(json: unknown, known: ReadonlySet<string>): string | undefined {
  const code = at(json, 'error', 'code');
  if (typeof code === 'string') return code;
  const plain = at(json, 'error');
  return typeof plain === 'string' && known.has(plain) ? plain : undefined;
}

/** The body the suite sent, as the fields it held: JSON, or a form. */
function sentFields(exchange: Exchange): unknown {
  const body = exchange.request.body;
  if (body === undefined) return undefined;
  const type = Object.entries(exchange.request.headers).find(([name]) => name.toLowerCase() === 'content-type')?.[1];
  if (type?.toLowerCase().startsWith('application/x-www-form-urlencoded'))
    return Object.fromEntries(new URLSearchParams(body));
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

const codePoints = (value: string) => [...value].length;

/**
 * Did the value sent for a field try this constraint? A field left out of an object that
 * was sent tries `required`. Any other constraint is tried by a value outside it (the
 * description's own validator refuses the value for that keyword) or on its boundary (a
 * number equal to `minimum` or `maximum`, a string whose length in code points equals
 * `minLength` or `maxLength`; for the exclusive bounds the limit itself is outside).
 */
function tries(rule: Rule, body: unknown, refusedFor: (rule: Rule, value: unknown) => boolean): boolean {
  const path = rule.field.split('.');
  if (rule.keyword === 'required') {
    const parent = at(body, ...path.slice(0, -1));
    return isObject(parent) && !(path.at(-1)! in parent);
  }
  const value = at(body, ...path);
  if (value === undefined) return false;
  if (typeof value === 'number' && ['minimum', 'maximum'].includes(rule.keyword) && value === rule.limit) return true;
  if (
    typeof value === 'string' &&
    ['minLength', 'maxLength'].includes(rule.keyword) &&
    codePoints(value) === rule.limit
  )
    return true;
  return refusedFor(rule, value);
}

const sorted = (ids: Iterable<string>) => [...new Set(ids)].sort();

/** Adds to a list kept under a key. */
function note<K>(map: Map<K, Set<string>>, key: K, value: string): void {
  const set = map.get(key) ?? new Set<string>();
  set.add(value);
  map.set(key, set);
}

/** The check whose receiver path a delivery came to (`/hooks/<check id>/...`). */
const checkOfDelivery = (path: string) => /\/hooks\/([^/]+)\//.exec(path)?.[1];

export function descriptionCoverage(traffic: Traffic): DescriptionCoverage {
  const known = new Set(ERROR_CODES.map((c) => c.code));
  const cellChecks = new Map<string, Set<string>>();
  const undocumented = new Map<string, { operation: string; status: number; checks: Set<string> }>();
  const codeChecks = new Map<string, Set<string>>();
  const codeOperations = new Map<string, Set<string>>();
  const ruleChecks = new Map<string, Set<string>>();
  const ruleOperations = new Map<string, Set<string>>();
  const ruleKey = (r: Pick<Rule, 'field' | 'keyword' | 'limit'>) =>
    `${r.field}\u0000${r.keyword}\u0000${JSON.stringify(r.limit)}`;
  // One validation per field value: its refused keywords.
  const refusals = new Map<string, Map<unknown, Set<string>>>();
  const refusedFor = (rule: Rule, value: unknown) => {
    const byValue = refusals.get(rule.pointer) ?? new Map<unknown, Set<string>>();
    refusals.set(rule.pointer, byValue);
    const cacheKey = typeof value === 'object' && value !== null ? JSON.stringify(value) : value;
    let refused = byValue.get(cacheKey);
    if (!refused) {
      const validate = validatorAt(rule.pointer);
      validate(value);
      refused = new Set((validate.errors ?? []).filter((e) => e.instancePath === '').map((e) => e.keyword));
      byValue.set(cacheKey, refused);
    }
    return refused.has(rule.keyword);
  };
  const prefixes = new Set(OPERATIONS.map((o) => o.template.split('/')[1]));

  for (const exchange of traffic.exchanges) {
    const path = pathOf(exchange.request.url, traffic.baseUrl);
    const method = exchange.request.method.toUpperCase();
    const onPath = OPERATIONS.filter((o) => o.pattern.test(path));
    const operation = onPath.find((o) => o.method === method);
    // Neither a described path nor beside one (the sandbox API, the hosted page): not the described API.
    if (onPath.length === 0 && !prefixes.has(path.split('/')[1])) continue;
    const where = operation?.key ?? `${method} ${onPath[0]?.template ?? path}`;
    const key = operation ? documentedKey(operation.statuses, exchange.status) : undefined;
    if (operation && key !== undefined) note(cellChecks, `${operation.key} ${key}`, exchange.checkId);
    else {
      const k = `${where} ${exchange.status}`;
      const entry = undocumented.get(k) ?? { operation: where, status: exchange.status, checks: new Set<string>() };
      entry.checks.add(exchange.checkId);
      undocumented.set(k, entry);
    }
    const code = codeOf(exchange.json, known);
    if (code !== undefined) {
      note(codeChecks, code, exchange.checkId);
      note(codeOperations, code, where);
    }
    if (operation && operation.rules.length > 0) {
      const body = sentFields(exchange);
      if (body === undefined) continue;
      for (const rule of operation.rules)
        if (tries(rule, body, refusedFor)) {
          note(ruleChecks, ruleKey(rule), exchange.checkId);
          note(ruleOperations, ruleKey(rule), operation.key);
        }
    }
  }

  const responses: ResponseItem[] = OPERATIONS.flatMap((o) =>
    o.statuses.map((status) => {
      const checks = sorted(cellChecks.get(`${o.key} ${status}`) ?? []);
      return {
        operation: o.key,
        operationId: o.operationId,
        status,
        exercised: checks.length > 0,
        checks,
        ...(o.assumedStatuses.has(status) ? { assumption: true as const } : {}),
      };
    }),
  );

  const errorCodes: ErrorCodeItem[] = ERROR_CODES.map(({ code, status }) => {
    const checks = sorted(codeChecks.get(code) ?? []);
    return { code, status, exercised: checks.length > 0, checks, operations: sorted(codeOperations.get(code) ?? []) };
  });

  const constraintsByKey = new Map<string, ConstraintItem>();
  for (const o of OPERATIONS)
    for (const rule of o.rules) {
      const k = ruleKey(rule);
      const item = constraintsByKey.get(k) ?? {
        field: rule.field,
        keyword: rule.keyword,
        ...(rule.limit !== undefined ? { limit: rule.limit } : {}),
        exercised: ruleChecks.has(k),
        checks: sorted(ruleChecks.get(k) ?? []),
        operations: [],
        exercisedOn: sorted(ruleOperations.get(k) ?? []),
      };
      if (!item.operations.includes(o.key)) item.operations.push(o.key);
      constraintsByKey.set(k, item);
    }
  const constraints = [...constraintsByKey.values()];

  const eventDeliveries = new Map<string, { deliveries: number; signed: number; checks: Set<string> }>();
  const otherEvents = new Map<string, { deliveries: number; checks: Set<string> }>();
  for (const delivery of traffic.deliveries) {
    const body = delivery.body;
    if (!isObject(body)) continue;
    const event = body.event;
    const webhook =
      typeof event === 'string'
        ? WEBHOOKS.webhooks.find((w) => w.event === event)
        : event === undefined
          ? WEBHOOKS.webhooks.find((w) => w.event === undefined)
          : undefined;
    const check = checkOfDelivery(delivery.path);
    if (!webhook) {
      const name = typeof event === 'string' ? event : JSON.stringify(event);
      const entry = otherEvents.get(name) ?? { deliveries: 0, checks: new Set<string>() };
      entry.deliveries += 1;
      if (check) entry.checks.add(check);
      otherEvents.set(name, entry);
      continue;
    }
    const entry = eventDeliveries.get(webhook.name) ?? { deliveries: 0, signed: 0, checks: new Set<string>() };
    entry.deliveries += 1;
    if (WEBHOOKS.signatureHeaders.some((h) => delivery.headers[h] !== undefined)) entry.signed += 1;
    if (check) entry.checks.add(check);
    eventDeliveries.set(webhook.name, entry);
  }
  const webhookEvents: WebhookEventItem[] = WEBHOOKS.webhooks.map((w) => {
    const seen = eventDeliveries.get(w.name);
    return {
      event: w.name,
      operationId: w.operationId,
      exercised: (seen?.deliveries ?? 0) > 0,
      checks: sorted(seen?.checks ?? []),
      deliveries: seen?.deliveries ?? 0,
      signed: seen?.signed ?? 0,
      ...(w.assumption ? { assumption: true as const } : {}),
    };
  });

  const otherCodes = [...codeChecks.keys()].filter((c) => !known.has(c)).sort();
  const items: Record<Category, Exercised[]> = { responses, errorCodes, webhookEvents, constraints };
  const figure = (list: Exercised[]): Figure => ({
    exercised: list.filter((i) => i.exercised).length,
    total: list.length,
  });
  const categories = Object.fromEntries(CATEGORIES.map((c) => [c, figure(items[c])])) as Record<Category, Figure>;
  const exercised = CATEGORIES.reduce((n, c) => n + categories[c].exercised, 0);
  const total = CATEGORIES.reduce((n, c) => n + categories[c].total, 0);
  return {
    description: {
      title: String(at(description, 'info', 'title') ?? ''),
      version: String(at(description, 'info', 'version') ?? ''),
    },
    percent: percentOf(exercised, total),
    exercised,
    total,
    categories,
    responses,
    errorCodes,
    webhookEvents,
    constraints,
    undocumented: {
      responses: [...undocumented.values()]
        .map((u) => ({ operation: u.operation, status: u.status, checks: sorted(u.checks) }))
        .sort((a, b) => a.operation.localeCompare(b.operation) || a.status - b.status),
      errorCodes: otherCodes.map((code) => ({
        code,
        operations: sorted(codeOperations.get(code) ?? []),
        checks: sorted(codeChecks.get(code) ?? []),
      })),
      webhookEvents: [...otherEvents.entries()]
        .map(([event, e]) => ({ event, deliveries: e.deliveries, checks: sorted(e.checks) }))
        .sort((a, b) => a.event.localeCompare(b.event)),
    },
  };
}

/**
 * Percent rounded down to one decimal, so that a figure shown as meeting a minimum does
 * (59.96 shows as 59.9, below a minimum of 60).
 */
export function percentOf(exercised: number, total: number): number {
  if (total === 0) return 100;
  return Math.floor((exercised * 1000) / total) / 10;
}

/** How a constraint reads: `amount.total maximum 10000`, `redirectUrl required`. */
export function constraintName(c: Pick<ConstraintItem, 'field' | 'keyword' | 'limit'>): string {
  const limit =
    c.limit === undefined ? '' : ` ${Array.isArray(c.limit) ? c.limit.join('|') : String(c.limit as string | number)}`;
  return `${c.field} ${c.keyword}${limit}`;
}

/** What the run did not exercise, by category: `responses: POST /api/token 429, 500; ...`. */
export function notExercised(coverage: DescriptionCoverage): Record<Category, string[]> {
  const byOperation = new Map<string, string[]>();
  for (const r of coverage.responses)
    if (!r.exercised) byOperation.set(r.operation, [...(byOperation.get(r.operation) ?? []), r.status]);
  return {
    responses: [...byOperation.entries()].map(([operation, statuses]) => `${operation} ${statuses.join(', ')}`),
    errorCodes: coverage.errorCodes.filter((c) => !c.exercised).map((c) => c.code),
    webhookEvents: coverage.webhookEvents.filter((e) => !e.exercised).map((e) => e.event),
    constraints: coverage.constraints.filter((c) => !c.exercised).map(constraintName),
  };
}

/** `responses 12 of 29, error codes 3 of 13, webhook events 0 of 2, constraints 2 of 34`. */
export function categoriesText(coverage: DescriptionCoverage): string {
  return CATEGORIES.map(
    (c) => `${CATEGORY_NAMES[c]} ${coverage.categories[c].exercised} of ${coverage.categories[c].total}`,
  ).join(', ');
}

/** One line: the figure, and every item not exercised, by category. */
export function shortfallText(coverage: DescriptionCoverage): string {
  const missing = notExercised(coverage);
  const parts = CATEGORIES.filter((c) => missing[c].length > 0).map(
    (c) => `${CATEGORY_NAMES[c]}: ${missing[c].join(c === 'responses' ? '; ' : ', ')}`,
  );
  return `${coverage.percent}% of the description exercised (${coverage.exercised} of ${coverage.total} items: ${categoriesText(coverage)})${parts.length > 0 ? `; not exercised: ${parts.join('; ')}` : ''}`;
}

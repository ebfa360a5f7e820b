/**
 * Response conformance against the bundled description (`@payment-service/contract/openapi.json`): the
 * status must be documented for the operation, the body JSON, and the body valid
 * against the documented schema (ajv, JSON Schema 2020-12, decimal-exact multipleOf).
 * A problem found under an element marked `x-assumption: true` is our modelling, not
 * the document's word, and is reported at level `assumption`.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { decimalMultipleOf } from '@payment-service/client/decimal';
import type { Exchange } from './exchange.ts';
import { at, isObject, type JsonObject } from './json.ts';
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export const description: JsonObject = JSON.parse(
  readFileSync(createRequire(import.meta.url).resolve('@payment-service/contract/openapi.json'), 'utf8'),
);
const DOC_ID = 'conformance-openapi.json';

const ajv = new Ajv2020({
  strict: false, // OpenAPI keywords (example, x-*) are not JSON Schema keywords
  allErrors: true,
  verbose: true, // errors carry their schema, to tell our modelling from the document's word
});
addFormats(ajv);
// 19.99 is not a multiple of 0.01 in binary floating point: compare decimals exactly.
ajv.removeKeyword('multipleOf').addKeyword(decimalMultipleOf);
ajv.addSchema(description, DOC_ID);
const compiled = new Map<string, ValidateFunction>();

/** A validator for the schema at a JSON pointer of the description. */
export function validatorAt(pointer: string): ValidateFunction {
  let validate = compiled.get(pointer);
  if (!validate) {
    validate = ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
    compiled.set(pointer, validate);
  }
  return validate;
}

function pointerGet(doc: unknown, pointer: string): unknown {
  const keys = pointer
    .split('/')
    .slice(1)
    .map((key) => decodeURIComponent(key).replace(/~1/g, '/').replace(/~0/g, '~'));
  return at(doc, ...keys);
}

const escapePointer = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

const resolve = (node: unknown): unknown =>
  isObject(node) && typeof node.$ref === 'string' && node.$ref.startsWith('#')
    ? resolve(pointerGet(description, node.$ref.slice(1)))
    : node;

/**
 * Is any schema on the way from `schema` to the value at `segments` marked x-assumption?
 * (ajv's schemaPath is relative to the last $ref, so the way is walked along the value.)
 */
function assumedAlong(schema: unknown, segments: string[], depth = 0): boolean {
  const node = resolve(schema);
  if (!isObject(node) || depth > 40) return false;
  if (node['x-assumption'] === true) return true;
  const along = (key: 'allOf' | 'anyOf' | 'oneOf') => {
    const members = node[key];
    return Array.isArray(members) && members.some((member) => assumedAlong(member, segments, depth + 1));
  };
  if (along('allOf')) return true;
  // At the value itself, one modelled alternative (a code of ours beside the document's)
  // does not make the whole value ours: a missing or wrong value stays the document's.
  if (segments.length === 0) return false;
  if (along('anyOf') || along('oneOf')) return true;
  const [head, ...rest] = segments as [string, ...string[]];
  const next =
    at(node, 'properties', head) ??
    (/^\d+$/.test(head) ? node.items : undefined) ??
    (isObject(node.additionalProperties) ? node.additionalProperties : undefined);
  return next !== undefined && assumedAlong(next, rest, depth + 1);
}

function underAssumption(schema: unknown, error: ErrorObject): boolean {
  if (at(error.parentSchema, 'x-assumption') === true) return true;
  const segments = error.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required') segments.push(String(at(error.params, 'missingProperty')));
  return assumedAlong(schema, segments);
}

/**
 * The clauses an answer's conformance to the description enforces, by the kind of problem
 * (contractProblems): every mode that judges answers against the description cites these.
 */
export const CONTRACT_CLAUSES = {
  status: ['conv.success', 'status.200', 'create.ok', 'status.500', 'code.internal'],
  'content-type': ['conv.response-body'],
  schema: [
    'conv.error-body',
    'err.code',
    'err.message',
    'err.param',
    'err.details-entry',
    'conv.timestamps',
    // Each field of the create and read answers, by its documented type.
    'res.create.id',
    'res.create.url',
    'res.create.reference',
    'res.create.method',
    'res.create.amount',
    'res.read.created',
    'res.read.updated',
  ],
  /** Problems with a part the description marks x-assumption: our modelling. */
  assumption: ['link.endpoints'],
} as const;

export interface ContractProblem {
  kind: 'status' | 'content-type' | 'schema';
  level: 'must' | 'assumption';
  message: string;
  exchange: Exchange;
}

/** The path template of the description a concrete path matches. */
const paths = isObject(description.paths) ? description.paths : {};

function templateFor(path: string): string | undefined {
  return Object.keys(paths).find((template) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path));
}

/** Whether the description documents the operation: a method of one of its paths. */
export function documentedOperation(method: string, path: string): boolean {
  const template = templateFor(path);
  return template !== undefined && at(paths, template, method.toLowerCase()) !== undefined;
}

function describeErrors(errors: ErrorObject[]): string {
  return errors
    .filter((e) => !['anyOf', 'oneOf', 'allOf', 'if'].includes(e.keyword))
    .slice(0, 5)
    .map((e) => `${e.instancePath || '(body)'} ${e.message ?? e.keyword}`)
    .join('; ');
}

/** Checks one answer of the public API against the description. */
export function contractProblems(exchange: Exchange): ContractProblem[] {
  const url = new URL(exchange.request.url);
  const template = templateFor(url.pathname.replace(/^.*?(?=\/api\/)/, ''));
  const method = exchange.request.method.toLowerCase();
  const operation = template ? at(paths, template, method) : undefined;
  if (!template || !isObject(operation)) return [];
  const where = `${exchange.request.method} ${template}`;
  // A whole operation marked x-assumption (payment links, legacy transactions: shapes the
  // document does not show) is our modelling: every problem on it is at level assumption.
  const operationAssumed = operation['x-assumption'] === true || at(paths, template, 'x-assumption') === true;
  const responseKey = String(exchange.status);
  const responses = isObject(operation.responses) ? operation.responses : {};
  let response = responses[responseKey];
  if (!isObject(response))
    return [
      {
        kind: 'status',
        level: operationAssumed ? 'assumption' : 'must',
        message: `${where} answered ${exchange.status}, which is not documented (documented: ${Object.keys(responses).join(', ')})`,
        exchange,
      },
    ];
  let pointer = `/paths/${escapePointer(template)}/${method}/responses/${responseKey}`;
  if (typeof response.$ref === 'string') {
    pointer = response.$ref.slice(1);
    response = pointerGet(description, pointer);
  }
  const responseAssumed = operationAssumed || at(response, 'x-assumption') === true;
  const contentType = exchange.headers['content-type'] ?? '';
  if (!/^application\/json\b/i.test(contentType)) {
    return [
      {
        kind: 'content-type',
        level: responseAssumed ? 'assumption' : 'must',
        message: `${where} ${exchange.status}: content-type is "${contentType}", documented application/json`,
        exchange,
      },
    ];
  }
  if (exchange.json === undefined)
    return [
      {
        kind: 'content-type',
        level: responseAssumed ? 'assumption' : 'must',
        message: `${where} ${exchange.status}: the body is not JSON`,
        exchange,
      },
    ];
  const schemaPointer = `${pointer}/content/application~1json/schema`;
  const validate = validatorAt(schemaPointer);
  if (validate(exchange.json)) return [];
  const errors = validate.errors ?? [];
  const schema = pointerGet(description, schemaPointer);
  const mustErrors = errors.filter(
    (e) => !responseAssumed && !['anyOf', 'oneOf', 'allOf', 'if'].includes(e.keyword) && !underAssumption(schema, e),
  );
  const level = mustErrors.length > 0 ? 'must' : 'assumption';
  return [
    {
      kind: 'schema',
      level,
      message: `${where} ${exchange.status}: body does not match the documented schema: ${describeErrors(mustErrors.length > 0 ? mustErrors : errors)}`,
      exchange,
    },
  ];
}

/** Problems of a webhook body against WebhookEvent or LegacyWebhookPayload. */
export function webhookBodyProblems(body: unknown, legacy: boolean): string | undefined {
  const validate = validatorAt(`/components/schemas/${legacy ? 'LegacyWebhookPayload' : 'WebhookEvent'}`);
  if (validate(body)) return undefined;
  return describeErrors(validate.errors ?? []);
}

/** The fields of a create body its schema refuses: by the document's word, and by our modelling (x-assumption) only. */
export interface RefusedFields {
  fields: string[];
  modelled: string[];
}

const CREATE_REQUEST = '/components/schemas/CheckoutSessionCreateRequest';
const DOCUMENTED_KEYWORDS = ['required', 'type', 'enum', 'const'];

/**
 * The fields of a checkout session create body that its schema in the description refuses,
 * dotted as error.param names them (`amount.total`), each once; undefined when the body is
 * not a JSON object, which no field names. A field refused only by a rule of our modelling
 * (a redirectUrl's length) is `modelled`: a service may take it.
 */
export function refusedCreateFields(body: unknown): RefusedFields | undefined {
  if (!isObject(body)) return undefined;
  const validate = validatorAt(CREATE_REQUEST);
  if (validate(body)) return { fields: [], modelled: [] };
  // The body's own mark of modelling is for the ways of reading JSON it adds, not its fields.
  const { 'x-assumption': _, ...fieldsOf } = resolve(pointerGet(description, CREATE_REQUEST)) as JsonObject;
  const byField = new Map<string, boolean>();
  for (const e of validate.errors ?? []) {
    const segments = e.instancePath.split('/').slice(1).map(unescapePointer);
    const field = [...segments, ...(e.keyword === 'required' ? [String(at(e.params, 'missingProperty'))] : [])].join(
      '.',
    );
    // A field missing, of the wrong type or out of its list is the document's word, and so
    // is an address no standard parses ("valid absolute URL"); a length, a pattern or which
    // standard's syntax, on a field marked as modelled, is ours.
    const unparsable = e.keyword === 'format' && typeof e.data === 'string' && !URL.canParse(e.data);
    const modelled = !DOCUMENTED_KEYWORDS.includes(e.keyword) && !unparsable && assumedAlong(fieldsOf, segments);
    if (field !== '') byField.set(field, (byField.get(field) ?? true) && modelled);
  }
  const fields = [...byField].filter(([, modelled]) => !modelled).map(([field]) => field);
  const modelled = [...byField].filter(([, only]) => only).map(([field]) => field);
  return { fields, modelled };
}

const unescapePointer = (segment: string) => segment.replace(/~1/g, '/').replace(/~0/g, '~');

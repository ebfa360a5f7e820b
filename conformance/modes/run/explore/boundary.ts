/**
 * Boundary inputs derived from the description at run time: for every field of the
 * create body (CheckoutSessionCreateRequest in @payment-service/contract), values from
 * its schema (each enum member and its case and whitespace variants, each character class
 * of a pattern and the characters next to it, lengths at and around each limit, numbers
 * at and around each bound and the decimal rule, the field absent, null, of another type,
 * unknown fields beside it). A change to the description changes the cases.
 *
 * Each value is `valid` or `invalid` by the document, or `may` where the document leaves
 * the answer open: a constraint of our own (x-assumption), null for an optional field,
 * unknown fields, and lengths on which "chars" read as code points, UTF-16 units or
 * characters people see (grapheme clusters) disagree.
 */
import { description } from '../../../core/description.ts';
import { at, isObject, type JsonObject } from '../../../core/json.ts';

export type Verdict = 'valid' | 'invalid' | 'may';

/** One value for one field; `undefined` as value leaves the field out. */
export interface Variant {
  field: string;
  value: unknown;
  absent?: boolean;
  verdict: Verdict;
  label: string;
}

const SCHEMA = 'CheckoutSessionCreateRequest';

function resolve(doc: JsonObject, node: unknown): JsonObject {
  let current = node;
  for (let depth = 0; isObject(current) && depth < 20; depth++) {
    if (typeof current.$ref === 'string' && current.$ref.startsWith('#/')) {
      current = at(doc, ...current.$ref.slice(2).split('/'));
      continue;
    }
    // `allOf: [ { $ref } ]`: the description's way of adding words to a reference.
    const all = current.allOf;
    if (
      Array.isArray(all) &&
      all.length === 1 &&
      Object.keys(current).every((k) => k === 'allOf' || k === 'description')
    )
      current = all[0];
    else break;
  }
  return isObject(current) ? current : {};
}

/** Is the field's own schema (or the reference it is) our modelling? */
function assumed(doc: JsonObject, node: unknown): boolean {
  let current = node;
  for (let depth = 0; isObject(current) && depth < 20; depth++) {
    if (current['x-assumption'] === true) return true;
    if (typeof current.$ref === 'string') current = at(doc, ...current.$ref.slice(2).split('/'));
    else if (Array.isArray(current.allOf) && current.allOf.length === 1) current = current.allOf[0];
    else return false;
  }
  return false;
}

const graphemes = new Intl.Segmenter('en', { granularity: 'grapheme' });

/** Lengths by each reading of "chars". */
function lengths(value: string): number[] {
  return [[...value].length, value.length, [...graphemes.segment(value)].length];
}

function lengthVerdict(value: string, min: number | undefined, max: number | undefined): Verdict {
  const fits = lengths(value).map((n) => (min === undefined || n >= min) && (max === undefined || n <= max));
  return fits.every(Boolean) ? 'valid' : fits.some(Boolean) ? 'may' : 'invalid';
}

/** The members of a pattern's single character class `^[...]{m,n}$`, and its length bounds. */
export function parseClassPattern(pattern: string): { members: string[]; min: number; max: number } | undefined {
  const match = /^\^\[((?:\\.|[^\]\\])+)\]\{(\d+),(\d+)\}\$$/.exec(pattern);
  if (!match) return undefined;
  const body = match[1]!;
  const members: string[] = [];
  for (let i = 0; i < body.length; i++) {
    let c = body[i]!;
    if (c === '\\') c = body[++i]!;
    if (body[i + 1] === '-' && i + 2 < body.length) {
      let end = body[i + 2]!;
      let skip = 2;
      if (end === '\\') {
        end = body[i + 3]!;
        skip = 3;
      }
      for (let code = c.codePointAt(0)!; code <= end.codePointAt(0)!; code++) members.push(String.fromCodePoint(code));
      i += skip;
    } else members.push(c);
  }
  return { members, min: Number(match[2]), max: Number(match[3]) };
}

/** Strings for a string schema with a character-class pattern, min and max lengths. */
function patternVariants(field: string, schema: JsonObject): Variant[] {
  const parsed = typeof schema.pattern === 'string' ? parseClassPattern(schema.pattern) : undefined;
  if (!parsed) return [];
  const min = typeof schema.minLength === 'number' ? schema.minLength : parsed.min;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : parsed.max;
  const inClass = new Set(parsed.members);
  const filler = parsed.members.find((c) => /[A-Za-z]/.test(c)) ?? parsed.members[0]!;
  const out: Variant[] = [];
  const add = (value: string, verdict: Verdict, label: string) => out.push({ field, value, verdict, label });
  // Each run of the class (digits, letters...) and each single member, inside an otherwise valid value.
  const groups: string[][] = [];
  for (const c of parsed.members) {
    const last = groups.at(-1);
    if (last && c.codePointAt(0) === last.at(-1)!.codePointAt(0)! + 1) last.push(c);
    else groups.push([c]);
  }
  for (const group of groups) {
    const sample = [group[0]!, group.at(-1)!].join('');
    add(`${filler}${sample}${filler}`.slice(0, max), 'valid', `the class members ${JSON.stringify(sample)}`);
  }
  // The characters just outside each run, and characters of other kinds.
  const near = new Set<string>();
  for (const group of groups) {
    for (const code of [group[0]!.codePointAt(0)! - 1, group.at(-1)!.codePointAt(0)! + 1]) {
      const c = String.fromCodePoint(code);
      if (code > 0x1f && code < 0x7f && !inClass.has(c)) near.add(c);
    }
  }
  for (const c of ['\t', '\n', 'é', 'ß', '€', '😀']) if (!inClass.has(c)) near.add(c);
  for (const c of near)
    add(`${filler}${c}${filler}`, 'invalid', `the character ${JSON.stringify(c)} outside the class`);
  if (min > 0) {
    add(filler.repeat(min), 'valid', `${min} characters (the minimum)`);
    add('', 'invalid', 'empty (under the minimum)');
  } else add('', 'valid', 'empty (no minimum)');
  add(filler.repeat(max), 'valid', `${max} characters (the maximum)`);
  add(filler.repeat(max + 1), 'invalid', `${max + 1} characters (over the maximum)`);
  return out;
}

/** Addresses at and around the length limit, and strings that are no absolute URL at all. */
function urlVariants(field: string, schema: JsonObject): Variant[] {
  const out: Variant[] = [
    { field, value: 'not a url', verdict: 'invalid', label: 'not an absolute URL: words' },
    { field, value: '/checkout/done', verdict: 'invalid', label: 'not an absolute URL: a path' },
  ];
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : undefined;
  if (max === undefined) return out;
  const base = 'https://shop.example.com/';
  for (const n of [max, max + 1])
    out.push({
      field,
      value: base + 'a'.repeat(n - base.length),
      verdict: n <= max ? 'valid' : 'invalid',
      label: `${n} characters`,
    });
  return out;
}

/** Strings for a string schema with a length limit and no pattern. */
function lengthVariants(field: string, schema: JsonObject): Variant[] {
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : undefined;
  const min = typeof schema.minLength === 'number' ? schema.minLength : undefined;
  if (max === undefined) return [];
  const values: Array<[string, string]> = [
    ['d'.repeat(max), `${max} characters`],
    ['d'.repeat(max + 1), `${max + 1} characters`],
    ['é'.repeat(max), `${max} two-byte characters`],
    ['😀'.repeat(max), `${max} emoji (two UTF-16 units each)`],
    [`${'d'.repeat(max - 1)}😀`, `${max - 1} characters and an emoji`],
    [
      'e\u0301'.repeat(Math.ceil((max + 1) / 2)),
      'letters with a combining accent (more code points than characters seen)',
    ],
  ];
  return values.map(([value, label]) => ({ field, value, verdict: lengthVerdict(value, min, max), label }));
}

function enumVariants(field: string, members: unknown[]): Variant[] {
  const out: Variant[] = [];
  const strings = members.filter((m): m is string => typeof m === 'string');
  for (const member of strings)
    out.push({ field, value: member, verdict: 'valid', label: `the enum member ${member}` });
  const seen = new Set<unknown>(members);
  for (const member of strings) {
    const cased = [
      member.toUpperCase(),
      member.toLowerCase(),
      member[0]!.toUpperCase() + member.slice(1).toLowerCase(),
    ];
    for (const value of [...cased, ` ${member}`, `${member} `, `${member}\n`, member.slice(0, -1)]) {
      if (seen.has(value)) continue;
      seen.add(value);
      out.push({ field, value, verdict: 'invalid', label: `${JSON.stringify(value)}, not a member of the enum` });
    }
  }
  out.push({ field, value: '', verdict: 'invalid', label: 'empty, not a member of the enum' });
  return out;
}

/** Numbers at and around each bound and the decimal rule (multipleOf). */
function numberVariants(field: string, schema: JsonObject): Variant[] {
  const out: Variant[] = [];
  const lower = typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum : schema.minimum;
  const lowerExclusive = typeof schema.exclusiveMinimum === 'number';
  const upper = typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum : schema.maximum;
  const upperExclusive = typeof schema.exclusiveMaximum === 'number';
  const step = typeof schema.multipleOf === 'number' ? schema.multipleOf : undefined;
  const decimals = step === undefined ? undefined : Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const inStep = (n: number) => decimals === undefined || Number(n.toFixed(decimals)) === n;
  const verdictOf = (n: number): Verdict => {
    if (typeof lower === 'number' && (lowerExclusive ? n <= lower : n < lower)) return 'invalid';
    if (typeof upper === 'number' && (upperExclusive ? n >= upper : n > upper)) return 'invalid';
    return inStep(n) ? 'valid' : 'invalid';
  };
  const s = step ?? 1;
  const candidates = new Set<number>([1, 19.99, 0.29, 100.5]);
  for (const bound of [lower, upper]) {
    if (typeof bound !== 'number') continue;
    for (const n of [bound - s, bound, bound + s, bound - s / 10, bound + s / 10])
      candidates.add(Number(n.toPrecision(12)));
  }
  if (step !== undefined) for (const n of [1 + step / 2, 0.1 + 0.2, 12.345, 1.0000000001]) candidates.add(n);
  for (const n of [1e21, -1]) candidates.add(n);
  for (const n of candidates) out.push({ field, value: n, verdict: verdictOf(n), label: `${JSON.stringify(n)}` });
  return out;
}

/** Values of another JSON type than the schema's. */
function wrongTypes(field: string, type: unknown): Variant[] {
  const samples: Record<string, unknown> = {
    string: 'text',
    number: 25,
    boolean: true,
    array: ['x'],
    object: { x: 1 },
  };
  return Object.entries(samples)
    .filter(([kind]) => kind !== type && !(type === 'number' && kind === 'integer'))
    .map(([kind, value]) => ({
      field,
      value: kind === 'string' && type === 'number' ? '25.00' : value,
      verdict: 'invalid' as const,
      label: `a ${kind} (the field is a ${String(type)})`,
    }));
}

/** Every variant of every field of the create body, in a stable order, from the description given (the bundled one by default). */
export function deriveVariants(doc: JsonObject = description): Variant[] {
  const root = resolve(doc, at(doc, 'components', 'schemas', SCHEMA));
  const out: Variant[] = [];
  const walk = (node: unknown, prefix: string, required: boolean, parentOurs: boolean) => {
    const schema = resolve(doc, node);
    const field = prefix;
    const ours = parentOurs || assumed(doc, node);
    const type = schema.type;
    // Absent, null and other types: the document's tables give every field's type and whether it is required.
    out.push({
      field,
      value: undefined,
      absent: true,
      verdict: required ? 'invalid' : 'valid',
      label: required ? 'absent (required)' : 'absent (optional)',
    });
    out.push({ field, value: null, verdict: required ? 'invalid' : 'may', label: 'null' });
    out.push(...wrongTypes(field, type));
    if (type === 'object' && isObject(schema.properties)) {
      const needed = Array.isArray(schema.required) ? schema.required : [];
      out.push({ field, value: {}, verdict: needed.length > 0 ? 'invalid' : 'valid', label: 'an empty object' });
      for (const [name, child] of Object.entries(schema.properties))
        walk(child, `${field}.${name}`, needed.includes(name), false);
      out.push({
        field: `${field}.unknownField`,
        value: 'x',
        verdict: 'may',
        label: 'a field the description does not list',
      });
      return;
    }
    const limited: Variant[] = [];
    if (Array.isArray(schema.enum)) limited.push(...enumVariants(field, schema.enum));
    else if (type === 'number' || type === 'integer') limited.push(...numberVariants(field, schema));
    else if (type === 'string' && schema.format === 'uri') limited.push(...urlVariants(field, schema));
    else if (type === 'string') {
      const patterned = patternVariants(field, schema);
      limited.push(...(patterned.length > 0 ? patterned : lengthVariants(field, schema)));
    }
    // A field whose schema is ours (x-assumption) has limits the document does not set:
    // what they refuse may be taken, and what they take may be refused for a reason the
    // document gives that no schema can state (a webhookUrl's host publicly reachable).
    out.push(
      ...limited.map((v) =>
        ours && !v.label.startsWith('not an absolute URL') ? { ...v, verdict: 'may' as const } : v,
      ),
    );
  };
  const needed = Array.isArray(root.required) ? root.required : [];
  // The root's own assumption is about bodies parsers read differently, which no case here sends.
  for (const [name, child] of Object.entries(isObject(root.properties) ? root.properties : {}))
    walk(child, name, needed.includes(name), false);
  out.push({ field: 'unknownField', value: 'x', verdict: 'may', label: 'a field the description does not list' });
  return out.map((v) => (v.field.startsWith('.') ? { ...v, field: v.field.slice(1) } : v));
}

/** Sets `value` at a dotted path of a copy of `body` (absent removes it). */
export function withVariant(body: JsonObject, v: Variant): JsonObject {
  const copy = structuredClone(body);
  const keys = v.field.split('.');
  let node: JsonObject = copy;
  for (const key of keys.slice(0, -1)) {
    if (!isObject(node[key])) node[key] = {};
    node = node[key] as JsonObject;
  }
  const last = keys.at(-1)!;
  if (v.absent) delete node[last];
  else node[last] = v.value;
  return copy;
}

/** The variants that reach the body: one under a field left out or set to a non-object is dropped with it. */
export function liveVariants(variants: readonly Variant[]): Variant[] {
  return variants.filter(
    (v) => !variants.some((o) => o !== v && v.field.startsWith(`${o.field}.`) && !isObject(o.value)),
  );
}

/** A valid body with the variants set, shallow fields first (a nested value lands inside an object set beside it). */
export function bodyWith(base: JsonObject, variants: readonly Variant[]): JsonObject {
  const ordered = liveVariants(variants).sort((a, b) => a.field.split('.').length - b.field.split('.').length);
  return ordered.reduce((body, v) => withVariant(body, v), base);
}

/** What a body of variants must be answered, by the document: the fields that fail, and those that may. */
export function expectedOf(variants: readonly Variant[]): { must: string[]; may: string[] } {
  const live = liveVariants(variants);
  return {
    must: live.filter((v) => v.verdict === 'invalid').map((v) => v.field),
    may: live.filter((v) => v.verdict === 'may').map((v) => v.field),
  };
}

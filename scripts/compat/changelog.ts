/**
 * The contract's changes in sentences, as a changelog reads (the docs site's changelog page,
 * the contract's CHANGELOG.md, `npm run compat:changelog`): what breaks first, and for whom;
 * then what was added, changed, deprecated; the documentation last, counted in one line.
 *
 * The gate finds a change once per operation that shows it: a schema used by twenty
 * operations changed once is twenty changes. Here they are one line, the schema named with
 * the operations it reaches; the changes of one schema or operation are one sentence; and the
 * words (descriptions, examples, annotations) are a count, listed under a fold.
 */
import { type Change, PARTIES, type Party } from './contract-diff.ts';

type Section = 'breaking' | 'undecided' | 'added' | 'changed' | 'deprecated';

const HEADINGS: Record<Section | 'documentation', string> = {
  breaking: 'Breaking',
  undecided: 'Not decided by the gate',
  added: 'Added',
  changed: 'Changed',
  deprecated: 'Deprecated',
  documentation: 'Documentation',
};
const SECTIONS: Section[] = ['breaking', 'undecided', 'added', 'changed', 'deprecated'];
/** Sections whose every line stays in view: a reader must see what breaks, and what a person must judge. */
const ALWAYS_SHOWN = new Set<Section>(['breaking', 'undecided']);
/** Past this many lines, a section shows the first `SHOWN` and folds the rest. */
const FOLD_OVER = 8;
const SHOWN = 6;
/** Operations named on a line before "and N more". */
const NAMED_OPERATIONS = 3;

const code = (text: unknown) => `\`${String(text)}\``;
const list = (items: readonly string[]) =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;

/** `GET /api/x` as code; a webhook by its event name. */
const operationName = (where: string) =>
  where.startsWith('webhook ') ? `the ${code(where.slice('webhook '.length))} webhook` : code(where);

function operations(where: readonly string[]): string {
  const named = where.slice(0, NAMED_OPERATIONS).map(operationName);
  const more = where.length - named.length;
  return more > 0 ? `${named.join(', ')} and ${more} more operation${more === 1 ? '' : 's'}` : list(named);
}

/** The field a path leads to, as a reader names it (`amount.currency`, `items[].id`). */
function fieldOf(segments: readonly string[]): string {
  const names: string[] = [];
  for (let i = 0; i < segments.length - 1; i++) {
    if (segments[i] === 'properties' || segments[i] === 'headers') names.push(segments[++i]!);
    else if (segments[i] === 'items' && names.length > 0) names[names.length - 1] += '[]';
  }
  return names.join('.');
}

/** Which part of the exchange a change is in, as the party meets it. */
function placeOf(c: Change): string | undefined {
  const [first, , third] = c.path.split('/');
  if (first === 'requestBody' || first === 'parameters') return 'request';
  if (first !== 'responses') return undefined;
  if (c.party === 'webhook receivers') return third === 'headers' ? 'headers' : 'payload';
  return 'answer';
}

const VERBED: Record<Change['action'], string> = {
  add: 'added',
  remove: 'removed',
  replace: 'changed',
  rename: 'renamed',
};

const BOUNDS: Record<string, string> = {
  pattern: 'pattern',
  format: 'format',
  maxLength: 'maximum length',
  minLength: 'minimum length',
  maximum: 'maximum',
  minimum: 'minimum',
  exclusiveMaximum: 'exclusive maximum',
  exclusiveMinimum: 'exclusive minimum',
  multipleOf: 'step (multipleOf)',
  maxItems: 'maximum number of items',
  minItems: 'minimum number of items',
  uniqueItems: 'uniqueness of items',
  maxProperties: 'maximum number of fields',
  minProperties: 'minimum number of fields',
  const: 'constant value',
  default: 'default',
};

/** The description's extensions that only document, by what they say. */
const EXTENSIONS: Record<string, string> = {
  'x-enumDescriptions': 'descriptions of its values',
  'x-error-status': 'HTTP status of a new code',
  'x-account-configuration': 'account-configuration codes (`x-account-configuration`)',
  'x-assumption': 'assumption mark (`x-assumption`)',
};

const typeText = (value: Change['was']) => code(Array.isArray(value) ? value.join(' | ') : String(value ?? 'any'));
const nullable = (value: Change['was']) => value === 'null' || (Array.isArray(value) && value.includes('null'));

/** One thing said of a subject; facts with the same key are one (their values gathered). */
interface Fact {
  key: string;
  values: string[];
  say(values: readonly string[]): string;
}

const fact = (key: string, say: Fact['say'], value?: unknown): Fact => ({
  key,
  values: value === undefined ? [] : [String(value)],
  say,
});

/** The gate's own findings (security, the signature, the receiver's answer): already in words. */
function ownFinding(c: Change): Fact | undefined {
  const said = /^\[Changed\] (.*)$/.exec(c.description)?.[1];
  if (!said) return undefined;
  const text = /\b(no longer|is gone)\b/.test(said)
    ? said
    : said.includes(',')
      ? `${said}, changed`
      : `${said} changed`;
  return fact(`own:${said}`, () => text);
}

/** What a change does, said of its field (`segments`: the path below the subject). */
function factOf(c: Change, segments: readonly string[]): Fact {
  const own = ownFinding(c);
  if (own) return own;
  const path = segments.join('/');
  const last = segments.at(-1) ?? '';
  const parent = segments.at(-2);
  const field = fieldOf(segments);
  const of = field ? ` of ${code(field)}` : '';
  const to = field ? ` to ${code(field)}` : '';
  const from = field ? ` from ${code(field)}` : '';
  const verbed = VERBED[c.action];

  if (path === '')
    return fact(`operation:${c.action}`, () => (c.action === 'add' ? 'new operation' : `operation ${verbed}`));
  if (/^responses\/[^/]+$/.test(path))
    return fact(`response:${c.action}:${last}`, () =>
      c.action === 'add'
        ? `now answers ${code(last)}`
        : c.action === 'remove'
          ? `no longer answers ${code(last)}`
          : `answer ${code(last)} ${verbed}`,
    );
  if (path === 'requestBody') return fact(`body:${c.action}`, () => `request body ${verbed}`);
  if (/^(responses\/[^/]+\/|requestBody\/)content\/[^/]+\/[^/]+$/.test(path)) {
    const media = segments.slice(-2).join('/');
    return fact(`media:${c.action}:${media}`, () => `${code(media)} content ${verbed}`);
  }
  if (c.parameter && segments[0] === 'parameters') {
    const name = `${c.parameter.in} parameter ${code(c.parameter.name)}`;
    const rest = segments.slice(2);
    if (rest.length === 0)
      return fact(`parameter:${c.action}:${c.parameter.name}`, () =>
        c.action === 'add' ? `new ${name}` : `${name} ${verbed}`,
      );
    if (rest.join('/') === 'required')
      return fact(`parameter-required:${c.parameter.name}`, () =>
        c.now === true
          ? `${name} now required`
          : c.was === true
            ? `${name} no longer required`
            : `whether ${name} is required ${verbed}`,
      );
    return { ...factOf(c, rest), key: `parameter:${c.parameter.name}:${rest.join('/')}:${c.action}` };
  }
  if (parent === 'properties') {
    if (c.action === 'add') return fact(`property-add:${field}`, () => `new field ${code(field)}`);
    if (c.action === 'remove') return fact(`property-remove:${field}`, () => `field ${code(field)} removed`);
    return fact(`property-${c.action}:${field}`, () => `field ${code(field)} ${verbed}`);
  }
  if (parent === 'required' || last === 'required') {
    const name = [field, c.now ?? c.was].filter((part) => part !== undefined && part !== '').join('.');
    if (c.action === 'add') return fact(`required-add:${name}`, () => `${code(name)} now required`);
    if (c.action === 'remove') return fact(`required-remove:${name}`, () => `${code(name)} no longer required`);
    return fact(`required-${c.action}:${name}`, () => `which fields${of} are required ${verbed}`);
  }
  if (parent === 'enum' || last === 'enum') {
    const values = (vs: readonly string[]) => `value${vs.length === 1 ? '' : 's'} ${list(vs.map(code))}`;
    if (c.action === 'add' && c.now !== undefined)
      return fact(`enum-add:${field}`, (vs) => `${values(vs)} added${to}`, c.now);
    if (c.action === 'remove' && c.was !== undefined)
      return fact(`enum-remove:${field}`, (vs) => `${values(vs)} removed${from}`, c.was);
    if (c.was !== undefined && c.now !== undefined)
      return fact(
        `enum-replace:${field}:${c.was}`,
        () => `value ${code(c.was)} replaced by ${code(c.now)}${field ? ` in ${code(field)}` : ''}`,
      );
    return fact(`enum:${field}`, () => `the values${of} changed`);
  }
  if (last === 'type') {
    const subject = field ? `${code(field)} ` : '';
    if (c.action === 'replace' && nullable(c.now) && !nullable(c.was))
      return fact(`type:${field}`, () => `${subject}may now be null`);
    if (c.action === 'replace')
      return fact(
        `type:${field}`,
        () => `${field ? `${subject}is ` : ''}now ${typeText(c.now)} (was ${typeText(c.was)})`,
      );
    return fact(`type:${field}:${c.action}`, () =>
      c.action === 'add' ? `${subject}now declares type ${typeText(c.now)}` : `${subject}no longer declares a type`,
    );
  }
  const bound = BOUNDS[last];
  if (bound) {
    const at = field ? `${code(field)}: ` : '';
    return fact(`bound:${field}:${last}`, () =>
      c.action === 'replace'
        ? `${at}${bound} now ${code(c.now)} (was ${code(c.was)})`
        : c.action === 'add'
          ? `${at}${bound} ${code(c.now ?? '…')} set`
          : `${at}${bound}${c.was === undefined ? '' : ` ${code(c.was)}`} dropped`,
    );
  }
  if (last === 'additionalProperties')
    return fact(`closed:${field}`, () =>
      c.now === false
        ? `${field ? code(field) : 'the body'} now refuses fields it does not list`
        : `${field ? code(field) : 'the body'}: what it takes beyond its listed fields ${verbed}`,
    );
  if (parent === 'x-error-status')
    return fact(`status:${last}`, () =>
      c.action === 'replace'
        ? `code ${code(last)} now answered with HTTP ${c.now} (was ${c.was})`
        : c.action === 'add'
          ? `code ${code(last)} answered with HTTP ${c.now}`
          : `code ${code(last)} no longer has an HTTP status`,
    );
  if (last === 'deprecated')
    return fact(
      `deprecated:${field}`,
      () => `${field ? `${code(field)} ` : ''}${c.now === true ? 'deprecated' : 'no longer deprecated'}`,
    );
  const key = segments.filter((s) => !/^\d+$/.test(s)).at(-1) ?? last;
  return fact(`other:${path}:${c.action}`, () => `${field ? `${code(field)}: ` : ''}${code(key)} ${verbed}`);
}

/** What a line is about: a schema (with the operations it reaches), an operation, or the API as a whole. */
interface Subject {
  key: string;
  label: string;
  /** The path below the subject, split. */
  segments: string[];
  schema: boolean;
}

function subjectOf(c: Change): Subject {
  if (c.schema)
    return { key: `schema ${c.schema.name}`, label: code(c.schema.name), segments: split(c.schema.at), schema: true };
  if (ownFinding(c) && !c.where.startsWith('webhook ')) return { key: 'api', label: '', segments: [], schema: false };
  return { key: c.where, label: operationName(c.where), segments: split(c.path), schema: false };
}

const split = (path: string) => (path === '' ? [] : path.split('/'));

interface Line {
  section: Section;
  party?: Party;
  subject: Subject;
  facts: Map<string, Fact>;
  where: string[];
  fields: Set<string>;
  places: Set<string>;
  whys: Set<string>;
}

function sectionOf(c: Change): Section | undefined {
  switch (c.kind) {
    case 'breaking':
      return 'breaking';
    case 'undecided':
      return 'undecided';
    case 'deprecated':
      return 'deprecated';
    case 'non-breaking':
      return c.action === 'add' ? 'added' : 'changed';
    default:
      return undefined;
  }
}

/** A field added and made required is a new required field; one removed is not also "no longer required". */
function merged(facts: Map<string, Fact>): Fact[] {
  for (const [key, f] of facts) {
    const added = /^property-add:(.*)$/.exec(key)?.[1];
    if (added !== undefined && facts.delete(`required-add:${added}`))
      facts.set(key, { ...f, say: () => `new required field ${code(added)}` });
    const removed = /^property-remove:(.*)$/.exec(key)?.[1];
    if (removed !== undefined) facts.delete(`required-remove:${removed}`);
  }
  return [...facts.values()];
}

function sentence(line: Line): string {
  const said = merged(line.facts).map((f) => f.say(f.values));
  const places = [...line.places];
  const place = places.length === 1 ? places[0] : undefined;
  const context: string[] = [];
  if (line.subject.schema) {
    const fields = [...line.fields].filter(Boolean);
    if (fields.length > 0 && fields.length <= 2) context.push(`as ${list(fields.map(code))}`);
    const plural = line.where.length > 1 ? 's' : '';
    context.push(`${place ? `in the ${place}${plural} of` : 'in'} ${operations(line.where)}`);
  } else if (place) context.push(place);
  const label = `${line.subject.label}${context.length > 0 ? ` (${context.join(', ')})` : ''}`;
  const body = `${label ? `${label}: ` : ''}${said.join('; ')}`;
  if (line.section === 'breaking') return `- Breaks **${line.party}**: ${body}.`;
  if (line.section === 'undecided') {
    const judge = line.whys.size > 0 ? ` (${[...line.whys].join('; ')}: judge it)` : '';
    return `- For **${line.party}**: ${body}${judge}.`;
  }
  return `- ${body}.`;
}

/** Lines folded under a summary, in Markdown that GitHub and the docs page both read. */
const fold = (summary: string, lines: readonly string[]) => [
  '<details>',
  `<summary>${summary}</summary>`,
  '',
  ...lines,
  '</details>',
];

/** The documentation-only changes, counted in one line, each schema or operation listed under a fold. */
function documentation(changes: readonly Change[]): string[] {
  const bySubject = new Map<string, { subject: Subject; said: Map<string, string>; where: Set<string> }>();
  const places = new Set<string>();
  const where = new Set<string>();
  const kinds = new Set<'descriptions' | 'examples' | 'annotations'>();
  for (const c of changes) {
    const subject = subjectOf(c);
    const segments = subject.segments.filter((s) => !/^\d+$/.test(s));
    const key =
      [...segments].reverse().find((s) => /^(description|title|summary|examples?|x-.*)$/.test(s)) ??
      segments.at(-1) ??
      'description';
    const words = /^(description|title|summary)$/.test(key);
    kinds.add(words ? 'descriptions' : /^examples?$/.test(key) ? 'examples' : 'annotations');
    const field = fieldOf(subject.segments);
    const what = `${words ? key : /^examples?$/.test(key) ? 'examples' : (EXTENSIONS[key] ?? code(key))}${field ? ` of ${code(field)}` : ''}`;
    const verb = c.action === 'replace' && words ? 'reworded' : VERBED[c.action];
    places.add(`${subject.key}|${subject.segments.join('/')}`);
    where.add(c.where);
    const entry = bySubject.get(subject.key) ?? { subject, said: new Map(), where: new Set() };
    entry.said.set(`${what}|${verb}`, `${what} ${verb}`);
    entry.where.add(c.where);
    bySubject.set(subject.key, entry);
  }
  const named = (['descriptions', 'examples', 'annotations'] as const).filter((k) => kinds.has(k));
  const what = list(named).replace(/^./, (ch) => ch.toUpperCase());
  const verb = named.length === 1 && named[0] === 'descriptions' ? 'reworded' : 'changed';
  const count = `${places.size} place${places.size === 1 ? '' : 's'}`;
  const shown = where.size > 1 ? `, shown in ${where.size} operations` : '';
  const lines = [...bySubject.values()].map(({ subject, said, where: seen }) => {
    const label = subject.schema ? `${subject.label} (in ${operations([...seen])})` : subject.label;
    return `- ${label ? `${label}: ` : ''}${[...said.values()].join('; ')}.`;
  });
  return [
    `- ${what} ${verb} in ${count}${shown}; nothing a client sends or reads changes.`,
    '',
    ...fold(`Where (${lines.length} ${lines.length === 1 ? 'schema or operation' : 'schemas and operations'})`, lines),
  ];
}

/** The changes in words, grouped as a changelog reads: breaking first, for whom; then added, changed, deprecated; then the words. */
export function changelogOf(changes: readonly Change[]): string {
  const lines = new Map<string, Line>();
  for (const c of changes) {
    const section = sectionOf(c);
    if (!section) continue;
    const subject = subjectOf(c);
    const party = ALWAYS_SHOWN.has(section) ? c.party : undefined;
    const key = `${section}|${party ?? ''}|${subject.key}`;
    const line = lines.get(key) ?? {
      section,
      ...(party ? { party } : {}),
      subject,
      facts: new Map<string, Fact>(),
      where: [],
      fields: new Set<string>(),
      places: new Set<string>(),
      whys: new Set<string>(),
    };
    lines.set(key, line);
    const f = factOf(c, subject.segments);
    const known = line.facts.get(f.key);
    if (known) for (const v of f.values) known.values.includes(v) || known.values.push(v);
    else line.facts.set(f.key, f);
    if (!line.where.includes(c.where)) line.where.push(c.where);
    if (subject.schema) {
      // The field the schema is met as in the operation (`amount.currency` for `Currency`).
      const [outer, inner] = [fieldOf(split(c.path)), fieldOf(subject.segments)];
      line.fields.add(inner && outer.endsWith(inner) ? outer.slice(0, -inner.length).replace(/\.$/, '') : outer);
    }
    const place = placeOf(c);
    if (place) line.places.add(place);
    // The first clause of why the gate could not decide: what a person must judge.
    if (section === 'undecided' && c.why) line.whys.add(c.why.split(';')[0]!);
  }
  const byParty = (l: Line) => (l.party ? PARTIES.indexOf(l.party) : 0);
  const out: string[] = [];
  for (const section of SECTIONS) {
    const items = [...lines.values()]
      .filter((l) => l.section === section)
      .sort((a, b) => byParty(a) - byParty(b))
      .map(sentence);
    if (items.length === 0) continue;
    out.push(`### ${HEADINGS[section]}`, '');
    if (ALWAYS_SHOWN.has(section) || items.length <= FOLD_OVER) out.push(...items);
    else out.push(...items.slice(0, SHOWN), '', ...fold(`${items.length - SHOWN} more`, items.slice(SHOWN)));
    out.push('');
  }
  const words = changes.filter((c) => c.kind === 'annotation');
  if (words.length > 0) out.push(`### ${HEADINGS.documentation}`, '', ...documentation(words), '');
  return out.join('\n').trim() || 'No change to the description.';
}

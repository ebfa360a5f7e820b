/**
 * The clause register: every normative statement of the service document under a stable
 * id. The words have one home, SERVICE.md: each clause is the text right after its anchor
 * (`<a id="idem.conflict"></a>`) up to the end of its line or table row, the next anchor, or
 * an end mark (`<!-- /idem.conflict -->`); `npm run generate` copies them into
 * clause-text.ts, raising the register's version whenever they or this reading change.
 * Table rows keep the document's cells joined by " | ". Checks cite clause ids; a check's
 * level is the strength of what it cites.
 *
 * What is kept here is the suite's reading of the words: the section each belongs to, and
 * for a clause that is not a `must` of the service, whose duty it is (a merchant's receiver,
 * checked by `receiver`; an API client, checked by `client`, through its driver), how strong
 * it is, and why the suite cannot judge it from outside when it cannot.
 */
import { CLAUSE_TEXT } from './clause-text.ts';

export { CLAUSE_REGISTER_VERSION } from './clause-text.ts';

export type Strength = 'must' | 'should';
export type Subject = 'service' | 'receiver' | 'client';

export interface Clause {
  id: string;
  section: string;
  words: string;
  strength: Strength;
  subject: Subject;
  /** Why no check can judge it from outside the implementation. */
  notCheckable?: string;
  /** The words that decide its strength (Reading.decidedBy). */
  decidedBy?: string;
}

/** How the suite reads a clause, where it is not a must of the service that a check can judge. */
export interface Reading {
  strength?: Strength;
  subject?: Subject;
  notCheckable?: string;
  /**
   * The words that decide its strength, and why: for a duty of a client, whose level the
   * document gives in a word ("should", "must") or in a plain statement of what clients do.
   */
  decidedBy?: string;
}

/** The register's sections in document order, each from the clause it starts at. */
export const SECTIONS: ReadonlyArray<readonly [firstClause: string, section: string]> = [
  ['svc.rails', 'What the service does'],
  ['conv.host', 'General conventions'],
  ['res.token.access', 'Resources: access token response'],
  ['res.create.id', 'Resources: checkout session (create response)'],
  ['res.read.id', 'Resources: checkout session (read response)'],
  ['res.transaction', 'Resources: transaction and payment link'],
  ['state.created', 'States and transitions'],
  ['ep.bearer', 'Endpoints'],
  ['token.form', 'Endpoints: POST /api/token'],
  ['create.one', 'Endpoints: POST /api/checkout-sessions'],
  ['read.id', 'Endpoints: GET /api/checkout-sessions/{id}'],
  ['link.endpoints', 'Endpoints: payment links and legacy transactions'],
  ['auth.pair', 'Authentication'],
  ['secret.scope', 'Webhook signing secret'],
  ['target.https', 'Events: delivery target and kinds'],
  ['payload.small', 'Events: payload'],
  ['sig.header', 'Events: signature'],
  ['retry.success', 'Events: response and retry behaviour'],
  ['err.code', 'Errors: envelope'],
  ['status.200', 'Errors: HTTP statuses'],
  ['code.validation-failed', 'Errors: codes'],
  ['limit.token', 'Limits'],
  ['ver.unversioned', 'Versioning'],
];

/** Every clause that is not a must of the service judged from outside: its strength, whose duty it is, or why it cannot be judged. */
export const READING: Readonly<Record<string, Reading>> = {
  'res.token.reuse': {
    strength: 'should',
    subject: 'client',
    decidedBy: '"Clients should reuse a token": a should, in the Resources table’s notes',
  },
  'state.open': { subject: 'client', decidedBy: '"must not fulfil, and must not error"' },
  'token.500': {
    notCheckable:
      'needs a failure of the service itself; the adapter’s injectFault reaches the create endpoint only (see IDEM-007)',
  },
  'redirect.not-proof': { subject: 'client', decidedBy: '"the merchant must read the session back"' },
  'idem.no-key': {
    subject: 'client',
    decidedBy:
      '"a retry may create a second payment": a numbered rule saying what a create sent again without a key risks; a client keeps to it by never sending a create twice but under one key, so it reads as a must',
  },
  'auth.secret': { subject: 'client', notCheckable: 'a rule for the merchant keeping the secret' },
  'auth.reuse': {
    subject: 'client',
    decidedBy:
      '"Token lifetime is five minutes. Clients reuse a token until it expires": a numbered rule of Authentication, stated plainly as what clients do, like the rules beside it (rule 5: "the client fetches a new token and repeats the request once"); the "should" of the Resources table is its own clause (res.token.reuse)',
  },
  'secret.visible': { notCheckable: 'the portal is outside the API' },
  'target.fixed': {
    notCheckable: 'no operation of the API changes a session or link after creation, so there is nothing to refuse',
  },
  'event.unknown': { subject: 'receiver' },
  'legacy.branch': { subject: 'receiver' },
  'sig.reject-unsigned': { subject: 'receiver' },
  'sig.versions': { subject: 'receiver' },
  'verify.split': { subject: 'receiver' },
  'verify.raw': { subject: 'receiver' },
  'verify.constant-time': {
    subject: 'receiver',
    notCheckable: 'a timing difference of one comparison cannot be measured reliably over a network',
  },
  'verify.age': { subject: 'receiver' },
  'verify.parse-after': { subject: 'receiver' },
  'retry.duplicates': { subject: 'receiver' },
  'retry.reconcile': {
    subject: 'receiver',
    notCheckable: 'reconciliation is a merchant’s scheduled job, not an answer to a request the suite can send',
  },
  'code.guidance': {
    subject: 'client',
    decidedBy: '"are fixed in the portal, not by retrying": a plain statement of what a client does with them',
  },
  'code.open': { subject: 'client', decidedBy: '"clients fall back to a generic failure rather than crashing"' },
  'limit.signature-age': { subject: 'receiver' },
  'ver.open-sets': { subject: 'client', decidedBy: '"clients ignore or safely handle unknown ones"' },
};

function register(): Clause[] {
  const starts = new Map(SECTIONS);
  let section = '';
  return CLAUSE_TEXT.map(([id, words]) => {
    section = starts.get(id) ?? section;
    const { strength = 'must', subject = 'service', notCheckable, decidedBy } = READING[id] ?? {};
    return {
      id,
      section,
      words,
      strength,
      subject,
      ...(notCheckable ? { notCheckable } : {}),
      ...(decidedBy ? { decidedBy } : {}),
    };
  });
}

export const CLAUSES: readonly Clause[] = register();

const byId = new Map(CLAUSES.map((c) => [c.id, c]));

export function clause(id: string): Clause {
  const found = byId.get(id);
  if (!found) throw new Error(`No clause ${id} in the register.`);
  return found;
}

/** The words as a reader sees them: table cells joined by ": " rather than " | ". */
export function wordsOf(c: Clause): string {
  return c.words.replace(/ \| /g, ': ').replace(/ \|$/, '');
}

/** How a check's `rule` reads: the clause ids it cites, the words one lookup away. */
export function renderRule(ids: readonly string[]): string {
  return ids.map((id) => clause(id).id).join(', ');
}

/** Each clause on a line of its own: "id (section): words". */
export function explainClauses(ids: readonly string[]): string[] {
  return ids.map((id) => {
    const c = clause(id);
    return `${c.id} (${c.section}): ${wordsOf(c)}`;
  });
}

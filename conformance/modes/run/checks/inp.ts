/**
 * The input space (input-space.ts), judged class by class: every value the description gives
 * each create field, alone; the media types, header names and schemes a request may carry in
 * other forms; ids of other forms on every lookup; query parameters the document does not
 * name; Idempotency-Keys of other forms. What the document allows must be accepted as the
 * plain request is, what it does not must get its documented code, and where it leaves the
 * answer open every allowed one passes (the check says which it saw).
 */
import { randomUUID } from 'node:crypto';
import type { Exchange } from '../../../core/exchange.ts';
import { at, show, text } from '../../../core/json.ts';
import { CheckFailure } from '../../../core/outcome.ts';
import { expect, expectError, expectStatus } from '../assert.ts';
import type { Org } from '../context/organisations.ts';
import { sessionBody } from '../context/api.ts';
import type { CheckContext, RunCheck } from '../context/check-context.ts';
import { withVariant } from '../explore/boundary.ts';
import { BOUNDARY_CLAUSES, judgeBoundary } from '../boundary-judge.ts';
import { Divergence } from '../explore/judge.ts';
import { bodyClasses, fixedClass } from '../input-space.ts';

const section = 'Input space';

/** Requests of a sweep at once: the target answers them as it would a few clients. */
const AT_ONCE = 8;

/** Marks a class exercised: its request was sent and answered. */
function exercised(ctx: CheckContext, id: string): void {
  ctx.run.inputs.add(fixedClass(id).id);
}

/** A create as raw JSON text, with the headers given (names as written). */
async function rawCreate(
  ctx: CheckContext,
  org: Org,
  headers: Record<string, string>,
  options: { query?: string; keepHeaderCase?: boolean; body?: unknown } = {},
): Promise<Exchange> {
  return ctx.api.send('POST', `/api/checkout-sessions${options.query ?? ''}`, {
    raw: JSON.stringify(options.body ?? sessionBody()),
    headers: { authorization: `Bearer ${await ctx.api.token(org)}`, ...headers },
    ...(options.keepHeaderCase ? { keepHeaderCase: true } : {}),
  });
}

/** Accepted as a create is: 200 with a session's id. */
function expectCreated(e: Exchange, what: string): string {
  expectStatus(e, 200, what);
  const id = text(e.json, 'id');
  expect(id !== undefined, `${what}: the answer has no session id.`, e);
  return id!;
}

async function eachAtOnce<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += AT_ONCE) await Promise.all(items.slice(i, i + AT_ONCE).map(work));
}

export const inputChecks: RunCheck[] = [
  {
    id: 'INP-001',
    clauses: BOUNDARY_CLAUSES,
    section,
    title:
      'every value the description gives each create field, alone in a valid body: the valid ones accepted, the others refused with validation_failed naming the field',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const token = await ctx.api.token(org);
      const found: Divergence[] = [];
      const classes = bodyClasses();
      await eachAtOnce(classes, async (c) => {
        const e = await ctx.api.send('POST', '/api/checkout-sessions', {
          token,
          json: withVariant(sessionBody(), c.variant),
        });
        if (e.status === 429) return;
        ctx.run.inputs.add(c.id);
        try {
          judgeBoundary(e, [c.variant], ctx.run.settings.strictAssumptions);
        } catch (error) {
          if (!(error instanceof Divergence)) throw error;
          found.push(error);
        }
      });
      const first = found[0];
      if (first)
        throw new CheckFailure(
          `${first.message}${found.length > 1 ? ` (and ${found.length - 1} more of the ${classes.length} values)` : ''}`,
          first.exchange ? { exchange: first.exchange } : undefined,
          first.clauses,
        );
      ctx.note = `${classes.length} values of ${new Set(classes.map((c) => c.variant.field)).size} fields, each alone`;
    },
  },
  {
    id: 'INP-002',
    clauses: ['conv.request-body', 'token.form', 'token.ok', 'create.ok'],
    section,
    title:
      'a media type with parameters, in other letter cases or with spaces around its semicolon is the same media type: the token request and the create are accepted',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const pair = org.keys.test;
      const form = new URLSearchParams({ clientId: pair.clientId, clientSecret: pair.clientSecret }).toString();
      for (const [id, type] of [
        ['token.media.charset', 'application/x-www-form-urlencoded; charset=UTF-8'],
        ['token.media.case', 'Application/X-WWW-Form-URLEncoded'],
      ] as const) {
        const e = await ctx.api.send('POST', '/api/token', { raw: form, headers: { 'content-type': type } });
        exercised(ctx, id);
        expectStatus(e, 200, `a token request sent as ${type}`);
        expect(typeof at(e.json, 'accessToken') === 'string', `a token request sent as ${type}: no accessToken.`, e);
      }
      for (const [id, type] of [
        ['create.media.charset', 'application/json; charset=utf-8'],
        ['create.media.case', 'Application/JSON'],
        ['create.media.spaces', 'application/json ; charset=utf-8'],
      ] as const) {
        const e = await rawCreate(ctx, org, { 'content-type': type });
        exercised(ctx, id);
        expectCreated(e, `a create sent as ${type}`);
      }
    },
  },
  {
    id: 'INP-003',
    clauses: ['auth.bearer', 'create.ok', 'read.ok', 'idem.replay'],
    section,
    title:
      'header names are the same in any letter case (an Idempotency-Key sent as IDEMPOTENCY-KEY is the same key); the bearer scheme written bearer is taken or refused unauthorized',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const token = await ctx.api.token(org);
      const key = ctx.newKey();
      const upper = await rawCreate(
        ctx,
        org,
        { AUTHORIZATION: `Bearer ${token}`, 'CONTENT-TYPE': 'application/json', 'IDEMPOTENCY-KEY': key },
        { keepHeaderCase: true },
      );
      exercised(ctx, 'create.header.names-upper');
      const id = expectCreated(upper, 'a create whose header names are in capitals');
      const again = await rawCreate(ctx, org, { 'content-type': 'application/json', 'idempotency-key': key });
      expect(
        again.status === 200 && text(again.json, 'id') === id,
        `The same Idempotency-Key, sent first as IDEMPOTENCY-KEY and then as idempotency-key with the identical body, must replay session ${id}; received ${again.status} ${show(text(again.json, 'id') ?? at(again.json, 'error', 'code'))}.`,
        again,
      );
      const mixed = await ctx.api.send('GET', `/api/checkout-sessions/${encodeURIComponent(id)}`, {
        headers: { aUtHoRiZaTiOn: `Bearer ${token}` },
        keepHeaderCase: true,
      });
      exercised(ctx, 'read.header.names-mixed');
      expectStatus(mixed, 200, 'a read whose Authorization header is named aUtHoRiZaTiOn');
      const lower = await ctx.api.send('GET', `/api/checkout-sessions/${encodeURIComponent(id)}`, {
        headers: { authorization: `bearer ${token}` },
      });
      exercised(ctx, 'read.header.scheme-case');
      // The document writes the form `Bearer <token>`; HTTP reads a scheme in any case: either answer.
      if (lower.status !== 200) expectError(lower, 401, 'unauthorized', 'a read whose scheme is written bearer');
      ctx.note = `the scheme written bearer was ${lower.status === 200 ? 'taken' : 'refused unauthorized'}`;
    },
  },
  {
    id: 'INP-004',
    clauses: ['code.not-found', 'status.404', 'read.errors', 'link.endpoints', 'legacy.retired', 'legacy.link'],
    section,
    title:
      'an id of any other form or length, on every lookup, is an id that does not exist: 404 not_found (never 400)',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const token = await ctx.api.token(org);
      const session = await ctx.api.session(org);
      const lookups: Array<[string, string, string]> = [
        ['read.path.no-prefix', '/api/checkout-sessions/', 'Zq81nLk2pW'],
        ['read.path.prefix-only', '/api/checkout-sessions/', 'cs_'],
        ['read.path.long', '/api/checkout-sessions/', `cs_${'a'.repeat(497)}`],
        ['read.path.encoded', '/api/checkout-sessions/', 'cs_ x'],
        ['read.path.non-ascii', '/api/checkout-sessions/', 'cs_é9'],
        ['read.path.uuid', '/api/checkout-sessions/', randomUUID()],
        ['link.path.not-uuid', '/api/payment-links/', 'link-1001'],
        ['link.path.session-id', '/api/payment-links/', session.id],
        ['link.path.unknown-uuid', '/api/payment-links/', randomUUID()],
        ['legacy.path.not-uuid', '/api/transaction/', 'txn-1001'],
        ['legacy.path.session-id', '/api/transaction/', session.id],
      ];
      for (const [id, path, value] of lookups) {
        const e = await ctx.api.send('GET', `${path}${encodeURIComponent(value)}`, { token });
        exercised(ctx, id);
        expectError(e, 404, 'not_found', `GET ${path}{id} with ${fixedClass(id).what}`);
      }
    },
  },
  {
    id: 'INP-005',
    clauses: ['token.ok', 'create.ok', 'read.ok', 'link.endpoints'],
    section,
    title: 'a query parameter the document does not name changes nothing: each operation answers as it does without it',
    uses: ['paymentLinks'],
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const pair = org.keys.test;
      const query = '?expand=everything&utm_source=conformance';
      const token = await ctx.api.send('POST', `/api/token${query}`, {
        form: { clientId: pair.clientId, clientSecret: pair.clientSecret },
      });
      exercised(ctx, 'token.query.unknown');
      expectStatus(token, 200, `POST /api/token${query}`);
      const created = await rawCreate(ctx, org, { 'content-type': 'application/json' }, { query });
      exercised(ctx, 'create.query.unknown');
      const id = expectCreated(created, `POST /api/checkout-sessions${query}`);
      const plain = await ctx.api.readSession(org, id);
      const read = await ctx.api.send('GET', `/api/checkout-sessions/${encodeURIComponent(id)}${query}`, {
        token: await ctx.api.token(org),
      });
      exercised(ctx, 'read.query.unknown');
      expectStatus(read, 200, `GET /api/checkout-sessions/{id}${query}`);
      expect(
        text(read.json, 'id') === text(plain.json, 'id') && at(read.json, 'status') === at(plain.json, 'status'),
        'The read with an unknown query parameter gives another session, or another status, than without it.',
        read,
      );
      const link = await ctx.target.paymentLink(org, { reference: 'QUERY' }).catch(() => undefined);
      if (link === undefined) return;
      const linkRead = await ctx.api.send('GET', `/api/payment-links/${encodeURIComponent(link)}${query}`, {
        token: await ctx.api.token(org),
      });
      exercised(ctx, 'link.query.unknown');
      expectStatus(linkRead, 200, `GET /api/payment-links/{id}${query}`);
    },
  },
  {
    id: 'INP-006',
    clauses: ['create.idempotency-key', 'idem.replay'],
    section,
    title:
      'an Idempotency-Key of another form (a UUID, one character, 255 characters, spaces and punctuation) is replayed as any key: the same session again, or refused naming Idempotency-Key where the document sets no length',
    async run(ctx) {
      const org = await ctx.target.sharedOrganisation();
      const seen: string[] = [];
      for (const [id, key] of [
        ['create.header.key-uuid', randomUUID()],
        ['create.header.key-one', randomUUID().slice(0, 1)],
        ['create.header.key-long', `${randomUUID()}${'k'.repeat(219)}`],
        ['create.header.key-punctuation', `order 1001/#${randomUUID().slice(0, 8)} (retry)`],
      ] as const) {
        const body = sessionBody({ foreignTransactionId: `${id}-${randomUUID()}` });
        const first = await ctx.api.createSession(org, body, { idempotencyKey: key });
        exercised(ctx, id);
        // The document sets no length or alphabet for a key: past a UUID, a target may hold
        // keys to limits of its own, as long as it says so as validation_failed.
        if (first.status !== 200 && fixedClass(id).expected === 'open') {
          expectError(first, 400, 'validation_failed', `a create with ${fixedClass(id).what}`);
          seen.push(`${fixedClass(id).what.replace(/, replayed$/, '')}: refused`);
          continue;
        }
        const made = expectCreated(first, `a create with ${fixedClass(id).what}`);
        const again = await ctx.api.createSession(org, body, { idempotencyKey: key });
        expect(
          again.status === 200 && text(again.json, 'id') === made,
          `${fixedClass(id).what}: the identical create sent again must replay session ${made}; received ${again.status} ${show(text(again.json, 'id') ?? at(again.json, 'error', 'code'))}.`,
          again,
        );
        seen.push(`${fixedClass(id).what.replace(/, replayed$/, '')}: replayed`);
      }
      ctx.note = seen.join('; ');
    },
  },
];

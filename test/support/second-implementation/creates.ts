/**
 * Creates (Endpoints: POST /api/checkout-sessions; Idempotency rules; payment links and
 * legacy transactions in shapes of ours): validation first, then the Idempotency-Key, then
 * configuration, then the commit; and how each kind of payment reads back.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import {
  SESSION_LIFETIME,
  IDEMPOTENCY_MEMORY,
  type Mode,
  type Organisation,
  type Session,
  type Link,
  type LegacyTransaction,
  ApiError,
  Problems,
} from './types.ts';
import { isObject, iso, wholeSecond, canonical } from './helpers.ts';
import type { State } from './state.ts';
import type { makeValidation, SessionInput } from './validation.ts';

/** Creates and views over the state. */
export function makeCreates(st: State, validation: ReturnType<typeof makeValidation>) {
  const { idempotency, now, sessions, payments, statusOf } = st;
  const { text, money, webhookTarget, REFERENCE_CHARS, validateSession, configuration } = validation;
  interface Create<T> {
    endpoint: string;
    validate(body: Record<string, unknown>, p: Problems): T | null;
    configure(input: T, org: Organisation): ApiError | null;
    commit(input: T, org: Organisation, mode: Mode): unknown;
  }

  /**
   * Synchronous from here on, so concurrent identical requests cannot both create
   * (idem.replay): the first commits and stores its answer, the others replay it.
   */
  function create<T>(spec: Create<T>, req: IncomingMessage, raw: Buffer, org: Organisation, mode: Mode): unknown {
    const p = new Problems();
    const keyHeader = req.headers['idempotency-key'];
    const key = Array.isArray(keyHeader) ? keyHeader.join(',') : keyHeader;
    if (key !== undefined && key.trim() === '')
      p.add('Idempotency-Key', { minLength: 'Idempotency-Key must not be empty' });
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      p.add('body', { json: 'the body must be valid JSON' });
    }
    let input: T | null = null;
    if (body !== undefined && !isObject(body)) p.add('body', { isObject: 'the body must be a JSON object' });
    else if (isObject(body)) input = spec.validate(body, p);
    if (p.any || input === null) throw p.error(); // order.validation: validation first

    // Keys are scoped to organisation, mode and endpoint (ours) and remembered 24 hours on the
    // organisation's clock (limit.idempotency).
    const slot = key === undefined ? null : [org.id, mode, spec.endpoint, key].join('\u0000');
    const request = canonical(body);
    if (slot) {
      const held = idempotency.get(slot);
      if (held && now(org) - held.storedAt < IDEMPOTENCY_MEMORY) {
        if (held.request === request) return held.response; // idem.replay
        throw new ApiError(400, 'idempotency_error', 'This Idempotency-Key was used with a different body.'); // idem.conflict
      }
    }
    // Replay comes before configuration: a repeat must not depend on today's settings. A
    // request refused here stores no key, so the same key works once the portal is fixed.
    const refused = spec.configure(input, org);
    if (refused) throw refused;
    const response = spec.commit(input, org, mode);
    if (slot) idempotency.set(slot, { request, storedAt: now(org), response });
    if (org.faults.afterCommit > 0) {
      // injectFault internal_error_after_commit: committed (key included), then a 500.
      org.faults.afterCommit -= 1;
      throw new ApiError(500, 'internal_error', 'Internal error.');
    }
    return response;
  }

  const sessionCreate: Create<SessionInput> = {
    endpoint: 'checkout-sessions',
    validate: validateSession,
    configure: configuration,
    commit(input, org, mode) {
      const at = wholeSecond(now(org));
      const id = `cs_${randomBytes(15).toString('base64url')}`; // res.create.id; ours after the prefix
      const session: Session = {
        kind: 'session',
        id,
        transactionId: randomUUID(), // svc.uuid
        orgId: org.id,
        testMode: mode === 'test', // res.create.test-mode
        status: 'created',
        paidWith: null,
        notifyUrl: input.webhookUrl,
        foreignTransactionId: input.foreignTransactionId,
        createdAt: at,
        updatedAt: at,
        total: input.total,
        currency: input.currency ?? org.settlementCurrency, // create.currency: filled in when omitted
        checkoutMethod: input.checkoutMethod,
        reference: input.reference,
        particulars: input.particulars,
        code: input.code ?? `G${randomBytes(4).toString('hex').toUpperCase()}`, // create.code: generated
        redirectUrl: input.redirectUrl,
        description: input.description,
        expiresAt: at + SESSION_LIFETIME,
      };
      sessions.set(id, session);
      payments.set(session.transactionId, session);
      return {
        id,
        status: 'created',
        url: `${st.baseUrl}/pay/${id}`,
        code: session.code,
        amount: { total: session.total, currency: session.currency },
        checkoutMethod: session.checkoutMethod,
        reference: session.reference,
        testMode: session.testMode,
        expiresAt: iso(session.expiresAt),
      };
    },
  };

  function sessionView(s: Session) {
    const status = statusOf(s);
    return {
      id: s.id,
      status,
      code: s.code,
      amount: { total: s.total, currency: s.currency },
      checkoutMethod: s.checkoutMethod,
      reference: s.reference,
      particulars: s.particulars,
      // res.read.transaction-type: the rail once completed, open_banking before.
      transactionType: s.status === 'completed' ? s.paidWith : 'open_banking',
      testMode: s.testMode,
      foreignTransactionId: s.foreignTransactionId ?? '', // ours: the read types it as a string
      expiresAt: iso(s.expiresAt),
      createdAt: iso(s.createdAt),
      updatedAt: iso(status === 'expired' ? Math.max(s.updatedAt, s.expiresAt) : s.updatedAt),
    };
  }

  // Payment links: the document shows no request shape (link.endpoints); ours is
  // { amountDue, label, webhookUrl?, foreignTransactionId? }.
  interface LinkInput {
    amountDue: number;
    label: string;
    webhookUrl: string | null;
    foreignTransactionId: string | null;
  }

  const linkCreate: Create<LinkInput> = {
    endpoint: 'payment-links',
    validate(b, p) {
      const amountDue = money(b.amountDue, Object.hasOwn(b, 'amountDue'), 'amountDue', p);
      const label = text(b, 'label', 'label', p, { required: true, min: 1, max: 60 });
      const webhookUrl = webhookTarget(b, 'webhookUrl', p); // res.link: accepts a webhookUrl
      const foreignTransactionId = text(b, 'foreignTransactionId', 'foreignTransactionId', p, {});
      if (p.any) return null;
      return {
        amountDue: amountDue!,
        label: label!,
        webhookUrl: webhookUrl ?? null,
        foreignTransactionId: foreignTransactionId ?? null,
      };
    },
    configure: () => null,
    commit(input, org, mode) {
      const at = wholeSecond(now(org));
      const link: Link = {
        kind: 'link',
        transactionId: randomUUID(), // res.link-id: the link's id is its transaction id
        orgId: org.id,
        testMode: mode === 'test',
        status: 'created',
        paidWith: null,
        notifyUrl: input.webhookUrl,
        foreignTransactionId: input.foreignTransactionId,
        createdAt: at,
        updatedAt: at,
        amountDue: input.amountDue,
        currency: org.settlementCurrency,
        label: input.label,
      };
      payments.set(link.transactionId, link);
      return linkView(link);
    },
  };

  function linkView(l: Link) {
    return {
      id: l.transactionId,
      status: l.status,
      amountDue: l.amountDue,
      currency: l.currency,
      label: l.label,
      payUrl: `${st.baseUrl}/pay/${l.transactionId}`,
      paidWith: l.status === 'completed' ? l.paidWith : null,
      testMode: l.testMode,
      foreignTransactionId: l.foreignTransactionId,
      createdAt: iso(l.createdAt),
      updatedAt: iso(l.updatedAt),
    };
  }

  // Legacy transactions: no shape shown; ours is { total, reference, notificationUrl?, foreignTransactionId? }.
  interface LegacyInput {
    total: number;
    reference: string;
    notificationUrl: string | null;
    foreignTransactionId: string | null;
  }

  const legacyCreate: Create<LegacyInput> = {
    endpoint: 'transaction',
    validate(b, p) {
      const total = money(b.total, Object.hasOwn(b, 'total'), 'total', p);
      const reference = text(b, 'reference', 'reference', p, {
        required: true,
        min: 1,
        max: 12,
        chars: REFERENCE_CHARS,
        charsText: "0-9 A-Z a-z space ' . , @ _ -",
      });
      const notificationUrl = webhookTarget(b, 'notificationUrl', p);
      const foreignTransactionId = text(b, 'foreignTransactionId', 'foreignTransactionId', p, {});
      if (p.any) return null;
      return {
        total: total!,
        reference: reference!,
        notificationUrl: notificationUrl ?? null,
        foreignTransactionId: foreignTransactionId ?? null,
      };
    },
    configure: () => null,
    commit(input, org, mode) {
      const at = wholeSecond(now(org));
      const tx: LegacyTransaction = {
        kind: 'legacy',
        transactionId: randomUUID(),
        orgId: org.id,
        testMode: mode === 'test',
        status: 'created',
        paidWith: null,
        notifyUrl: input.notificationUrl,
        foreignTransactionId: input.foreignTransactionId,
        createdAt: at,
        updatedAt: at,
        total: input.total,
        currency: org.settlementCurrency,
        reference: input.reference,
      };
      payments.set(tx.transactionId, tx);
      return transactionView(tx);
    },
  };

  function transactionView(t: Link | LegacyTransaction) {
    return {
      transactionId: t.transactionId,
      status: t.status,
      total: t.kind === 'link' ? t.amountDue : t.total,
      currency: t.currency,
      reference: t.kind === 'link' ? t.label : t.reference,
      payUrl: `${st.baseUrl}/pay/${t.transactionId}`,
      testMode: t.testMode,
      foreignTransactionId: t.foreignTransactionId,
      createdAt: iso(t.createdAt),
      updatedAt: iso(t.updatedAt),
    };
  }

  return { create, sessionCreate, sessionView, linkCreate, linkView, legacyCreate, transactionView };
}

/**
 * The description-coverage model without a target: hand-made exchanges and deliveries
 * against the bundled description. Which documented responses, codes, events and request
 * constraints each exercises, what is listed apart as the target's own, what is not
 * counted at all (the sandbox API, the hosted page), and the figure --min-coverage reads.
 */
import { describe, expect, it } from 'vitest';
import { description } from '../../conformance/core/description.ts';
import {
  constraintName,
  type DescriptionCoverage,
  descriptionCoverage,
  percentOf,
} from '../../conformance/core/description-coverage.ts';
import type { Exchange } from '../../conformance/core/exchange.ts';
import { sessionBody } from '../../conformance/modes/run/context/api.ts';

const BASE = 'http://target.test/base';

interface Sent {
  json?: unknown;
  form?: Record<string, string>;
  raw?: string;
  answer?: unknown;
}

function exchange(checkId: string, method: string, path: string, status: number, sent: Sent = {}): Exchange {
  const headers: Record<string, string> = {};
  let body: string | undefined;
  if (sent.form) {
    body = new URLSearchParams(sent.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  } else if (sent.json !== undefined) {
    body = JSON.stringify(sent.json);
    headers['content-type'] = 'application/json';
  } else if (sent.raw !== undefined) body = sent.raw;
  return {
    request: { method, url: `${BASE}${path}`, headers, ...(body !== undefined ? { body } : {}) },
    status,
    headers: { 'content-type': 'application/json' },
    text: JSON.stringify(sent.answer ?? {}),
    json: sent.answer ?? {},
    checkId,
  };
}

const coverageOf = (exchanges: Exchange[], deliveries: Parameters<typeof descriptionCoverage>[0]['deliveries'] = []) =>
  descriptionCoverage({ baseUrl: BASE, exchanges, deliveries });

const exercisedCells = (c: DescriptionCoverage) =>
  c.responses.filter((r) => r.exercised).map((r) => `${r.operation} ${r.status} ${r.checks.join(',')}`);
const exercisedConstraints = (c: DescriptionCoverage) =>
  c.constraints
    .filter((k) => k.exercised)
    .map(constraintName)
    .sort();

describe('operations × documented statuses', () => {
  it('counts every documented response of every described operation, and none before the run', () => {
    const c = coverageOf([]);
    const documented = Object.values(description.paths as Record<string, Record<string, any>>).flatMap((item) =>
      Object.values(item).flatMap((op) => (op?.responses ? Object.keys(op.responses) : [])),
    );
    expect(c.responses).toHaveLength(documented.length);
    expect(c.categories.responses).toEqual({ exercised: 0, total: documented.length });
    expect(c.percent).toBe(0);
    expect(c.total).toBe(
      c.categories.responses.total +
        c.categories.errorCodes.total +
        c.categories.webhookEvents.total +
        c.categories.constraints.total,
    );
  });

  it('marks a cell with the checks that got that answer, the path read relative to the base URL', () => {
    const c = coverageOf([
      exchange('TOKEN-001', 'POST', '/api/token', 200),
      exchange('TOKEN-003', 'POST', '/api/token', 400),
      exchange('TOKEN-002', 'POST', '/api/token?x=1', 400),
      exchange('READ-001', 'GET', '/api/checkout-sessions/cs_123', 404),
    ]);
    expect(exercisedCells(c)).toEqual([
      'POST /api/token 200 TOKEN-001',
      'POST /api/token 400 TOKEN-002,TOKEN-003',
      'GET /api/checkout-sessions/{id} 404 READ-001',
    ]);
    expect(c.responses.find((r) => r.operation === 'POST /api/token' && r.status === '429')).toMatchObject({
      exercised: false,
      assumption: true,
    });
  });

  it('lists answers the description does not document apart, never counting them', () => {
    const c = coverageOf([
      exchange('VAL-003', 'POST', '/api/checkout-sessions', 429),
      exchange('RESP-001', 'DELETE', '/api/checkout-sessions/cs_1', 405, {
        answer: { error: { code: 'method_not_allowed' } },
      }),
      exchange('X-001', 'GET', '/api/nothing-here', 404),
    ]);
    expect(c.exercised).toBe(0);
    expect(c.undocumented.responses).toEqual([
      { operation: 'DELETE /api/checkout-sessions/{id}', status: 405, checks: ['RESP-001'] },
      { operation: 'GET /api/nothing-here', status: 404, checks: ['X-001'] },
      { operation: 'POST /api/checkout-sessions', status: 429, checks: ['VAL-003'] },
    ]);
    expect(c.undocumented.errorCodes).toEqual([
      { code: 'method_not_allowed', operations: ['DELETE /api/checkout-sessions/{id}'], checks: ['RESP-001'] },
    ]);
  });

  it('does not count the sandbox API or the hosted page: they are not the described API', () => {
    const c = coverageOf([
      exchange('HOOK-001', 'POST', '/sandbox/organisations', 200),
      exchange('HOOK-001', 'GET', '/sandbox/webhook-deliveries', 401, { answer: { error: { code: 'unauthorized' } } }),
      exchange('HOOK-001', 'POST', '/pay/cs_1/attempts', 303),
    ]);
    expect(c.exercised).toBe(0);
    expect(c.undocumented).toEqual({ responses: [], errorCodes: [], webhookEvents: [] });
  });
});

describe('error codes', () => {
  it('takes the code of the envelope, with the operations it was answered on', () => {
    const c = coverageOf([
      exchange('AUTH-001', 'GET', '/api/checkout-sessions/cs_1', 401, { answer: { error: { code: 'unauthorized' } } }),
      exchange('AUTH-002', 'POST', '/api/checkout-sessions', 401, { answer: { error: { code: 'unauthorized' } } }),
    ]);
    expect(c.errorCodes.find((e) => e.code === 'unauthorized')).toEqual({
      code: 'unauthorized',
      status: 401,
      exercised: true,
      checks: ['AUTH-001', 'AUTH-002'],
      operations: ['GET /api/checkout-sessions/{id}', 'POST /api/checkout-sessions'],
    });
    expect(c.categories.errorCodes.exercised).toBe(1);
  });

  it("takes the token endpoint's plain-string internal_error, never its plain messages", () => {
    const c = coverageOf([
      exchange('TOKEN-900', 'POST', '/api/token', 500, { answer: { error: 'internal_error' } }),
      exchange('TOKEN-005', 'POST', '/api/token', 401, { answer: { error: 'Invalid credentials' } }),
    ]);
    expect(c.errorCodes.filter((e) => e.exercised).map((e) => e.code)).toEqual(['internal_error']);
    expect(c.undocumented.errorCodes).toEqual([]);
  });
});

describe('constraints of the request bodies: exercised by a value on the boundary or outside it', () => {
  const sent = (json: unknown) =>
    exercisedConstraints(coverageOf([exchange('VAL-000', 'POST', '/api/checkout-sessions', 400, { json })]));

  it.each([
    { given: 'a valid body', body: sessionBody(), want: [] },
    {
      given: 'total 10000 (on the maximum)',
      body: sessionBody({ amount: { total: 10000 } }),
      want: ['amount.total maximum 10000'],
    },
    {
      given: 'total 10000.01 (over it)',
      body: sessionBody({ amount: { total: 10000.01 } }),
      want: ['amount.total maximum 10000'],
    },
    { given: 'total 9999.99', body: sessionBody({ amount: { total: 9999.99 } }), want: [] },
    {
      given: 'total 0 (the excluded minimum)',
      body: sessionBody({ amount: { total: 0 } }),
      want: ['amount.total exclusiveMinimum 0'],
    },
    { given: 'total 0.001', body: sessionBody({ amount: { total: 0.001 } }), want: ['amount.total multipleOf 0.01'] },
    { given: 'total 19.99 (two decimals, exactly)', body: sessionBody({ amount: { total: 19.99 } }), want: [] },
    { given: 'total "25" (another type)', body: sessionBody({ amount: { total: '25' } }), want: [] },
    {
      given: 'currency EUR',
      body: sessionBody({ amount: { total: 1, currency: 'EUR' } }),
      want: ['amount.currency enum NZD|AUD'],
    },
    {
      given: 'a reference of 12 characters (on maxLength)',
      body: sessionBody({ creditorReference: { reference: 'ABCDEFGHIJKL' } }),
      want: ['creditorReference.reference maxLength 12'],
    },
    {
      given: 'a reference of 13 characters (over maxLength and the pattern)',
      body: sessionBody({ creditorReference: { reference: 'ABCDEFGHIJKLM' } }),
      want: [
        'creditorReference.reference maxLength 12',
        "creditorReference.reference pattern ^[0-9A-Za-z '.,@_-]{1,12}$",
      ],
    },
    {
      given: 'a reference of one character (on minLength)',
      body: sessionBody({ creditorReference: { reference: 'A' } }),
      want: ['creditorReference.reference minLength 1'],
    },
    {
      given: 'a reference with an illegal character',
      body: sessionBody({ creditorReference: { reference: 'INV#1' } }),
      want: ["creditorReference.reference pattern ^[0-9A-Za-z '.,@_-]{1,12}$"],
    },
    {
      given: 'no reference in the creditorReference sent',
      body: sessionBody({ creditorReference: { reference: undefined, particulars: 'x' } }),
      want: ['creditorReference.reference required'],
    },
    {
      given: 'no amount (its fields are not tried)',
      body: sessionBody({ amount: undefined }),
      want: ['amount required'],
    },
    { given: 'type "double"', body: sessionBody({ type: 'double' }), want: ['type enum single'] },
    {
      given: 'redirectUrl ftp://',
      body: sessionBody({ redirectUrl: 'ftp://shop.example' }),
      want: ['redirectUrl pattern ^[Hh][Tt][Tt][Pp][Ss]?://'],
    },
  ])('$given: $want', ({ body, want }) => {
    expect(sent(body)).toEqual([...want].sort());
  });

  it('reads a form body, and names the operations exercised on', () => {
    const c = coverageOf([
      exchange('TOKEN-003', 'POST', '/api/token', 400, { form: { clientSecret: 'sk_secret_value' } }),
      exchange('VAL-009', 'POST', '/api/payment-links', 400, {
        json: { ...sessionBody({ amount: { total: 10001 } }), type: undefined },
      }),
    ]);
    expect(exercisedConstraints(c)).toEqual(['amount.total maximum 10000', 'clientId required']);
    expect(c.constraints.find((k) => k.field === 'amount.total' && k.keyword === 'maximum')).toMatchObject({
      checks: ['VAL-009'],
      operations: ['POST /api/checkout-sessions', 'POST /api/payment-links', 'POST /api/transaction'],
      exercisedOn: ['POST /api/payment-links'],
    });
  });

  it('tries nothing with a body that is not JSON, nor with a read', () => {
    const c = coverageOf([
      exchange('VAL-000', 'POST', '/api/checkout-sessions', 400, { raw: '{"type":' }),
      exchange('READ-000', 'GET', '/api/checkout-sessions/cs_1', 404),
    ]);
    expect(exercisedConstraints(c)).toEqual([]);
  });
});

describe('webhook events', () => {
  const signed = { 'service-signature': 't=1,v1=00' };
  it('counts each documented event received, signed or not, by the check whose receiver path it came to', () => {
    const c = coverageOf(
      [],
      [
        {
          path: '/hooks/HOOK-001/paid-1',
          headers: signed,
          body: { event: 'checkout_session.completed', transactionId: 't' },
        },
        { path: '/hooks/HOOK-021/unsigned-2', headers: {}, body: { event: 'checkout_session.completed' } },
        { path: '/hooks/HOOK-009/legacy-3', headers: {}, body: { transactionId: 't', foreignTransactionId: null } },
        { path: '/hooks/HOOK-025/other-4', headers: signed, body: { event: 'checkout_session.pending' } },
        { path: '/hooks/HOOK-025/other-5', headers: {}, body: undefined },
      ],
    );
    const seen = c.webhookEvents.filter((e) => e.exercised);
    expect(seen).toEqual([
      {
        event: 'checkout_session.completed',
        operationId: 'checkoutSessionCompletedWebhook',
        exercised: true,
        checks: ['HOOK-001', 'HOOK-021'],
        deliveries: 2,
        signed: 1,
      },
      {
        event: 'legacyTransaction',
        operationId: 'legacyTransactionWebhook',
        exercised: true,
        checks: ['HOOK-009'],
        deliveries: 1,
        signed: 0,
        assumption: true,
      },
    ]);
    // Every other webhook of the description is listed too, in its order, with nothing seen.
    expect(c.webhookEvents.map((e) => e.event)).toEqual(Object.keys(description.webhooks as object));
    for (const e of c.webhookEvents.filter((x) => !x.exercised))
      expect(e).toMatchObject({ checks: [], deliveries: 0, signed: 0 });
    expect(c.undocumented.webhookEvents).toEqual([
      { event: 'checkout_session.pending', deliveries: 1, checks: ['HOOK-025'] },
    ]);
  });
});

describe('the figure', () => {
  it.each([
    { exercised: 0, total: 78, want: 0 },
    { exercised: 66, total: 78, want: 84.6 },
    { exercised: 2, total: 3, want: 66.6 },
    { exercised: 1999, total: 2000, want: 99.9 },
    { exercised: 78, total: 78, want: 100 },
  ])(
    '$exercised of $total is $want% (rounded down, so a figure shown as meeting a minimum does)',
    ({ exercised, total, want }) => {
      expect(percentOf(exercised, total)).toBe(want);
    },
  );

  it('counts every item of every category alike', () => {
    const c = coverageOf([
      exchange('TOKEN-001', 'POST', '/api/token', 200),
      exchange('READ-001', 'GET', '/api/checkout-sessions/cs_1', 404, { answer: { error: { code: 'not_found' } } }),
    ]);
    expect([c.exercised, c.categories.responses.exercised, c.categories.errorCodes.exercised]).toEqual([3, 2, 1]);
    expect(c.percent).toBe(percentOf(3, c.total));
  });
});

/**
 * Coverage of the service document by the bundled description (generated/openapi.json):
 * every endpoint, error code with its status and field constraint the document states is
 * present (its Events: coverage-events.test.ts). Constraints are checked by behaviour: values on both sides
 * of each documented boundary are validated against the description's own schemas.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createValidator, loadDescription, resolveRef, type Json } from './support/description.ts';

const doc = loadDescription('openapi');
const schemaAt = createValidator(doc, 'openapi.json');
const schemas = doc.components.schemas as Json;

function operation(method: string, route: string): Json {
  const op = doc.paths[route]?.[method];
  if (!op) throw new Error(`${method.toUpperCase()} ${route} is not described`);
  return op;
}

/** The error codes shown by a response's examples. */
function codesOf(method: string, route: string, status: string): string[] {
  const response = resolveRef(doc, operation(method, route).responses[status]);
  const examples = Object.values<any>(response?.content?.['application/json']?.examples ?? {});
  return [...new Set(examples.map((e) => resolveRef(doc, e).value?.error?.code).filter(Boolean))].sort();
}

describe('endpoints (Endpoints)', () => {
  it.each([
    ['post', '/api/token', false],
    ['post', '/api/checkout-sessions', false],
    ['get', '/api/checkout-sessions/{id}', false],
    ['post', '/api/payment-links', false],
    ['get', '/api/payment-links/{id}', false],
    ['post', '/api/transaction', true],
    ['get', '/api/transaction/{id}', true],
  ])('%s %s is described (deprecated: %s)', (method, route, deprecated) => {
    const op = operation(method, route);
    expect(Boolean(op.deprecated)).toBe(deprecated);
    expect(Object.keys(op.responses)).toContain('200');
  });

  it('has no other paths', () => {
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        '/api/checkout-sessions',
        '/api/checkout-sessions/{id}',
        '/api/payment-links',
        '/api/payment-links/{id}',
        '/api/token',
        '/api/transaction',
        '/api/transaction/{id}',
      ].sort(),
    );
  });

  it('marks the shapes the document does not show as assumptions', () => {
    for (const [method, route] of [
      ['post', '/api/payment-links'],
      ['get', '/api/payment-links/{id}'],
      ['post', '/api/transaction'],
      ['get', '/api/transaction/{id}'],
    ] as const) {
      expect(operation(method, route)['x-assumption'], `${method} ${route}`).toBe(true);
    }
    for (const name of [
      'PaymentLink',
      'PaymentLinkCreateRequest',
      'LegacyTransaction',
      'LegacyTransactionCreateRequest',
    ]) {
      expect(schemas[name]['x-assumption'], name).toBe(true);
    }
  });

  it('serves the {base_url} server variable', () => {
    expect(doc.servers[0].url).toBe('{base_url}');
    expect(doc.servers[0].variables.base_url).toBeDefined();
  });
});

describe('POST /api/token (Endpoints, Authentication)', () => {
  const op = operation('post', '/api/token');

  it('takes a form-encoded body only, with clientId and clientSecret required', () => {
    expect(Object.keys(op.requestBody.content)).toEqual(['application/x-www-form-urlencoded']);
    const body = resolveRef(doc, op.requestBody.content['application/x-www-form-urlencoded'].schema);
    expect(body.required.sort()).toEqual(['clientId', 'clientSecret']);
  });

  it('needs no bearer token', () => {
    expect(op.security).toEqual([]);
  });

  it('answers the access token response', () => {
    const token = schemaAt('/components/schemas/AccessToken');
    expect(token({ accessToken: 'abc', tokenType: 'Bearer', expiresIn: '5m' })).toBe(true);
    expect(token({ accessToken: 'abc', tokenType: 'Bearer' })).toBe(false);
    expect(token({ accessToken: 'abc', tokenType: 'Bearer', expiresIn: 300 })).toBe(false);
  });

  it.each([
    ['400', 'Invalid credentials - missing or malformed clientId/clientSecret'],
    ['401', 'Invalid credentials'],
    ['500', 'internal_error'],
  ])('%s has a plain-string error, shown as %j', (status, text) => {
    const content = op.responses[status].content['application/json'];
    const examples = Object.values<any>(content.examples).map((e) => e.value);
    expect(examples).toContainEqual({ error: text });
    const validate = schemaAt(`/paths/~1api~1token/post/responses/${status}/content/application~1json/schema`);
    expect(validate({ error: text })).toBe(true);
  });
});

describe('error codes (Errors: Codes)', () => {
  // The document's own table (SERVICE.md, Errors: Codes): each row's code and status.
  const service = readFileSync(new URL('../SERVICE.md', import.meta.url), 'utf8');
  const between = (from: string, to: string) => service.slice(service.indexOf(from), service.indexOf(to));
  const table = between('### Codes', 'Client guidance:');
  const documented: Record<string, number> = Object.fromEntries(
    [...table.matchAll(/^\| (?:<a id="[^"]+"><\/a>)?([a-z_]+) \| (\d{3}) \|/gm)].map((m) => [m[1]!, Number(m[2])]),
  );
  // The create's own error table (Endpoints: POST /api/checkout-sessions): each row's status and codes.
  const createTable = between('Validation and configuration order and errors:', '### GET /api/checkout-sessions/{id}');
  const createRows = [
    ...createTable.matchAll(/^\| (?:<a id="[^"]+"><\/a>)?(\d{3}) \| ([a-z_]+(?:, [a-z_]+)*) \|/gm),
  ].map((m) => ({ status: m[1]!, codes: m[2]!.split(', ') }));
  const createCodes = new Map<string, string[]>();
  for (const { status, codes } of createRows) createCodes.set(status, [...(createCodes.get(status) ?? []), ...codes]);

  it('reads every row of the document’s tables of codes', () => {
    // A table's lines that start with a cell: its header, then one per row.
    const rows = (text: string) => text.split('\n').filter((line) => /^\| (?:<a id="[^"]+"><\/a>)?\S/.test(line));
    expect(Object.keys(documented).length).toBeGreaterThan(0);
    expect(Object.keys(documented)).toHaveLength(rows(table).length - 1);
    expect(createRows.length).toBeGreaterThan(0);
    expect(createRows).toHaveLength(rows(createTable).length - 1);
  });

  it.each(Object.entries(documented))('%s is a known code answered with %i and explained', (code, status) => {
    expect(schemas.KnownErrorCode.enum).toContain(code);
    expect(schemas.KnownErrorCode['x-error-status'][code]).toBe(status);
    expect(schemas.KnownErrorCode['x-enumDescriptions'][code]).toMatch(/\w{4,}/);
  });

  it('knows no code the document does not list', () => {
    expect([...schemas.KnownErrorCode.enum].sort()).toEqual(Object.keys(documented).sort());
  });

  it.each<[string, string, string, string[]]>([
    ...[...createCodes].map(([status, codes]): [string, string, string, string[]] => [
      'post',
      '/api/checkout-sessions',
      status,
      codes.sort(),
    ]),
    [
      'get',
      '/api/checkout-sessions/{id}',
      '401',
      ['invalid_token', 'token_expired', 'unauthorized', 'unknown_api_key'],
    ],
    ['get', '/api/checkout-sessions/{id}', '404', ['not_found']],
    ['get', '/api/checkout-sessions/{id}', '500', ['internal_error']],
    ['get', '/api/transaction/{id}', '404', ['not_found']],
  ])('%s %s %s shows every code it can answer: %j', (method, route, status, codes) => {
    expect(codesOf(method, route, status)).toEqual(codes);
  });

  it('keeps the code set open, so generated clients accept a code added later', () => {
    expect(schemaAt('/components/schemas/ErrorCode')('payment_method_blocked')).toBe(true);
  });
});

describe('error envelope (Errors: Envelope)', () => {
  const envelope = schemaAt('/components/schemas/ErrorEnvelope');
  const base = {
    code: 'not_found',
    message: 'No such session.',
    param: null,
    doc_url: 'https://docs.example.com/errors/#not_found',
  };

  it.each([
    ['a complete error with param null', { error: base }, true],
    [
      'param naming a field',
      {
        error: {
          ...base,
          code: 'validation_failed',
          param: 'amount.total',
          details: [{ field: 'amount.total', constraints: { max: 'too big' } }],
        },
      },
      true,
    ],
    ['param missing (the key is always present)', { error: { ...base, param: undefined } }, false],
    ['code missing', { error: { ...base, code: undefined } }, false],
    ['message missing', { error: { ...base, message: undefined } }, false],
    ['doc_url missing', { error: { ...base, doc_url: undefined } }, false],
    [
      'doc_url not of the form {docs_url}/errors/#<code>',
      { error: { ...base, doc_url: 'https://docs.example.com/not_found' } },
      false,
    ],
    [
      'a details entry without constraints',
      { error: { ...base, code: 'validation_failed', details: [{ field: 'x' }] } },
      false,
    ],
    ['a bare string error', { error: 'not found' }, false],
  ])('%s: valid=%s', (_name, value, valid) => {
    expect(envelope(JSON.parse(JSON.stringify(value)))).toBe(valid);
  });

  it("uses the envelope for every 4xx and 5xx but the token endpoint's", () => {
    for (const [route, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        if (route === '/api/token') continue;
        for (const [status, response] of Object.entries<any>(op.responses)) {
          if (!/^[45]/.test(status)) continue;
          expect(
            resolveRef(doc, response).content['application/json'].schema.$ref,
            `${method} ${route} ${status}`,
          ).toBe('#/components/schemas/ErrorEnvelope');
        }
      }
    }
  });
});

describe('POST /api/checkout-sessions body (Endpoints: field rules)', () => {
  const create = schemaAt('/components/schemas/CheckoutSessionCreateRequest');
  const valid = {
    type: 'single',
    amount: { total: 25, currency: 'NZD' },
    creditorReference: { reference: 'INV-1' },
    redirectUrl: 'https://shop.example.com/done',
    checkoutMethod: 'both',
  };
  const withPatch = (patch: (b: any) => void) => {
    const body = structuredClone(valid) as any;
    patch(body);
    return body;
  };

  it('requires type, amount, amount.total, creditorReference, reference, redirectUrl and checkoutMethod', () => {
    expect(create(valid)).toBe(true);
    for (const drop of ['type', 'amount', 'creditorReference', 'redirectUrl', 'checkoutMethod']) {
      expect(create(withPatch((b) => delete b[drop])), drop).toBe(false);
    }
    expect(create(withPatch((b) => delete b.amount.total))).toBe(false);
    expect(create(withPatch((b) => delete b.creditorReference.reference))).toBe(false);
    expect(create(withPatch((b) => delete b.amount.currency))).toBe(true);
  });

  it.each([
    ['single', true],
    ['recurring', false],
  ])('type %j: valid=%s', (type, ok) => expect(create(withPatch((b) => (b.type = type)))).toBe(ok));

  it.each([
    [0, false],
    [-1, false],
    [0.01, true],
    [19.99, true],
    [0.07, true],
    [4.35, true],
    [10000, true],
    [10000.01, false],
    [1.005, false],
    ['25.00', false],
    [null, false],
  ])('amount.total %j: valid=%s', (total, ok) => expect(create(withPatch((b) => (b.amount.total = total)))).toBe(ok));

  it.each([
    ['NZD', true],
    ['AUD', true],
    ['USD', false],
    ['nzd', false],
  ])('amount.currency %j: valid=%s', (currency, ok) =>
    expect(create(withPatch((b) => (b.amount.currency = currency)))).toBe(ok),
  );

  const referenceChars = [
    ...'0123456789',
    ...'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
    ...'abcdefghijklmnopqrstuvwxyz',
    ...` '.,@_-`,
  ];
  it.each([
    ['', false],
    ['A', true],
    ['A'.repeat(12), true],
    ['A'.repeat(13), false],
    ...referenceChars.map((c) => [`REF${c}`, true] as [string, boolean]),
    ...['#', '/', '!', 'é', '+', '\n'].map((c) => [`REF${c}`, false] as [string, boolean]),
  ])('creditorReference.reference %j: valid=%s', (reference, ok) =>
    expect(create(withPatch((b) => (b.creditorReference.reference = reference)))).toBe(ok),
  );

  for (const field of ['particulars', 'code'] as const) {
    it.each([
      ['A'.repeat(12), true],
      ['A'.repeat(13), false],
      ['Order 1-a', true],
      ['Order_1', false],
      ['O.1', false],
      ['Ref@1', false],
    ])(`creditorReference.${field} %j: valid=%s`, (value, ok) =>
      expect(create(withPatch((b) => (b.creditorReference[field] = value)))).toBe(ok),
    );
  }

  it.each([
    ['https://shop.example.com/done?order=1', true],
    ['http://localhost:3000/done', true],
    ['/relative/path', false],
    ['shop.example.com/done', false],
    ['not a url', false],
  ])('redirectUrl %j: valid=%s', (url, ok) => expect(create(withPatch((b) => (b.redirectUrl = url)))).toBe(ok));

  it.each([
    ['open_banking', true],
    ['card', true],
    ['both', true],
    ['cash', false],
  ])('checkoutMethod %j: valid=%s', (method, ok) =>
    expect(create(withPatch((b) => (b.checkoutMethod = method)))).toBe(ok),
  );

  it.each([
    ['https://shop.example.com/webhooks', true],
    ['http://shop.example.com/webhooks', false],
    ['ftp://shop.example.com/webhooks', false],
    ['http://127.0.0.1:8080/hooks', true],
    ['http://localhost:8080/hooks', true],
    ['http://[::1]:8080/hooks', true],
    ['http://127.0.0.1.example.com/hooks', false],
  ])('webhookUrl %j: valid=%s (HTTPS; loopback http is the marked test-mode assumption)', (url, ok) =>
    expect(create(withPatch((b) => (b.webhookUrl = url)))).toBe(ok),
  );

  it('marks the loopback relaxation of webhookUrl as an assumption', () => {
    expect(schemas.WebhookUrl['x-assumption']).toBe(true);
  });

  it.each([
    ['x'.repeat(255), true],
    ['x'.repeat(256), false],
  ])('description of length %#: valid=%s', (text, ok) =>
    expect(create(withPatch((b) => (b.description = text)))).toBe(ok),
  );

  it('takes foreignTransactionId as a string', () => {
    expect(create(withPatch((b) => (b.foreignTransactionId = 'order-1')))).toBe(true);
    expect(create(withPatch((b) => (b.foreignTransactionId = 7)))).toBe(false);
  });

  it('documents the optional Idempotency-Key header on every create', () => {
    for (const route of ['/api/checkout-sessions', '/api/payment-links', '/api/transaction']) {
      const params = operation('post', route).parameters.map((p: any) => resolveRef(doc, p));
      const key = params.find((p: any) => p.name === 'Idempotency-Key');
      expect(key, route).toMatchObject({ in: 'header', required: false });
    }
    expect(resolveRef(doc, operation('post', '/api/checkout-sessions').parameters[0]).description).toMatch(/24 hours/);
  });
});

/** Where a string value in `node` may be any length: neither a maxLength nor a fixed set. */
function unboundedStrings(node: Json, at: string): string[] {
  const s = resolveRef(doc, node) ?? {};
  if (s.enum !== undefined || 'const' in s || s.maxLength !== undefined) return [];
  if (
    (s.allOf ?? []).some((part: Json) => unboundedStrings(part, at).length === 0 && !resolveRef(doc, part).properties)
  )
    return [];
  return [
    ...([s.type].flat().includes('string') ? [at] : []),
    ...[...(s.anyOf ?? []), ...(s.oneOf ?? [])].flatMap((part: Json) => unboundedStrings(part, at)),
    ...Object.entries<Json>(s.properties ?? {}).flatMap(([name, value]) =>
      unboundedStrings(value, at ? `${at}.${name}` : name),
    ),
  ];
}

describe('merchant string limits (modelled where the document sets none: x-assumption)', () => {
  it('bounds the length of every string a merchant sends, in a body or a header', () => {
    const unbounded: string[] = [];
    for (const [route, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        for (const [type, media] of Object.entries<any>(op.requestBody?.content ?? {}))
          unbounded.push(...unboundedStrings(media.schema, '').map((f) => `${method} ${route} ${type} ${f}`));
        // Path ids are never kept (an unknown one answers 404, as the document says), and
        // Node caps the request line with the headers at 16 KiB.
        for (const parameter of (op.parameters ?? []).map((p: Json) => resolveRef(doc, p)))
          if (parameter.in !== 'path')
            unbounded.push(...unboundedStrings(parameter.schema, parameter.name).map((f) => `${method} ${route} ${f}`));
      }
    }
    expect(unbounded).toEqual([]);
  });

  it.each(['ForeignTransactionId', 'RedirectUrl', 'WebhookUrl', 'TokenRequest'])(
    '%s says why its limit is modelled',
    (name) => {
      expect(schemas[name]['x-assumption']).toBe(true);
      expect(schemas[name].description).toMatch(/\*\*Assumption:\*\*[\s\S]*(255|2048)\s+characters/);
    },
  );

  const url = (length: number) => `https://shop.example.com/${'a'.repeat(length - 'https://shop.example.com/'.length)}`;
  it.each([
    ['ForeignTransactionId', 'f'.repeat(255), true],
    ['ForeignTransactionId', 'f'.repeat(256), false],
    ['RedirectUrl', url(2048), true],
    ['RedirectUrl', url(2049), false],
    ['WebhookUrl', url(2048), true],
    ['WebhookUrl', url(2049), false],
  ])('%s of %#: valid=%s', (name, value, ok) => {
    expect(schemaAt(`/components/schemas/${name}`)(value)).toBe(ok);
  });

  it.each([
    ['k'.repeat(255), true],
    ['k'.repeat(256), false],
  ])('Idempotency-Key of length %#: valid=%s', (key, ok) => {
    const parameter = resolveRef(doc, operation('post', '/api/checkout-sessions').parameters[0]);
    expect(parameter.schema['x-assumption']).toBe(true);
    expect(schemaAt('/components/parameters/IdempotencyKey/schema')(key)).toBe(ok);
  });

  it.each([
    ['clientId', 255, true],
    ['clientId', 256, false],
    ['clientSecret', 255, true],
    ['clientSecret', 256, false],
  ])('token request %s of %i characters: valid=%s', (field, length, ok) => {
    const pair = { clientId: 'ck_test_1', clientSecret: 'sk_1', [field]: 'x'.repeat(length) };
    expect(schemaAt('/components/schemas/TokenRequest')(pair)).toBe(ok);
  });
});

describe('checkout session responses (Resources)', () => {
  it('create response has the documented fields, all required', () => {
    const created = schemas.CheckoutSessionCreated;
    const fields = ['id', 'status', 'url', 'code', 'amount', 'checkoutMethod', 'reference', 'testMode', 'expiresAt'];
    expect(created.required.sort()).toEqual([...fields].sort());
  });

  it('read response has the documented fields, all required', () => {
    const read = schemas.CheckoutSession;
    const fields = [
      'id',
      'status',
      'code',
      'amount',
      'checkoutMethod',
      'reference',
      'particulars',
      'transactionType',
      'testMode',
      'foreignTransactionId',
      'expiresAt',
      'createdAt',
      'updatedAt',
    ];
    expect(read.required.sort()).toEqual([...fields].sort());
  });

  it('explains the transactionType rule in words', () => {
    expect(schemas.TransactionType.enum).toEqual(['open_banking', 'card']);
    expect(schemas.TransactionType.description).toMatch(/only when `status` is `completed`/);
    expect(schemas.TransactionType.description).toMatch(/reads `open_banking` whatever `checkoutMethod` is/);
  });

  it('keeps session status open and lists the documented ones', () => {
    const status = schemaAt('/components/schemas/CheckoutSessionStatus');
    for (const s of ['created', 'pending', 'completed', 'failed', 'expired', 'refunded_later_addition'])
      expect(status(s)).toBe(true);
    expect(schemas.CheckoutSessionStatus.anyOf[0].enum).toEqual([
      'created',
      'pending',
      'completed',
      'failed',
      'expired',
    ]);
  });

  it.each([
    ['cs_abc', true],
    ['ch_abc', false],
  ])('session id %j: valid=%s (prefix cs_)', (id, ok) =>
    expect(schemaAt('/components/schemas/CheckoutSessionId')(id)).toBe(ok),
  );

  it.each([
    ['2026-01-01T00:00:00Z', true],
    ['2026-01-01T00:00:00.123Z', true],
    ['2026-01-01T12:00:00+12:00', false],
    ['2026-01-01', false],
  ])('timestamp %j: valid=%s (ISO 8601 UTC)', (ts, ok) =>
    expect(schemaAt('/components/schemas/Timestamp')(ts)).toBe(ok),
  );
});

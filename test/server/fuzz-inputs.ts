/**
 * What the fuzz tests of the server send (test/server/fuzz.test.ts): fast-check generators of
 * request bodies (valid ones, and mutations of them from the description's boundaries and
 * wrong types), Authorization kinds with the 401 code each gets, extra headers and
 * Idempotency-Keys, and random requests (methods, paths, queries). Pure: no server, no state.
 */
import fc from 'fast-check';

const isObject = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Printable ASCII: what an HTTP header value can carry through fetch unchanged (bar trimming). */
export const printable = (maxLength: number, minLength = 0) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength, maxLength });

export const longString = fc
  .integer({ min: 256, max: 6000 })
  .chain((n) => fc.constantFrom('x', 'é', '😀', ' ', '0').map((c) => c.repeat(n)));

/** Values of the wrong type or shape for any field. */
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -0,
    1,
    -1,
    '',
    ' ',
    'NaN',
    'Infinity',
    '-0',
    '1e308',
    'null',
    'true',
    [],
    {},
    [null],
    { total: 1 },
  ),
  fc.integer(),
  fc.double(), // NaN and ±Infinity are sent as null by JSON
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  longString,
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);

const cents = (min: number, max: number) => fc.integer({ min, max }).map((n) => n / 100);

const amountTotals = fc.oneof(
  fc.constantFrom(
    0,
    0.01,
    0.001,
    0.1 + 0.2,
    1.005,
    1.15,
    19.99,
    25,
    100.1,
    9999.99,
    10000,
    10000.01,
    10001,
    1e308,
    -0,
    -0.01,
    -1,
    5e-324,
    1e-7,
    Number.MAX_SAFE_INTEGER,
    0.07,
  ),
  cents(-100, 1_000_100),
  fc.double({ min: -20000, max: 20000, noNaN: true }),
  fc.constantFrom('25.50', '19.99', '0x10', '1e2'),
);

const URL_CASES = [
  'https://shop.example.com/done',
  'https://shop.example.com/done?order=1&x=y#frag',
  'http://shop.example.com/done',
  'https://例え.jp/パス',
  'https://[::1]:8443/x',
  'https://',
  '/relative/path',
  'shop.example.com/done',
  'not a url',
  'javascript:alert(1)',
  'mailto:someone@example.com',
  'https://exa mple.com/',
  'http://127.0.0.1:9/hook',
  'http://localhost:3000/hook',
  'http://[::1]/hook',
  'http://10.0.0.1/hook',
  'https://10.0.0.1/hook',
  'https://169.254.169.254/latest/meta-data',
  'https://192.168.1.1/hook',
  'ftp://example.com/hook',
  'https://example.com:99999/',
];
const urls = fc.oneof(fc.constantFrom(...URL_CASES), fc.webUrl({ withQueryParameters: true, withFragments: true }));

const fieldValues: Record<string, fc.Arbitrary<unknown>> = {
  type: fc.constantFrom('single', 'SINGLE', 'multiple', 'recurring', ''),
  amount: fc.oneof(
    fc.record({ total: amountTotals }),
    fc.record({ total: amountTotals, currency: fc.constantFrom('NZD', 'AUD') }),
  ),
  'amount.total': amountTotals,
  'amount.currency': fc.constantFrom('NZD', 'AUD', 'nzd', 'USD', 'EUR', '', 'NZD '),
  creditorReference: fc.record({ reference: fc.stringMatching(/^[0-9A-Za-z '.,@_-]{0,14}$/) }),
  'creditorReference.reference': fc.oneof(
    fc.stringMatching(/^[0-9A-Za-z '.,@_-]{0,14}$/),
    fc.constantFrom('A'.repeat(12), 'A'.repeat(13), 'Ünïcödé', 'INV/1001', 'INV#1', '💳', "O'Brien, J.", 'a@b_c-d.e f'),
  ),
  'creditorReference.particulars': fc.oneof(
    fc.stringMatching(/^[a-zA-Z0-9- ]{0,14}$/),
    fc.constantFrom('', 'x'.repeat(12), 'x'.repeat(13), 'Order #1', 'naïve'),
  ),
  'creditorReference.code': fc.oneof(
    fc.stringMatching(/^[a-zA-Z0-9- ]{0,14}$/),
    fc.constantFrom('', 'SHOP', 'x'.repeat(13), 'a_b', 'ÅÄÖ'),
  ),
  redirectUrl: urls,
  checkoutMethod: fc.constantFrom('open_banking', 'card', 'both', 'CARD', 'Both', 'bank', 'open-banking', ''),
  webhookUrl: urls,
  foreignTransactionId: fc.oneof(
    fc.string({ maxLength: 64 }),
    fc.string({ unit: 'binary', maxLength: 64 }),
    longString,
    fc.uuid(),
  ),
  description: fc.oneof(
    fc.string({ maxLength: 300 }),
    fc.constantFrom('x'.repeat(255), 'x'.repeat(256), '😀'.repeat(255), '😀'.repeat(256), ''),
  ),
};
const FIELD_PATHS = Object.keys(fieldValues);

export type Mutation = { path: string[]; value: unknown } | { path: string[]; remove: true };

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.oneof(
      ...FIELD_PATHS.map((p) =>
        fc.record({
          path: fc.constant(p.split('.')),
          value: fc.oneof({ weight: 3, arbitrary: fieldValues[p]! }, anyValue),
        }),
      ),
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(...FIELD_PATHS).map((p): Mutation => ({ path: p.split('.'), remove: true })),
  },
  {
    weight: 1,
    // Extra fields, at the top or inside an object (the description ignores unknown fields).
    arbitrary: fc.record({
      path: fc
        .tuple(
          fc.constantFrom<string[]>([], ['amount'], ['creditorReference']),
          fc.oneof(
            fc.string({ maxLength: 12 }),
            fc.constantFrom('__proto__', 'constructor', 'toString', 'id', 'status'),
          ),
        )
        .map(([at, key]) => [...at, key]),
      value: fc.oneof(anyValue, fc.jsonValue({ maxDepth: 4 })),
    }),
  },
);

/** A valid request body, varied: every optional field may be present. */
export const validBody = fc.record(
  {
    type: fc.constant('single'),
    amount: fc.record(
      {
        total: fc.oneof(cents(1, 1_000_000), fc.constantFrom(0.01, 19.99, 10000, 9999.99, 1.15)),
        currency: fc.constant('NZD'),
      },
      { requiredKeys: ['total'] },
    ),
    creditorReference: fc.record(
      {
        reference: fc.stringMatching(/^[0-9A-Za-z '.,@_-]{1,12}$/),
        particulars: fc.stringMatching(/^[a-zA-Z0-9- ]{0,12}$/),
        code: fc.stringMatching(/^[a-zA-Z0-9- ]{0,12}$/),
      },
      { requiredKeys: ['reference'] },
    ),
    redirectUrl: fc.oneof(
      fc.constant('https://shop.example.com/done?order=1001'),
      fc.webUrl({ withQueryParameters: true }),
    ),
    checkoutMethod: fc.constantFrom('open_banking', 'card', 'both'),
    webhookUrl: fc.constantFrom('https://shop.example.com/webhooks', 'https://hooks.example.org:8443/p?x=1'),
    foreignTransactionId: fc.oneof(fc.uuid(), fc.string({ maxLength: 30 })),
    description: fc.string({ maxLength: 255 }),
  },
  { requiredKeys: ['type', 'amount', 'creditorReference', 'redirectUrl', 'checkoutMethod'] },
);

export function applyMutations(base: unknown, mutations: Mutation[]): unknown {
  const body = structuredClone(base) as Record<string, unknown>;
  for (const m of mutations) {
    let at: unknown = body;
    for (const key of m.path.slice(0, -1)) at = isObject(at) ? at[key] : undefined;
    if (!isObject(at)) continue; // an earlier mutation replaced the parent
    const last = m.path[m.path.length - 1]!;
    if ('remove' in m) delete at[last];
    else Object.defineProperty(at, last, { value: m.value, enumerable: true, writable: true, configurable: true });
  }
  return body;
}

/** How a request authenticates: a valid token in some spelling, or something that must be refused. */
type AuthKind =
  | 'test'
  | 'test-lowercase-scheme'
  | 'test-extra-spaces'
  | 'live'
  | 'other'
  | 'none'
  | 'empty'
  | 'scheme-only'
  | 'basic'
  | 'no-scheme'
  | 'double-prefix'
  | 'truncated'
  | 'mangled'
  | 'garbage'
  | 'sandbox';
export type Auth = { kind: AuthKind; garbage?: string };
export const VALID_AUTH = new Set<AuthKind>(['test', 'test-lowercase-scheme', 'test-extra-spaces', 'live', 'other']);
/** The 401 code each refused kind gets (the document's Errors table). */
export const AUTH_CODE: Partial<Record<AuthKind, string[]>> = {
  none: ['unauthorized'],
  empty: ['unauthorized'],
  'scheme-only': ['unauthorized'],
  basic: ['unauthorized'],
  'no-scheme': ['unauthorized'],
  'double-prefix': ['invalid_token'],
  truncated: ['invalid_token'],
  mangled: ['invalid_token'],
  garbage: ['unauthorized', 'invalid_token'],
};

export const auth = (validWeight: number): fc.Arbitrary<Auth> =>
  fc.oneof(
    { weight: validWeight * 8, arbitrary: fc.constant<Auth>({ kind: 'test' }) },
    {
      weight: validWeight,
      arbitrary: fc.constantFrom<Auth>(
        { kind: 'test-lowercase-scheme' },
        { kind: 'test-extra-spaces' },
        { kind: 'live' },
      ),
    },
    {
      weight: 2,
      arbitrary: fc.constantFrom<Auth>(
        { kind: 'none' },
        { kind: 'empty' },
        { kind: 'scheme-only' },
        { kind: 'basic' },
        { kind: 'no-scheme' },
        { kind: 'double-prefix' },
        { kind: 'truncated' },
        { kind: 'mangled' },
      ),
    },
    { weight: 1, arbitrary: printable(300, 1).map((garbage): Auth => ({ kind: 'garbage', garbage })) },
  );

/** Headers a client might add, with arbitrary values. */
export const extraHeaders = fc.dictionary(
  fc.oneof(
    fc.constantFrom(
      'x-request-id',
      'accept',
      'accept-language',
      'x-forwarded-for',
      'cookie',
      'origin',
      'user-agent',
      'if-none-match',
    ),
    fc.stringMatching(/^x-[a-z0-9-]{1,20}$/),
  ),
  printable(200),
  { maxKeys: 3 },
);

export const idempotencyKey = fc.option(
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('key-A', 'key-B', 'key-C') }, // reused across requests: replays and idempotency_error
    { weight: 3, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: printable(200) },
    { weight: 1, arbitrary: fc.integer({ min: 1000, max: 8000 }).map((n) => 'k'.repeat(n)) }, // huge
    { weight: 1, arbitrary: fc.constantFrom('', ' ', '  padded  ', '\t') },
  ),
  { nil: undefined, freq: 2 },
);

// Random requests: a method, a path made of a known prefix and segments, a query.
// Methods Node's HTTP parser knows (others are refused by Node itself before the app).
export const anyMethod = fc.constantFrom(
  'GET',
  'GET',
  'POST',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'HEAD',
  'PROPFIND',
  'MKCOL',
  'COPY',
  'MOVE',
  'LOCK',
  'PURGE',
  'SEARCH',
  'REPORT',
  'LINK',
);
export const pathSegment = fc
  .oneof(
    fc.string({ minLength: 1, maxLength: 20 }),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
    fc.constantFrom('api', 'checkout-sessions', 'token', 'cs_x', 'errors', 'organisations', 'clock', 'index.html', '%'),
  )
  .filter((s) => s !== '.' && s !== '..')
  .map(encodeURIComponent);
// Escapes as a client may get them wrong, sent as they are (the router must not throw on them).
export const rawPathSegment = fc.constantFrom('%', '%zz', '%E0%A4%A', '%C3%28', 'a%2', '%%');
export const pathPrefix = fc.constantFrom(
  '',
  '/api',
  '/api/checkout-sessions',
  '/api/token',
  '/api/payment-links',
  '/api/transaction',
  '/sandbox',
  '/sandbox/organisations',
  '/sandbox/faults',
  '/sandbox/webhook-deliveries',
  '/healthz',
  '/docs',
  '/docs/errors',
  '/pay',
  '/API/CHECKOUT-SESSIONS',
);
export const pathQuery = fc.option(
  fc
    .array(fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 12 })), { minLength: 1, maxLength: 3 })
    .map((pairs) => `?${new URLSearchParams(pairs).toString()}`),
  { nil: '', freq: 4 },
);

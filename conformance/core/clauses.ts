/**
 * The clause register: every normative statement of the service document under a stable
 * id. The same id is an anchor in SERVICE.md, placed right before the statement's words,
 * so a clause can be read where it stands. Checks cite clause ids; a check's level is
 * the strength of what it cites. Table rows keep the document's cells joined by " | ".
 *
 * `subject` says whose duty the clause is: the service (checked by `run`), a merchant's
 * receiver (checked by `receiver`) or an API client (checked by `client`, through its
 * driver). A clause the suite cannot judge from outside carries the reason.
 */
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
}

/** Bumped whenever a clause is added, removed or reworded. */
export const CLAUSE_REGISTER_VERSION = '4';

type Row = [id: string, words: string, strength?: Strength, subject?: Subject, notCheckable?: string];

function group(section: string, rows: Row[]): Clause[] {
  return rows.map(([id, words, strength = 'must', subject = 'service', notCheckable]) => ({
    id,
    section,
    words,
    strength,
    subject,
    ...(notCheckable ? { notCheckable } : {}),
  }));
}

export const CLAUSES: readonly Clause[] = [
  ...group('What the service does', [
    ['svc.rails', '`open_banking` (bank transfer, New Zealand dollars only) or `card`'],
    [
      'svc.read',
      'Read the payment back through an authenticated GET. This is the authoritative way to decide fulfilment. It returns where the payment stands now.',
    ],
    ['svc.hook', 'Receive a signed server-to-server webhook when a payment completes.'],
    ['svc.prompt', 'The webhook is a prompt to read, not the final answer.'],
    ['svc.uuid', 'Each payment is tied to a transaction identified by a UUID.'],
  ]),
  ...group('General conventions', [
    ['conv.host', 'Base URL | `{base_url}` (same host for test and live)'],
    ['conv.mode', 'Test vs live | Determined by the API key, not by the URL'],
    [
      'conv.request-body',
      'Request body | `application/json`, except `POST /api/token`, which is `application/x-www-form-urlencoded`',
    ],
    ['conv.response-body', 'Response body | `application/json`'],
    ['conv.success', 'Success status | 200 on every endpoint, creates included'],
    ['conv.timestamps', 'Timestamps | ISO 8601, UTC'],
    ['conv.amounts', 'Amounts | Major units as a JSON number (25.00 means twenty-five dollars)'],
    [
      'conv.webhook-address',
      'Webhook address | Set per payment as `webhookUrl` on the session or link; there is no account-wide endpoint',
    ],
    [
      'conv.error-body',
      'Error body | Always `{ error: { code, message, param, doc_url } }` except `POST /api/token` (see Errors)',
    ],
  ]),
  ...group('Resources: access token response', [
    ['res.token.access', 'accessToken | string | Bearer token'],
    ['res.token.type', 'tokenType | string | `Bearer`'],
    ['res.token.expires', 'expiresIn | string | Duration text saying how long the token lasts.'],
    [
      'res.token.reuse',
      'Clients should reuse a token until it expires and treat a `token_expired` error as the signal to fetch a new one.',
      'should',
      'client',
    ],
  ]),
  ...group('Resources: checkout session (create response)', [
    ['res.create.id', 'id | string | Session id, prefix `cs_`'],
    ['res.create.status', 'status | string | `created` on creation'],
    ['res.create.url', 'url | string | Hosted payment page address to send the payer to'],
    ['res.create.code', 'code | string | The creditor reference code (given, or generated if omitted)'],
    ['res.create.amount', 'amount | object | `total` (number), `currency` (string, `NZD` or `AUD`)'],
    ['res.create.method', 'checkoutMethod | string | `open_banking`, `card` or `both`'],
    ['res.create.reference', 'reference | string | The creditor reference'],
    ['res.create.test-mode', 'testMode | boolean | True when created with a test API key'],
    ['res.create.expires', 'expiresAt | string | ISO 8601 UTC timestamp; a session expires 24 hours after creation'],
  ]),
  ...group('Resources: checkout session (read response)', [
    ['res.read.id', 'id | string | `cs_` id'],
    ['res.read.status', 'status | string | See States and transitions'],
    ['res.read.code', 'code | string | Creditor reference code'],
    ['res.read.amount', 'amount | object | `total`, `currency`'],
    ['res.read.method', 'checkoutMethod | string | `open_banking`, `card` or `both`'],
    ['res.read.reference', 'reference | string | Creditor reference'],
    ['res.read.particulars', 'particulars | string | Creditor particulars'],
    [
      'res.read.transaction-type',
      'transactionType | string | Rail the money moved on: `open_banking` or `card`. Meaningful only when status is `completed`. Before that it reads `open_banking` whatever checkoutMethod is. For a `both` session it is the only way to know what the payer chose.',
    ],
    ['res.read.test-mode', 'testMode | boolean | '],
    ['res.read.foreign-id', "foreignTransactionId | string | The merchant's own identifier given at creation"],
    ['res.read.expires', 'expiresAt | string | ISO 8601 UTC'],
    ['res.read.created', 'createdAt | string | ISO 8601 UTC'],
    ['res.read.updated', 'updatedAt | string | ISO 8601 UTC'],
  ]),
  ...group('Resources: transaction and payment link', [
    ['res.transaction', 'Every payment has a transaction identified by a UUID (`transactionId`).'],
    ['res.link-id', "For a payment link, the link's id is its transaction id."],
    ['res.link-no-session', 'A payment link has no checkout session.'],
    ['res.link', 'has an id equal to its transaction id, accepts a `webhookUrl`, and can be read back.'],
  ]),
  ...group('States and transitions', [
    ['state.created', 'created | Session exists; nobody has paid yet'],
    ['state.pending', 'pending | A payment is in flight: awaiting bank approval or a card charge is processing'],
    [
      'state.completed',
      'completed | Paid; funds are on their way to the settlement account; the merchant fulfils the order',
    ],
    [
      'state.failed',
      'failed | An attempt was made and did not succeed; the payer can try again while the session is live',
    ],
    ['state.expired', 'expired | 24 hours passed without payment; a new session must be created'],
    [
      'state.open',
      'The status list is open. A client that meets an unrecognised status must not fulfil, and must not error.',
      'must',
      'client',
    ],
    [
      'state.declined',
      'A declined attempt is not final: the session stays live and the payer may retry, so `status` reports the last attempt.',
    ],
    [
      'state.expiry-silent',
      'A session that expires unpaid sends no webhook; expiry is observed only by reading the status.',
    ],
    [
      'state.completed-webhook',
      'Reaching `completed` triggers the `checkout_session.completed` webhook when a `webhookUrl` was set (and the payment was created through the session or link endpoints).',
    ],
  ]),
  ...group('Endpoints', [
    ['ep.bearer', 'All endpoints except `POST /api/token` need `Authorization: Bearer <ACCESS_TOKEN>`.'],
  ]),
  ...group('Endpoints: POST /api/token', [
    ['token.form', 'Body is form-encoded.'],
    ['token.client-id', 'clientId | string | yes | Client ID of an API key'],
    ['token.client-secret', 'clientSecret | string | yes | Matching client secret; server-side only'],
    ['token.ok', 'Response 200: access token response (see Resources).'],
    ['token.plain-error', 'Failures (the `error` value is a plain string here):'],
    [
      'token.400',
      '400 | Invalid credentials - missing or malformed clientId/clientSecret | A field is missing, or the body was sent as JSON',
    ],
    ['token.401', '401 | Invalid credentials | The pair matches no key.'],
    ['token.identical', 'An unknown client id and a wrong secret get the identical answer.'],
    [
      'token.500',
      '500 | `internal_error` | Server failure; retry with backoff',
      'must',
      'service',
      'needs a failure of the service itself; the adapter’s injectFault reaches the create endpoint only (see IDEM-007)',
    ],
  ]),
  ...group('Endpoints: POST /api/checkout-sessions', [
    ['create.one', 'Creates one payment by one customer. JSON body.'],
    [
      'create.idempotency-key',
      'Idempotency-Key | header | string | no | Makes the request safe to retry for 24 hours; strongly recommended',
    ],
    ['create.type', 'type | body | string | yes | Always `single`'],
    ['create.amount', 'amount | body | object | yes |'],
    ['create.total', 'amount.total | body | number | yes | Greater than 0, at most 2 decimal places, maximum 10000'],
    [
      'create.currency',
      "amount.currency | body | string | no | `NZD` or `AUD`; must equal the organisation's settlement currency; filled in when omitted",
    ],
    [
      'create.creditor-reference',
      'creditorReference | body | object | yes | What the payer sees on the bank statement',
    ],
    ['create.reference', "creditorReference.reference | body | string | yes | 1 to 12 chars from `[0-9A-Za-z '.,@_-]`"],
    ['create.particulars', 'creditorReference.particulars | body | string | no | Max 12 chars from `[a-zA-Z0-9- ]`'],
    [
      'create.code',
      'creditorReference.code | body | string | no | Max 12 chars from `[a-zA-Z0-9- ]`; generated if omitted and returned as `code`',
    ],
    ['create.redirect-url', 'redirectUrl | body | string | yes | Valid absolute URL; payer is sent here on success'],
    [
      'create.checkout-method',
      'checkoutMethod | body | string | yes | `open_banking`, `card` or `both`; checked against the organisation at creation',
    ],
    [
      'create.webhook-url',
      'webhookUrl | body | string | no | HTTPS, publicly reachable; cannot be added after creation; when omitted, nobody is notified',
    ],
    [
      'create.foreign-id',
      "foreignTransactionId | body | string | no | Merchant's own id; echoed on reads and in the webhook",
    ],
    [
      'create.description',
      "description | body | string | no | Max 255 chars; shown against the transaction in the portal, for the merchant's team",
    ],
    ['create.ok', 'Response 200: checkout session (create response).'],
    [
      'redirect.params',
      "on success the payer's browser is sent to `redirectUrl` with `transactionId=<uuid>` and `checkoutSessionId=<cs_id>` appended as query parameters, preserving the merchant's own query parameters.",
    ],
    [
      'redirect.not-proof',
      'An id in a URL is not proof of payment; the merchant must read the session back.',
      'must',
      'client',
    ],
    [
      'idem.replay',
      'The same key with an identical body within 24 hours either completes the original request or replays its result.',
    ],
    ['idem.conflict', 'The same key with a different body returns `idempotency_error`.'],
    [
      'idem.no-key',
      'Without a key, a 500 is ambiguous: the session may or may not exist and a retry may create a second payment.',
      'must',
      'client',
    ],
    ['order.validation', '400 | validation_failed | Field missing, wrong type or out of range'],
    [
      'order.currency-mismatch',
      '400 | currency_mismatch | `amount.currency` differs from settlement currency; no conversion or repricing',
    ],
    ['order.card', '400 | card_not_enabled | `card` or `both` requested and card payments not configured'],
    [
      'order.open-banking',
      '400 | open_banking_not_enabled | `open_banking` or `both` requested and the open-banking application is not approved',
    ],
    [
      'order.settlement',
      '400 | settlement_account_missing | A bank rail was requested and the organisation has no settlement account',
    ],
    ['order.aud', '400 | open_banking_currency_unsupported | Organisation settles in AUD; the bank rail is NZD only.'],
    ['order.aud-first', 'Checked before `open_banking_not_enabled` and `settlement_account_missing`.'],
    ['order.idempotency', '400 | idempotency_error | Key reused with a different body'],
    ['order.401', '401 | unauthorized, token_expired, invalid_token, unknown_api_key | See Errors'],
    ['order.500', '500 | internal_error | Server failure; retry with backoff and the same Idempotency-Key'],
  ]),
  ...group('Endpoints: GET /api/checkout-sessions/{id}', [
    ['read.id', 'id | path | string | yes | The `cs_` id'],
    ['read.ok', 'Response 200: checkout session (read response). No request body.'],
    [
      'read.confirm',
      'This is the supported way to confirm payment server-side, and the fallback when a webhook was missed.',
    ],
    ['read.isolation', 'A session of another organisation returns 404 `not_found`, never 403.'],
    [
      'read.errors',
      'Errors: 401 (`unauthorized`, `token_expired`, `invalid_token`, `unknown_api_key`), 404 `not_found`, 500 `internal_error`.',
    ],
  ]),
  ...group('Endpoints: payment links and legacy transactions', [
    [
      'link.endpoints',
      '`GET /api/payment-links/{id}` reads a payment link back (the link id is its transaction id), and `POST /api/payment-links` creates one and accepts `webhookUrl`.',
    ],
    [
      'legacy.webhook',
      'Transactions created through it (or from a payment square or the portal) receive the legacy two-field webhook body (see Events).',
    ],
    [
      'legacy.retired',
      '`GET /api/transaction/{id}` is not part of the API for checkout sessions and returns 404 `not_found` for them.',
    ],
    [
      'legacy.link',
      'For a payment link it answers while the link is payable and returns 404 once it settles; clients must not rely on it.',
    ],
    ['receiver.post', "The service sends `POST` with `application/json` to the merchant's `webhookUrl`."],
  ]),
  ...group('Authentication', [
    ['auth.pair', 'Credentials are an API key pair: `clientId` and `clientSecret`.'],
    [
      'auth.secret',
      'The secret is server-side only; anyone holding it can create payments that settle to the account.',
      'must',
      'client',
      'a rule for the merchant keeping the secret',
    ],
    ['auth.exchange', '`POST /api/token` exchanges the pair for a bearer token.'],
    ['auth.bearer', 'Every other endpoint requires `Authorization: Bearer <ACCESS_TOKEN>`.'],
    ['auth.lifetime', 'Token lifetime is five minutes.'],
    ['auth.reuse', 'Clients reuse a token until it expires.', 'should', 'client'],
    [
      'auth.expired',
      'An expired token gives 401 `token_expired`; the client fetches a new token and repeats the request once.',
    ],
    [
      'auth.removed',
      'A token for an API key that has since been removed gives 401 `unknown_api_key`; a new token does not help.',
    ],
    ['auth.mode', 'Test or live mode is decided by the API key used.'],
    ['auth.isolation', 'Resource isolation: a resource of another organisation is answered as 404 `not_found`.'],
  ]),
  ...group('Webhook signing secret', [
    [
      'secret.scope',
      'Scope | One secret per organisation; prefix `whsec_`; signs every delivery to every `webhookUrl`, test and live alike',
    ],
    ['secret.distinct', 'Distinct from | The client secret and bearer tokens; its only use is signing'],
    [
      'secret.visible',
      'Visibility | Shown in full every time the portal page is opened (Webhook Signing section of the API Keys area)',
      'must',
      'service',
      'the portal is outside the API',
    ],
    [
      'secret.rotation',
      'Rotation | Replaces the secret outright with no overlap; from then on every delivery is signed with the new secret, and deliveries already in flight fail verification against the old one',
    ],
  ]),
  ...group('Events: delivery target and kinds', [
    ['target.https', 'It must be HTTPS and reachable from the public internet.'],
    [
      'target.fixed',
      'It cannot be added after creation.',
      'must',
      'service',
      'no operation of the API changes a session or link after creation, so there is nothing to refuse',
    ],
    ['target.none', 'A payment without it notifies nobody.'],
    ['target.test-mode', 'Test-mode payments send webhooks as live ones do, signed with the same secret and scheme.'],
    [
      'target.no-mode',
      'The payload does not say whether it was test; the merchant reads the session or link back and checks `testMode`.',
    ],
    [
      'event.completed',
      'checkout_session.completed | A payment succeeds; the session reached `completed` | The only event that means paid. It is final.',
    ],
    ['event.none', 'No event is sent for failure (a declined attempt leaves the session live) and none for expiry.'],
    ['event.unknown', 'Receivers must ignore unrecognised `event` values and still answer 2xx.', 'must', 'receiver'],
  ]),
  ...group('Events: payload', [
    ['payload.small', 'JSON body, small on purpose: it names the transaction that changed, not its current state.'],
    ['payload.event', 'event | string | Event kind, e.g. `checkout_session.completed`'],
    [
      'payload.created',
      'createdAt | string | ISO 8601 UTC; when the event happened, not when the delivery was attempted, so it is identical on a repeated delivery',
    ],
    [
      'payload.session',
      'checkoutSessionId | string or null | `cs_` id for a payment from a session; null for a payment link',
    ],
    ['payload.transaction', 'transactionId | string | UUID of the transaction; the key to deduplicate on'],
    ['payload.foreign-id', "foreignTransactionId | string or null | The merchant's value from creation, or null"],
    [
      'legacy.payload',
      'Transactions created through `POST /api/transaction`, a payment square or the portal receive a body with only `transactionId` and `foreignTransactionId`, no `event` and no signature.',
    ],
    ['legacy.branch', 'Receivers that handle both branch on whether `event` is present.', 'must', 'receiver'],
  ]),
  ...group('Events: signature', [
    ['sig.header', 'Header name | `Service-Signature` (present on every delivery the service can sign)'],
    ['sig.format', 'Format | `t=<unix_seconds>,v1=<hex_digest>`'],
    [
      'sig.digest',
      'Digest | HMAC-SHA256, hex encoded, over the string `<t>` + `.` + the raw request body bytes, keyed with the signing secret',
    ],
    [
      'sig.unsigned',
      'Unsigned case | When the signing secret cannot be resolved at sending time, the delivery is still sent with no header at all.',
    ],
    ['sig.reject-unsigned', 'Receivers reject deliveries with no signature.', 'must', 'receiver'],
    [
      'sig.versions',
      'Versioning | Further digest versions may appear alongside `v1`; values are read by name, not position',
      'must',
      'receiver',
    ],
    [
      'verify.split',
      'Split the header on commas, each part on its first `=`, and take `t` and `v1` by name; if either is missing, reject.',
      'must',
      'receiver',
    ],
    [
      'verify.raw',
      'Recompute the digest over the exact raw bytes received, before any JSON parsing (re-serialised JSON breaks the digest).',
      'must',
      'receiver',
    ],
    [
      'verify.constant-time',
      'Compare in constant time.',
      'must',
      'receiver',
      'a timing difference of one comparison cannot be measured reliably over a network',
    ],
    ['verify.age', 'Reject when `t` is older than five minutes.', 'must', 'receiver'],
    ['verify.parse-after', 'Only after the check passes, parse the body and act.', 'must', 'receiver'],
  ]),
  ...group('Events: response and retry behaviour', [
    ['retry.success', 'Success | Any 2xx status'],
    ['retry.wait', 'Wait time | The service waits five seconds for an answer'],
    [
      'retry.failure',
      "Failure | Any other status, or no answer in time, is a failed delivery and alerts the service's team",
    ],
    [
      'retry.card',
      "Card rail | Delivered from a queue; up to three attempts in total, then set aside for the service's team",
    ],
    ['retry.open-banking', 'Open banking rail | Delivered inline; one attempt, no retry; a failure is only alerted'],
    ['retry.final', 'Final failures | A 4xx other than 408 or 429 is treated as final'],
    [
      'retry.duplicates',
      'Duplicates | The same event can arrive more than once because a payment can complete through more than one path; receivers deduplicate on `transactionId` with a uniqueness guarantee, and answer 200 on a repeat',
      'must',
      'receiver',
    ],
    [
      'retry.reconcile',
      'Retries run out and one rail has none, so receivers reconcile by reading `GET /api/checkout-sessions/{id}` or `GET /api/payment-links/{id}` for anything unfulfilled.',
      'must',
      'receiver',
      'reconciliation is a merchant’s scheduled job, not an answer to a request the suite can send',
    ],
  ]),
  ...group('Errors: envelope', [
    ['err.code', 'error.code | string | Stable machine code; clients branch on it, never on message'],
    ['err.message', 'error.message | string | Human-readable; wording is not part of the contract'],
    [
      'err.param',
      'error.param | string or null | Name of the offending field (e.g. `amount.total`); key always present; null when no single field is to blame',
    ],
    ['err.doc-url', 'error.doc_url | string | Address of the explanation: `{docs_url}/errors/#<code>`'],
    ['err.details', 'error.details | array | Only on `validation_failed`; one entry per failing field'],
    [
      'err.details-entry',
      'Each `details` entry has `field` (string) and `constraints` (object mapping a constraint name such as `max` or `matches` to a message text).',
    ],
    [
      'err.token',
      'Exception: `POST /api/token` answers 400 and 401 with `{ error: <message string> }`; branch on the status there.',
    ],
  ]),
  ...group('Errors: HTTP statuses', [
    ['status.200', '200 | Success | n/a'],
    ['status.400', '400 | Request or account configuration needs changing | Not without a change'],
    ['status.401', '401 | Authentication failed | Only `token_expired`'],
    ['status.404', "404 | No such resource, or it is not the caller's | No"],
    ['status.500', '500 | Service-side failure | Yes, with exponential backoff'],
  ]),
  ...group('Errors: codes', [
    [
      'code.validation-failed',
      'validation_failed | 400 | Fields missing, wrong type or out of range; `details` lists every problem at once.',
    ],
    ['code.card', 'card_not_enabled | 400 | `card` or `both` requested; card payments not configured'],
    [
      'code.open-banking',
      'open_banking_not_enabled | 400 | `open_banking` or `both` requested; application not approved',
    ],
    [
      'code.settlement',
      'settlement_account_missing | 400 | Bank rail requested; organisation has no settlement account',
    ],
    [
      'code.aud',
      'open_banking_currency_unsupported | 400 | Organisation settles in AUD; bank rail is NZD only; structural, checked before the two codes above',
    ],
    ['code.currency-mismatch', 'currency_mismatch | 400 | `amount.currency` differs from settlement currency'],
    [
      'code.idempotency',
      'idempotency_error | 400 | Idempotency-Key reused with a different body; keys are remembered 24 hours',
    ],
    ['code.unauthorized', 'unauthorized | 401 | No Authorization header, or not of the form `Bearer <token>`'],
    ['code.token-expired', 'token_expired | 401 | Token past its expiry; fetch a new one and retry once'],
    ['code.invalid-token', 'invalid_token | 401 | Token could not be verified (truncated, mangled or double-prefixed)'],
    ['code.unknown-api-key', 'unknown_api_key | 401 | The API key the token was issued for no longer exists'],
    [
      'code.not-found',
      'not_found | 404 | Id does not exist; or belongs to another organisation (404, never 403); or the retired `GET /api/transaction/{id}` path was used for a session',
    ],
    ['code.internal', 'internal_error | 500 | Service-side failure'],
    [
      'code.guidance',
      'Client guidance: the four account-configuration codes (`card_not_enabled`, `open_banking_not_enabled`, `settlement_account_missing`, `open_banking_currency_unsupported`) are fixed in the portal, not by retrying.',
      'must',
      'client',
    ],
    [
      'code.open',
      'Unknown codes may be added later; clients fall back to a generic failure rather than crashing.',
      'must',
      'client',
    ],
  ]),
  ...group('Limits', [
    ['limit.token', 'Access token lifetime | Five minutes'],
    ['limit.total', 'amount.total | Greater than 0, at most 2 decimal places, maximum 10000'],
    ['limit.reference', 'creditorReference.reference | 1 to 12 chars'],
    ['limit.particulars', 'creditorReference.particulars | Max 12 chars'],
    ['limit.code', 'creditorReference.code | Max 12 chars'],
    ['limit.description', 'description | Max 255 chars'],
    ['limit.idempotency', 'Idempotency-Key memory | 24 hours'],
    ['limit.session', 'Checkout session lifetime | 24 hours without payment, then `expired`'],
    ['limit.webhook-wait', 'Webhook response wait | 5 seconds'],
    ['limit.card-attempts', 'Webhook attempts, card rail | Up to 3 in total'],
    ['limit.open-banking-attempts', 'Webhook attempts, open banking rail | 1'],
    ['limit.signature-age', 'Signature age tolerance for receivers | 5 minutes', 'must', 'receiver'],
    ['limit.open-banking-currency', 'Open banking currency | NZD only'],
  ]),
  ...group('Versioning', [
    ['ver.unversioned', 'No version in the path or a version header is used by the endpoints shown'],
    [
      'ver.signature',
      'The signature header scheme is versioned by the `v1` label. A future digest version may be sent next to `v1` during migration.',
    ],
    ['ver.legacy', 'The legacy two-field webhook body is kept unchanged for transactions created the older way.'],
    [
      'ver.open-sets',
      'Open sets: webhook `event` values, session `status` values and error `code` values can gain new members; clients ignore or safely handle unknown ones.',
      'must',
      'client',
    ],
    ['ver.retired', 'The retired `GET /api/transaction/{id}` path is not part of the API for checkout sessions.'],
  ]),
];

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

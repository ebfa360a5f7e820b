/**
 * The driver protocol of `payment-conformance client`: how the suite asks an API client
 * under test, in any language, to do one thing, and what the client says back. A team
 * wraps its client in a driver (a command, or a JavaScript module), and the suite stands
 * in front of a real target as a scripted service, judging what the client sends.
 *
 * A command driver reads one JSON operation per line on standard input and writes one
 * JSON outcome per line on standard output, each with the operation's `id`; the suite
 * sends the next operation once the last one's outcome has come. It is started once per
 * scenario, with the scenario's service and credentials in its environment (DRIVER_ENV),
 * and ends when its standard input closes. A module driver's default export is a factory
 * of the same: `(env) => { handle(operation), close?() }`, run in a worker thread of its
 * own. docs/driver-protocol.md is the reference.
 */

/** The environment a driver starts with (a command's variables; a module factory's argument). */
export interface DriverEnv {
  /** Where the client must send its requests: the suite's scripted service, in front of the target. */
  PAYMENT_BASE_URL: string;
  /** A test-mode API key of an organisation made for the scenario. */
  PAYMENT_CLIENT_ID: string;
  PAYMENT_CLIENT_SECRET: string;
  /** The organisation's webhook signing secret, for verifyWebhook. */
  PAYMENT_WEBHOOK_SECRET: string;
  /**
   * How long the suite would like one attempt to wait for an answer, in milliseconds: a
   * driver may set its client's timeout from it, so that the scenario that withholds an
   * answer ends soon. A client that waits longer is not judged the worse for it.
   */
  PAYMENT_REQUEST_TIMEOUT_MS: string;
}

export const DRIVER_ENV_NAMES = [
  'PAYMENT_BASE_URL',
  'PAYMENT_CLIENT_ID',
  'PAYMENT_CLIENT_SECRET',
  'PAYMENT_WEBHOOK_SECRET',
  'PAYMENT_REQUEST_TIMEOUT_MS',
] as const satisfies readonly (keyof DriverEnv)[];

/** One thing the client is asked to do. */
export type Operation =
  /** Get an access token (fetched or reused): value `{ accessToken }`. */
  | { id: number; op: 'token' }
  /** POST /api/checkout-sessions with this body: value the session as created (with its `id`). */
  | { id: number; op: 'createSession'; body: unknown }
  /** GET /api/checkout-sessions/{id}: value the session as read (with its `status`). */
  | { id: number; op: 'readSession'; sessionId: string }
  /** Whether the merchant may fulfil this payment now: value `{ paid, status }`. */
  | { id: number; op: 'confirmPayment'; sessionId: string }
  /** The payer's browser landed on this redirectUrl: may the merchant fulfil? Value `{ paid }`. */
  | { id: number; op: 'confirmRedirect'; url: string }
  /** POST /api/payment-links with this body: value the link (with its `id`). */
  | { id: number; op: 'createLink'; body: unknown }
  /** GET /api/payment-links/{id}: value the link as read. */
  | { id: number; op: 'readLink'; linkId: string }
  /**
   * A delivery as it reached the merchant: `body` its exact bytes (UTF-8 text), `headers`
   * its headers (lower-case names). Value `{ kind: 'event', event, transactionId }` for a
   * verified signed event, `{ kind: 'legacy', transactionId }` for a legacy two-field body
   * the client accepts; a rejected delivery is an error outcome.
   */
  | { id: number; op: 'verifyWebhook'; body: string; headers: Record<string, string> };

export type OperationName = Operation['op'];

export const OPERATIONS: readonly OperationName[] = [
  'token',
  'createSession',
  'readSession',
  'confirmPayment',
  'confirmRedirect',
  'createLink',
  'readLink',
  'verifyWebhook',
];

/** An operation without its id, as checks ask for it. */
export type Ask = Operation extends infer O ? (O extends Operation ? Omit<O, 'id'> : never) : never;

/** The error of a failed operation, as the client classified it. */
export interface ClientError {
  /** The error code the client read (the envelope's `error.code`), or null (none, or not read). */
  code: string | null;
  /** The HTTP status of the answer the client gave up on, or null (no answer, or no request). */
  status: number | null;
  /** Whether the client deems it transient: the same request, unchanged, could succeed later. */
  retryable: boolean;
  message?: string;
}

/** What a driver says of one operation: done (with its value), failed (with the error), or not offered. */
export type Said =
  | { ok: true; value: unknown }
  | { ok: false; error: ClientError }
  /** The client offers no such operation: the checks that need it are skipped, naming it. */
  | { unsupported: true };

/** What a command driver writes back for one operation: what it says, with the operation's id. */
export type Outcome = Said & { id: number };

/** What the suite made of an operation: what the driver said, or why it said nothing. */
export type Answer =
  | Said
  /** The driver ended, wrote something that is not an outcome, or did not answer in time. */
  | { broken: string };

/** A JavaScript driver, as a module's default export makes it. */
export interface ModuleDriver {
  handle(operation: Operation): Promise<Said> | Said;
  close?(): Promise<void> | void;
}

/** What `--driver-module` exports by default. */
export type DriverFactory = (env: DriverEnv) => ModuleDriver | Promise<ModuleDriver>;

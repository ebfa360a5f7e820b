/**
 * An in-process reference server for tests, on a free loopback port with an in-memory
 * database, and a small HTTP client whose every answer is checked against the
 * description: the status must be documented for the operation, the body JSON, and the
 * body valid against the documented schema. A test that expects an undocumented answer
 * (404 for an unknown route, 405) says so with `{ undocumented: true }`.
 */
import http from 'node:http';
import pino from 'pino';
import { createPaymentServer, type PaymentServer, type ServerOptions } from '../../server/app.ts';
import { createValidator, escapePointer, loadDescription, type Json } from './description.ts';
import { freshDatabase } from './postgres.ts';

export const SANDBOX_TOKEN = 'sandbox-test-token';

export interface Answer<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  /** Sent form-encoded (the token endpoint). */
  form?: Record<string, string>;
  /** Sent as is (no JSON encoding). */
  rawBody?: string;
  headers?: Record<string, string>;
  undocumented?: boolean;
}

const descriptions = { api: loadDescription('openapi'), sandbox: loadDescription('sandbox') };
const validators = {
  api: createValidator(descriptions.api, 'server-openapi.json'),
  sandbox: createValidator(descriptions.sandbox, 'server-sandbox.json'),
};

/** The path template of the description that a concrete path matches. */
function templateFor(doc: Json, path: string): string | undefined {
  return Object.keys(doc.paths).find((template) => {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    return pattern.test(path);
  });
}

/** Checks one answer against the description; returns the problems found. */
export function contractProblems(method: string, path: string, answer: Answer): string[] {
  const which = path.startsWith('/sandbox/') ? 'sandbox' : 'api';
  const doc = descriptions[which];
  const template = templateFor(doc, path.split('?')[0]!);
  if (!template) return [`${method} ${path}: no such path in the description`];
  const operation = doc.paths[template][method.toLowerCase()];
  if (!operation) return [`${method} ${path}: no such operation in the description`];
  const status = String(answer.status);
  if (!operation.responses[status])
    return [`${method} ${template}: status ${status} is not documented (${answer.text.slice(0, 200)})`];
  const contentType = answer.headers.get('content-type') ?? '';
  if (!contentType.startsWith('application/json'))
    return [`${method} ${template} ${status}: content-type ${contentType} is not application/json`];
  let pointer = `/paths/${escapePointer(template)}/${method.toLowerCase()}/responses/${status}`;
  const response = operation.responses[status];
  if (response.$ref) pointer = response.$ref.slice(1);
  const validate = validators[which](`${pointer}/content/application~1json/schema`);
  if (!validate(answer.body))
    return [`${method} ${template} ${status}: body does not match the schema: ${JSON.stringify(validate.errors)}`];
  return [];
}

/** One HTTP request to a server at `baseUrl`, its answer checked against the description. */
export async function checkedRequest<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined = options.rawBody;
  if (options.form !== undefined) {
    body = new URLSearchParams(options.form).toString();
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // left as text; the contract check reports it
  }
  const answer: Answer<T> = { status: res.status, headers: res.headers, body: parsed as T, text };
  if (!options.undocumented) {
    const problems = contractProblems(method, path, answer);
    if (problems.length > 0) throw new Error(`Answer outside the description:\n${problems.join('\n')}`);
  }
  return answer;
}

/**
 * A request whose header lines go out exactly as listed (name, value, name, value, …),
 * repeats included: fetch would join a repeated name into one line. Host is added.
 */
export function requestWithHeaderLines(
  baseUrl: string,
  method: string,
  path: string,
  lines: string[],
  body?: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = ['host', new URL(baseUrl).host, ...lines];
    const req = http.request(`${baseUrl}${path}`, { method, headers }, (res) => {
      let text = '';
      res
        .setEncoding('utf8')
        .on('data', (chunk) => (text += chunk))
        .on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject).end(body);
  });
}

export interface TestServer {
  server: PaymentServer;
  url: string;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<Answer<T>>;
  sandbox<T = any>(method: string, path: string, body?: unknown): Promise<T>;
  /** A new organisation (defaults: NZD, card and open banking enabled, settlement account). */
  organisation(settings?: Partial<OrgSettings>): Promise<Org>;
  token(clientId: string, clientSecret: string): Promise<string>;
  advanceClock(orgId: string, seconds: number): Promise<void>;
  close(): Promise<void>;
}

export interface OrgSettings {
  settlementCurrency: 'NZD' | 'AUD';
  cardEnabled: boolean;
  openBankingApproved: boolean;
  settlementAccount: boolean;
}

export interface Org {
  id: string;
  webhookSigningSecret: string;
  apiKeys: { test: { clientId: string; clientSecret: string }; live: { clientId: string; clientSecret: string } };
  /** A bearer token of the test key. */
  testToken: string;
  liveToken: string;
}

/**
 * The database of a test server given none: an in-memory SQLite one, or, in the run of
 * the server's tests against PostgreSQL (TEST_STORE=postgres, vitest.config.ts), a fresh
 * PostgreSQL database dropped when the server closes.
 */
async function defaultDatabase(): Promise<{ db: string; drop?: () => Promise<void> }> {
  if (process.env.TEST_STORE !== 'postgres') return { db: ':memory:' };
  const fresh = await freshDatabase();
  return { db: fresh.url, drop: fresh.drop };
}

export async function startTestServer(options: ServerOptions = {}): Promise<TestServer> {
  const database = options.db === undefined ? await defaultDatabase() : { db: options.db };
  const server = await createPaymentServer({
    port: 0,
    db: database.db,
    sandboxToken: SANDBOX_TOKEN,
    logger: pino({ level: 'silent' }),
    // Every check and test makes organisations, each hashing two secrets: at the default
    // cost that hashing is most of the server's work in a test run. The default cost has
    // tests of its own (test/server/tokens.test.ts).
    secretHashCost: 8,
    ...options,
  });
  const url = server.url;

  const request = <T>(method: string, path: string, options: RequestOptions = {}) =>
    checkedRequest<T>(url, method, path, options);

  async function sandbox<T>(method: string, path: string, body?: unknown): Promise<T> {
    const answer = await request<T>(method, path, { token: SANDBOX_TOKEN, body });
    if (answer.status !== 200) throw new Error(`sandbox ${method} ${path} answered ${answer.status}: ${answer.text}`);
    return answer.body;
  }

  async function token(clientId: string, clientSecret: string): Promise<string> {
    const answer = await request<{ accessToken: string }>('POST', '/api/token', {
      rawBody: new URLSearchParams({ clientId, clientSecret }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    if (answer.status !== 200) throw new Error(`token answered ${answer.status}: ${answer.text}`);
    return answer.body.accessToken;
  }

  return {
    server,
    url,
    request,
    sandbox,
    token,
    async organisation(settings = {}) {
      const org = await sandbox<Omit<Org, 'testToken' | 'liveToken'>>('POST', '/sandbox/organisations', {
        settlementCurrency: 'NZD',
        cardEnabled: true,
        openBankingApproved: true,
        settlementAccount: true,
        ...settings,
      });
      const [testToken, liveToken] = await Promise.all([
        token(org.apiKeys.test.clientId, org.apiKeys.test.clientSecret),
        token(org.apiKeys.live.clientId, org.apiKeys.live.clientSecret),
      ]);
      return { ...org, testToken, liveToken };
    },
    async advanceClock(orgId, seconds) {
      await sandbox('POST', `/sandbox/organisations/${orgId}/clock`, { advanceSeconds: seconds });
    },
    async close() {
      await server.close();
      await database.drop?.();
    },
  };
}

/** A valid checkout session request; override any part. */
export function sessionRequest(overrides: Record<string, unknown> = {}) {
  return {
    type: 'single',
    amount: { total: 25.5 },
    creditorReference: { reference: 'INV-1001' },
    redirectUrl: 'https://shop.example.com/done?order=1001',
    checkoutMethod: 'both',
    ...overrides,
  };
}

/**
 * The code samples of the API reference (examples/samples/), run as a reader runs them:
 * every operation of the public API has a curl sample and an SDK sample, and each, run
 * against the in-process reference server, succeeds and says what it should; the webhook
 * verifiers (SDK, WebCrypto alone, Python's standard library) reach every published
 * signature vector's verdict. And the docs build puts them into the reference.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerDelivery } from '../examples/samples/webhooks/verify-sdk.ts';
// @ts-expect-error: a plain JavaScript sample, without declarations
import { verifyDelivery } from '../examples/samples/webhooks/verify-webcrypto.mjs';
import { repoRoot } from './support/description.ts';
import { type Org, sessionRequest, startTestServer, type TestServer } from './support/server.ts';

const run = promisify(execFile);
const samples = path.join(repoRoot, 'examples/samples');
const description = JSON.parse(readFileSync(path.join(repoRoot, 'generated/openapi.json'), 'utf8'));
const operations: string[] = Object.values(description.paths as Record<string, Record<string, any>>).flatMap((item) =>
  Object.values(item)
    .map((op) => op?.operationId)
    .filter(Boolean),
);

let t: TestServer;
let org: Org;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  t = await startTestServer();
  org = await t.organisation();
  const session = await t.request('POST', '/api/checkout-sessions', { token: org.testToken, body: sessionRequest() });
  const link = await t.request('POST', '/api/payment-links', {
    token: org.testToken,
    body: {
      amount: { total: 5 },
      creditorReference: { reference: 'SAMPLE' },
      redirectUrl: 'https://shop.example.com/paid',
      checkoutMethod: 'card',
    },
  });
  const legacy = await t.request('POST', '/api/transaction', {
    token: org.testToken,
    body: {
      amount: { total: 5 },
      creditorReference: { reference: 'SAMPLE' },
      redirectUrl: 'https://shop.example.com/paid',
      checkoutMethod: 'card',
    },
  });
  env = {
    ...process.env,
    BASE_URL: t.url,
    CLIENT_ID: org.apiKeys.test.clientId,
    CLIENT_SECRET: org.apiKeys.test.clientSecret,
    TOKEN: org.testToken,
    SESSION_ID: session.body.id,
    LINK_ID: link.body.id,
    TRANSACTION_ID: legacy.body.transactionId,
  };
});
afterAll(() => t?.close());

describe('the samples of every operation', () => {
  it('cover every operation of the public API, in curl and through the SDK, and nothing else', () => {
    const named = (dir: string, ext: string) =>
      readdirSync(path.join(samples, dir))
        .filter((f) => f.endsWith(ext))
        .map((f) => f.slice(0, -ext.length))
        .sort();
    expect(named('curl', '.sh')).toEqual([...operations].sort());
    expect(named('sdk', '.ts')).toEqual([...operations].sort());
  });

  it.each(operations)('%s: the curl sample succeeds against the reference server', async (operation) => {
    const { stdout } = await run('bash', ['-e', path.join(samples, 'curl', `${operation}.sh`)], { env });
    const answer = JSON.parse(stdout);
    expect(answer.error, stdout).toBeUndefined();
  });

  it.each(operations)('%s: the SDK sample succeeds against the reference server', async (operation) => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(samples, 'sdk', `${operation}.ts`)], {
      env,
      cwd: repoRoot,
    });
    expect(stdout.trim().length, operation).toBeGreaterThan(0);
    expect(stdout).not.toMatch(/undefined|Error/);
  });
});

interface Vector {
  name: string;
  secret: string;
  now: number;
  body?: string;
  bodyBase64?: string;
  header: string;
  valid: boolean;
}
const { vectors } = JSON.parse(readFileSync(path.join(repoRoot, 'openapi/webhook-signature-vectors.json'), 'utf8')) as {
  vectors: Vector[];
};
const bytesOf = (v: Vector) =>
  v.bodyBase64 !== undefined ? Buffer.from(v.bodyBase64, 'base64') : Buffer.from(v.body!, 'utf8');
const expected = Object.fromEntries(vectors.map((v) => [v.name, v.valid]));

describe('the webhook verification samples, over the published signature vectors', () => {
  it('with the SDK: 200 for exactly the valid vectors whose body is an event, 400 for the rest', () => {
    // The SDK also refuses a correctly signed body that is not an event ({}), after the check.
    const isEvent = (v: Vector) => /"event"/.test(bytesOf(v).toString('utf8'));
    const got = Object.fromEntries(vectors.map((v) => [v.name, answerDelivery(bytesOf(v), v.header, v.secret, v.now)]));
    expect(got).toEqual(Object.fromEntries(vectors.map((v) => [v.name, v.valid && isEvent(v) ? 200 : 400])));
  });

  it('with WebCrypto alone: exactly the valid vectors verify', async () => {
    const got: Record<string, boolean> = {};
    for (const v of vectors)
      got[v.name] = await verifyDelivery(bytesOf(v), v.header, v.secret, v.now).then(
        () => true,
        () => false,
      );
    expect(got).toEqual(expected);
  });

  it.skipIf(!existsSync('/usr/bin/python3'))(
    "with Python's standard library: exactly the valid vectors verify",
    async () => {
      const harness = `
import base64, json, sys
sys.path.insert(0, ${JSON.stringify(path.join(samples, 'webhooks'))})
from verify import verify_delivery
out = {}
for v in json.load(sys.stdin)["vectors"]:
    body = base64.b64decode(v["bodyBase64"]) if "bodyBase64" in v else v["body"].encode()
    try:
        verify_delivery(body, v["header"], v["secret"], now=v["now"])
        out[v["name"]] = True
    except ValueError:
        out[v["name"]] = False
print(json.dumps(out))
`;
      const child = execFile('python3', ['-c', harness]);
      child.stdin!.end(readFileSync(path.join(repoRoot, 'openapi/webhook-signature-vectors.json')));
      let stdout = '';
      child.stdout!.on('data', (chunk) => (stdout += chunk));
      const code = await new Promise((resolve) => child.on('close', resolve));
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toEqual(expected);
    },
  );
});

describe('the docs build', () => {
  it('puts every sample into the reference page, the signature vectors beside it', () => {
    const html = readFileSync(path.join(repoRoot, 'server/site/index.html'), 'utf8');
    const files = [
      ...operations.flatMap((op) => [`curl/${op}.sh`, `sdk/${op}.ts`]),
      'webhooks/verify-sdk.ts',
      'webhooks/verify-webcrypto.mjs',
      'webhooks/verify.py',
    ];
    // As the page's embedded description holds them: JSON strings, with `<` escaped so
    // that no sample can close the page's script.
    const missing = files.filter((file) => {
      const source = readFileSync(path.join(samples, file), 'utf8').trimEnd();
      return !html.includes(JSON.stringify(source).replace(/</g, '\\u003c'));
    });
    expect(missing).toEqual([]);
    expect(readFileSync(path.join(repoRoot, 'server/site/webhook-signature-vectors.json'), 'utf8')).toBe(
      readFileSync(path.join(repoRoot, 'openapi/webhook-signature-vectors.json'), 'utf8'),
    );
  });
});

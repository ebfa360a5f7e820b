/**
 * The SDK beyond Node: `@payment-service/client` bundled as a browser and a worker bundle
 * would be (esbuild, from the built package, by its `exports` conditions), which must
 * import no `node:` built-in, then run where only WebCrypto exists: a page in headless
 * Chromium, and Cloudflare's workerd without `nodejs_compat`. In each, every published
 * signature vector goes through `verifyWebhookAsync` and `computeSignatureAsync`, a
 * header made by `signWebhookAsync` verifies, and an idempotency key is a UUID; the
 * verdicts must be those of the synchronous Node verifier.
 *
 * @tags slow
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../client/webhooks.ts';
import { launchChromium } from '../support/chromium.ts';
import { repoRoot } from '../support/description.ts';
import { freePort } from '../support/mutating-proxy.ts';
import { paced } from '../support/pace.ts';

const vectorsFile = path.join(repoRoot, 'openapi/webhook-signature-vectors.json');
const { vectors } = JSON.parse(readFileSync(vectorsFile, 'utf8')) as {
  vectors: Array<{
    name: string;
    secret: string;
    timestamp: number;
    now: number;
    body?: string;
    bodyBase64?: string;
    header: string;
  }>;
};
const bodyOf = (v: (typeof vectors)[number]) =>
  v.bodyBase64 !== undefined ? Buffer.from(v.bodyBase64, 'base64') : Buffer.from(v.body!, 'utf8');

/** The Node verifier's verdict on each vector: the kind verified, or the error's class. */
const expected = Object.fromEntries(
  vectors.map((v) => {
    try {
      return [v.name, verifyWebhook(bodyOf(v), v.header, v.secret, { now: v.now }).kind];
    } catch (error) {
      return [v.name, (error as Error).name];
    }
  }),
);

/**
 * What every runtime runs: the vectors through the asynchronous WebCrypto API, from the
 * package entry a bundler resolves for it. Results: per vector the verdict and whether
 * the digest matched; a round trip of signWebhookAsync; an idempotency key; the raw-body error.
 */
const PROBE = `
import vectors from ${JSON.stringify(vectorsFile)};
import { computeSignatureAsync, generateIdempotencyKey, signWebhookAsync, verifyWebhookAsync } from '@payment-service/client';
const bytes = (v) => v.bodyBase64 !== undefined ? Uint8Array.from(atob(v.bodyBase64), (c) => c.charCodeAt(0)) : v.body;
export async function probe() {
  const verdicts = {};
  for (const v of vectors.vectors) {
    const digest = await computeSignatureAsync(bytes(v), v.secret, v.timestamp);
    let verdict;
    try { verdict = (await verifyWebhookAsync(bytes(v), v.header, v.secret, { now: v.now })).kind; }
    catch (error) { verdict = error.name; }
    verdicts[v.name] = { verdict, digestMatches: digest === v.expectedDigest };
  }
  const body = '{"event":"checkout_session.completed","transactionId":"t-1"}';
  const header = await signWebhookAsync(body, 'whsec_runtime', { timestamp: 1767225600 });
  const roundTrip = (await verifyWebhookAsync(body, header, 'whsec_runtime', { now: 1767225601 })).kind;
  let rawBody;
  try { await verifyWebhookAsync(JSON.parse(body), header, 'whsec_runtime'); } catch (error) { rawBody = error.name; }
  return { verdicts, roundTrip, rawBody, key: generateIdempotencyKey(), hasProcess: typeof process !== 'undefined' };
}
`;

const scratch = mkdtempSync(path.join(tmpdir(), 'client-runtimes-'));
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Bundles the probe for a platform's conditions, from the built package as a user's bundler would. */
async function bundle(name: string, conditions: string[], footer: string): Promise<string> {
  const entry = path.join(scratch, `${name}-entry.mjs`);
  writeFileSync(entry, `${PROBE}\n${footer}`);
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    conditions,
    mainFields: ['module', 'main'],
    nodePaths: [path.join(repoRoot, 'node_modules')],
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs);
  expect(inputs.filter((input) => input.startsWith('node:'))).toEqual([]);
  // The WebCrypto entries, not the Node ones, were taken.
  expect(inputs.some((input) => input.endsWith('client/dist/webhooks-web.js'))).toBe(true);
  expect(inputs.some((input) => input.endsWith('client/dist/webhooks.js'))).toBe(false);
  return result.outputFiles[0]!.text;
}

function expectVerdicts(result: any): void {
  const verdicts = Object.fromEntries(
    Object.entries(result.verdicts).map(([name, r]: [string, any]) => [name, r.verdict]),
  );
  expect(verdicts).toEqual(expected);
  for (const [name, r] of Object.entries(result.verdicts) as [string, any][])
    expect([name, r.digestMatches]).toEqual([name, true]);
  expect(result.roundTrip).toBe('event');
  expect(result.rawBody).toBe('RawBodyRequiredError');
  expect(result.key).toMatch(UUID);
}

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('in headless Chromium (a page with WebCrypto and no Node)', () => {
  let page: string;
  let server: http.Server;
  beforeAll(async () => {
    const code = await bundle('browser', ['browser'], 'window.probeResult = probe();');
    page = `<!doctype html><meta charset="utf-8"><script type="module">${code.replace(/<\/script/g, '<\\/script')}</script>`;
    // Served from loopback, a secure context, as WebCrypto requires.
    server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(page));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it(
    'verifies every signature vector as the Node verifier does, and signs',
    async () => {
      const browser = await launchChromium();
      try {
        const tab = await browser.newPage();
        await tab.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
        const result = await tab.evaluate(async () => (globalThis as any).probeResult);
        expect(result.hasProcess).toBe(false);
        expectVerdicts(result);
      } finally {
        await browser.close();
      }
    },
    paced(60_000),
  );

  it(
    'on a page that is not a secure context (no crypto.subtle), says that WebCrypto is missing and why',
    async () => {
      const browser = await launchChromium();
      try {
        const tab = await browser.newPage();
        // setContent leaves the page at about:blank, which browsers do not count as secure.
        await tab.setContent(
          page.replace(
            'window.probeResult = probe();',
            'window.probeResult = probe().then((r) => r, (e) => ({ error: e.message }));',
          ),
        );
        const [secure, result] = await tab.evaluate(async () => [
          (globalThis as any).isSecureContext,
          await (globalThis as any).probeResult,
        ]);
        expect(secure).toBe(false);
        expect(result.error).toMatch(/^WebCrypto \(crypto\.subtle\) is not available here/);
        expect(result.error).toMatch(/secure contexts/);
      } finally {
        await browser.close();
      }
    },
    paced(60_000),
  );
});

describe('in workerd without nodejs_compat', () => {
  let worker: ChildProcess | undefined;
  let url: string;
  beforeAll(async () => {
    const code = await bundle(
      'workerd',
      ['workerd', 'worker', 'browser'],
      'export default { async fetch() { return Response.json(await probe()); } };',
    );
    writeFileSync(path.join(scratch, 'worker.js'), code);
    const port = await freePort();
    url = `http://127.0.0.1:${port}/`;
    // No compatibility flags: no nodejs_compat, so a node: import could not even load.
    writeFileSync(
      path.join(scratch, 'config.capnp'),
      `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .probe) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const probe :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js") ],
  compatibilityDate = "2025-01-01",
);
`,
    );
    worker = spawn(path.join(repoRoot, 'node_modules/.bin/workerd'), ['serve', 'config.capnp'], {
      cwd: scratch,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let said = '';
    worker.stdout!.on('data', (chunk) => (said += chunk));
    worker.stderr!.on('data', (chunk) => (said += chunk));
    for (let i = 0; ; i++) {
      if (
        await fetch(url).then(
          () => true,
          () => false,
        )
      )
        break;
      if (i > 100 || worker.exitCode !== null) throw new Error(`workerd did not start:\n${said}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, paced(60_000));
  afterAll(() => worker?.kill('SIGTERM'));

  it('verifies every signature vector as the Node verifier does, and signs', async () => {
    const result = await (await fetch(url)).json();
    expect(result.hasProcess).toBe(false);
    expectVerdicts(result);
  });
});

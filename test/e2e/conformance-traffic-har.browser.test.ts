/**
 * A HAR as Chromium records it (Playwright's `recordHar`), read and judged by
 * `payment-conformance traffic`: a page's script, the SDK's browser build, gets a token,
 * creates a checkout session under an Idempotency-Key and reads it back; then the payer pays on the hosted page and
 * lands on the merchant's page. The browser's own requests (the pages, their assets, the
 * payment form) are counted and left to no rule; the API's are judged, both parties.
 *
 * @tags long
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/chromium.ts';
import { cli, type JsonReport } from '../support/conformance-cli.ts';
import { repoRoot } from '../support/description.ts';
import { paced } from '../support/pace.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { readFileSync } from 'node:fs';

let t: TestServer;
let browser: Browser;
const scratch = mkdtempSync(path.join(tmpdir(), 'traffic-har-'));

beforeAll(async () => {
  t = await startTestServer();
  browser = await launchChromium();
}, paced(60_000));
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('a HAR recorded by Chromium', () => {
  it(
    'is read, its API traffic judged for both parties, the browser’s own requests left to no rule',
    async () => {
      const org = await t.organisation();
      const har = path.join(scratch, 'chromium.har');
      const context = await browser.newContext({ recordHar: { path: har } });
      const page = await context.newPage();
      // A page of the merchant's, on the server's origin, so that its script's requests need
      // no CORS, loading the SDK's browser build as it ships (an import map for its imports).
      const modules: Record<string, string> = {
        client: path.join(repoRoot, 'client/dist'),
        'openapi-fetch': path.join(repoRoot, 'node_modules/openapi-fetch/dist'),
        contract: path.join(repoRoot, 'generated/dist'),
      };
      const imports = {
        '@payment-service/client': '/sdk/client/index-web.js',
        'openapi-fetch': '/sdk/openapi-fetch/index.mjs',
        '@payment-service/contract/errors': '/sdk/contract/errors.js',
      };
      await page.route('**/merchant/**', (route) =>
        route.fulfill({
          status: 200,
          contentType: 'text/html',
          body: `<!doctype html><title>shop</title><script type="importmap">${JSON.stringify({ imports })}</script><p>shop</p>`,
        }),
      );
      await page.route('**/sdk/**', (route) => {
        const [, , dir, ...rest] = new URL(route.request().url()).pathname.split('/');
        return route.fulfill({
          status: 200,
          contentType: 'text/javascript',
          body: readFileSync(path.join(modules[dir!]!, ...rest), 'utf8'),
        });
      });
      await page.goto(`${t.url}/merchant/checkout`);
      const session = await page.evaluate(
        async ({ clientId, clientSecret, redirectUrl, baseUrl }) => {
          // Written as text: the test's own transform would rewrite an import() in this function.
          const load = new Function('specifier', 'return import(specifier)') as (
            specifier: string,
          ) => Promise<typeof import('@payment-service/client')>;
          const { createPaymentClient } = await load('@payment-service/client');
          const body = (reference: string, total: number) => ({
            type: 'single' as const,
            amount: { total },
            creditorReference: { reference },
            checkoutMethod: 'card' as const,
            redirectUrl,
          });
          const pay = createPaymentClient({
            baseUrl,
            clientId,
            clientSecret,
            // A create of another hand, without a key: allowed, but the document strongly recommends one.
            fetch: async (request) => {
              if (!(await request.clone().text()).includes('ORDER-1002')) return fetch(request);
              const headers = new Headers(request.headers);
              headers.delete('idempotency-key');
              return fetch(new Request(request, { headers }));
            },
          });
          const created = await pay.createCheckoutSession(body('ORDER-1001', 25.5));
          await pay.getCheckoutSession(created.id);
          await pay.createCheckoutSession(body('ORDER-1002', 9));
          return { id: created.id, url: created.url };
        },
        { ...org.apiKeys.test, redirectUrl: `${t.url}/merchant/thanks`, baseUrl: t.url },
      );
      await page.goto(session.url);
      await Promise.all([
        page.waitForURL((u) => u.pathname === '/merchant/thanks'),
        page
          .locator('fieldset')
          .filter({ has: page.locator('legend', { hasText: /^\s*Card\s*$/ }) })
          .getByRole('button', { name: 'Pay (succeeds)' })
          .click(),
      ]);
      await context.close();

      const out = mkdtempSync(path.join(tmpdir(), 'traffic-har-report-'));
      const judged = await cli(['traffic', '--har', har, '--reporter', 'console,json', '--out', out]);
      const report = JSON.parse(readFileSync(path.join(out, 'conformance.json'), 'utf8')) as JsonReport;
      const status = Object.fromEntries(report.results.map((r) => [r.id, r.status]));
      expect(judged.code, `${judged.stdout}\n${judged.stderr}`).toBe(0);
      expect(judged.stdout).toMatch(/\d+ exchanges: 4 answers of the API, 0 webhook deliveries, [1-9]\d* other/);
      expect(judged.stdout).toContain('1 client told apart by clientId or token');
      for (const id of ['TRAFFIC-001', 'TRAFFIC-002', 'TRAFFIC-003', 'TRAFFIC-007', 'TRAFFIC-008'])
        expect(status[id], id).toBe('passed');
      for (const id of ['TRAFFIC-030', 'TRAFFIC-031', 'TRAFFIC-038']) expect(status[id], id).toBe('passed');
      // The create without a key fails a should: its evidence shows no credential the HAR holds.
      expect(status['TRAFFIC-036']).toBe('failed');
      // The SDK's own create carried its key.
      expect(report.results.find((r) => r.id === 'TRAFFIC-036')!.reason).toMatch(/^1 of 2 creates/);
      const evidence = report.results.find((r) => r.id === 'TRAFFIC-036')!.evidence!;
      expect(evidence.request).toMatch(/^authorization: Bearer \$[A-Z_]+$/m);
      // The HAR holds the token by value, as the browser saw it.
      const token = /"accessToken\\?":\s*\\?"([^"\\]+)/.exec(readFileSync(har, 'utf8'))?.[1];
      expect(token).toBeDefined();
      for (const secret of [token!, org.apiKeys.test.clientSecret]) {
        expect(judged.stdout).not.toContain(secret);
        expect(readFileSync(path.join(out, 'conformance.json'), 'utf8')).not.toContain(secret);
      }
      // The browser shows the token by value: its reuse is judged, and holds.
      expect(status['TRAFFIC-032']).toBe('passed');
    },
    paced(120_000),
  );
});

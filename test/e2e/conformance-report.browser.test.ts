/**
 * The HTML report of a run with every status (passed, failed, differs, skipped, error), read in
 * headless Chromium as a person reads it: the failures come first and link to their
 * checks, every check and section has an anchor, and the filter shows one status or
 * what matches a text. The file loads nothing from anywhere.
 */
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliRun, explain, runSuite } from '../support/conformance-cli.ts';
import { repoRoot } from '../support/description.ts';
import { editJson, type MutatingProxy, startMutatingProxy } from '../support/mutating-proxy.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';
import { paced } from '../support/pace.ts';

const shots = path.join(repoRoot, 'test-results/conformance-report');

let t: TestServer;
let proxy: MutatingProxy;
let run: CliRun;
let browser: Browser;
const requested: string[] = [];

beforeAll(async () => {
  t = await startTestServer();
  // TOKEN-001 fails (tokenType "bearer"); configuration is checked before validation (CFG-009,
  // an assumption of ours, differs); the adapter's clock does nothing (AUTH-006 ends in
  // error); it cannot pay (HOOK-001 is skipped); the rest passes.
  proxy = await startMutatingProxy(t.url, {
    response: (m, r) => {
      if (m.url === '/api/token' && r.status === 200) return editJson(r, (b) => ({ ...b, tokenType: 'bearer' }));
      const configurationFirst =
        m.method === 'POST' &&
        m.url === '/api/checkout-sessions' &&
        r.body.includes('"validation_failed"') &&
        r.body.includes('amount.total') &&
        !r.body.includes('creditorReference');
      return configurationFirst
        ? editJson(r, () => ({
            error: {
              code: 'card_not_enabled',
              message: 'card payments are not configured',
              param: 'checkoutMethod',
              doc_url: `${t.url}/docs/errors/#card_not_enabled`,
            },
          }))
        : r;
    },
  });
  run = await runSuite(
    [
      '--base-url',
      proxy.url,
      '--adapter',
      'test/support/adapters/stuck-clock.ts',
      '--only',
      'TOKEN-001,TOKEN-002,AUTH-001,AUTH-006,CFG-009,HOOK-001',
      '--reporter',
      'json,html',
    ],
    { ADAPTER_SANDBOX_TOKEN: SANDBOX_TOKEN },
    { nodeArgs: ['--import', 'tsx'] },
  );
  await mkdir(shots, { recursive: true });
  browser = await launchChromium();
}, paced(120_000));

afterAll(async () => {
  await browser?.close();
  await proxy?.close();
  await t?.close();
});

async function openReport(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (!url.startsWith('file:')) requested.push(url);
    return url.startsWith('file:') ? route.continue() : route.abort();
  });
  await page.goto(pathToFileURL(path.join(run.dir, 'conformance.html')).href);
  return page;
}

const visibleRows = (page: Page) =>
  page.$$eval('tr[data-status]', (rows) => rows.filter((r) => !(r as HTMLElement).hidden).map((r) => r.id));

describe('the HTML report in a browser', () => {
  it('is of a run with every status', () => {
    expect(run.code, explain(run)).toBe(1);
    expect(run.report!.results.map((r) => [r.id, r.status])).toEqual([
      ['TOKEN-001', 'failed'],
      ['TOKEN-002', 'passed'],
      ['AUTH-001', 'passed'],
      ['AUTH-006', 'error'],
      ['CFG-009', 'differs'],
      ['HOOK-001', 'skipped'],
    ]);
  });

  it('lists the failures first, then the differences and the errors, each a link to its check', async () => {
    const page = await openReport();
    const items = page.locator('#attention li a');
    expect(await items.evaluateAll((links) => links.map((a) => a.getAttribute('href')))).toEqual([
      '#TOKEN-001',
      '#CFG-009',
      '#AUTH-006',
    ]);
    expect(await page.locator('#attention li').nth(1).innerText()).toContain('differs from our modelling');
    expect(await page.locator('tr#CFG-009').innerText()).toContain('assumption: the table of validation');
    await items.first().click();
    expect(new URL(page.url()).hash).toBe('#TOKEN-001');
    const top = await page.locator('tr#TOKEN-001').evaluate((row) => row.getBoundingClientRect().top);
    // The row's title shows below the sticky filter bar, not under it.
    const bar = await page.locator('#filter').evaluate((form) => form.getBoundingClientRect().bottom);
    expect(top).toBeGreaterThanOrEqual(bar);
    expect(top).toBeLessThan(700);
    // A failure's reproduction is the repro command, and its clauses come with their words.
    const row = page.locator('tr#TOKEN-001');
    await row.locator('summary', { hasText: 'evidence' }).click();
    expect(await row.innerText()).toMatch(/payment-conformance repro \S+\/conformance\.json TOKEN-001 --base-url /);
    await row.locator('summary', { hasText: 'clauses, in the document' }).click();
    expect(await row.innerText()).toContain('token.ok Response 200');
    expect(await page.locator('tr#TOKEN-001').innerText()).toContain('tokenType must be "Bearer"');
    await page.screenshot({ path: path.join(shots, 'failures-first.png'), fullPage: true });
    await page.close();
  });

  it('shows the coverage: checks judged of the total, and skips by missing capability', async () => {
    const page = await openReport();
    const coverage = await page.locator('#coverage').innerText();
    expect(coverage).toContain('Coverage: 4 of 6 checks judged; skipped for attempt: 1 check');
    await page.close();
  });

  it('filters by status and by text, hiding the sections left empty', async () => {
    const page = await openReport();
    expect(await visibleRows(page)).toHaveLength(6);
    for (const [status, ids] of [
      ['failed', ['TOKEN-001']],
      ['differs', ['CFG-009']],
      ['error', ['AUTH-006']],
      ['skipped', ['HOOK-001']],
      ['passed', ['TOKEN-002', 'AUTH-001']],
    ] as const) {
      await page.locator(`input[name="status"][value="${status}"]`).check();
      expect(await visibleRows(page), status).toEqual(ids);
    }
    await page.locator('input[name="status"][value="passed"]').check();
    expect(await page.locator('section.results:not([hidden])').count()).toBe(2);
    await page.locator('input[name="status"][value="all"]').check();
    await page.locator('input[name="text"]').fill('advanceClock');
    expect(await visibleRows(page)).toEqual(['AUTH-006']);
    await page.screenshot({ path: path.join(shots, 'filtered.png'), fullPage: true });
    await page.close();
  });

  it('has an anchor for every check and every section, and loads nothing from anywhere', async () => {
    const html = readFileSync(path.join(run.dir, 'conformance.html'), 'utf8');
    for (const id of ['TOKEN-001', 'TOKEN-002', 'AUTH-001', 'AUTH-006', 'HOOK-001'])
      expect(html).toContain(`<a href="#${id}">`);
    for (const [, section] of html.matchAll(/<section class="results" id="([^"]+)"/g))
      expect(html).toContain(`<a href="#${section}">`);
    expect(requested).toEqual([]);
  });
});

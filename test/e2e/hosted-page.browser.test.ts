/**
 * The hosted payment page (server/pay/page.ts) in headless Chromium, served by an
 * in-process reference server, with a tiny local "merchant" standing in for the
 * session's redirectUrl. Covers the service document's redirect rule (the payer lands on
 * redirectUrl with transactionId and checkoutSessionId appended, the merchant's own query
 * parameters kept, by a 303 after the form POST), the States rules a payer meets (a
 * decline leaves the session live and retryable; completed and expired pages; card-only
 * and live sessions), and basic accessibility of the payable page. Every address other
 * than the two local servers is blocked, and the last test asserts none was tried.
 * Screenshots go to test-results/hosted-page/ (git-ignored).
 *
 * @tags long
 */
import { mkdir } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import { launchChromium } from '../support/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/description.ts';
import { sessionRequest, startTestServer, type Org, type TestServer } from '../support/server.ts';
import { paced } from '../support/pace.ts';

const shots = path.join(repoRoot, 'test-results/hosted-page');
const ORG_NAME = 'Kōwhai Coffee & Co';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

let t: TestServer;
let browser: Browser;
let context: BrowserContext;
let org: Org;

/** The merchant's site: answers 200 with a small page and records every URL asked for. */
let merchant: http.Server;
let merchantUrl: string;
const merchantHits: string[] = [];

/** Every request the browser tried to make to any other address (blocked or not). */
const offsite: string[] = [];
const allowed = (url: string) =>
  url.startsWith(`${t.url}/`) ||
  url.startsWith(`${merchantUrl}/`) ||
  url.startsWith('data:') ||
  url.startsWith('about:');

async function startMerchant(): Promise<void> {
  merchant = http.createServer((req, res) => {
    merchantHits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', connection: 'close' });
    res.end(
      '<!doctype html><html lang="en"><head><title>Shop: thank you</title></head><body><h1>Thank you for your order</h1></body></html>',
    );
  });
  await new Promise<void>((resolve) => merchant.listen(0, '127.0.0.1', resolve));
  merchantUrl = `http://127.0.0.1:${(merchant.address() as AddressInfo).port}`;
}

const redirectUrl = () => `${merchantUrl}/done?order=42&lang=en`;

async function createSession(
  overrides: Record<string, unknown> = {},
  token = org.testToken,
): Promise<{ id: string; url: string }> {
  const answer = await t.request<{ id: string; url: string; status: string }>('POST', '/api/checkout-sessions', {
    token,
    body: sessionRequest({ checkoutMethod: 'both', redirectUrl: redirectUrl(), ...overrides }),
  });
  expect(answer.status, answer.text).toBe(200);
  expect(answer.body.id).toMatch(/^cs_/);
  expect(answer.body.status).toBe('created');
  return answer.body;
}

async function readSession(id: string, token = org.testToken) {
  const answer = await t.request('GET', `/api/checkout-sessions/${id}`, { token });
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

async function open(url: string): Promise<{ page: Page; response: Response | null }> {
  const page = await context.newPage();
  const response = await page.goto(url, { waitUntil: 'load' });
  return { page, response };
}

/**
 * The amount with its currency: the brief asks for NZ$25.50; NZD 25.50 says the same.
 * A bare "$25.50" does not tell a payer which dollars (en-NZ formatting of NZD gives that).
 * Soft, so the rest of the flow is still checked when only this fails.
 */
async function expectAmountShown(page: Page): Promise<void> {
  const text = await page.locator('main').innerText();
  const shown = /\bNZ\$\s?25\.50\b|\bNZD\s?\$?25\.50\b|\b25\.50\s?NZD\b/.test(text);
  expect
    .soft(
      shown,
      `the page must show the amount with its currency (NZ$25.50), not a bare dollar sign; page text:\n${text}`,
    )
    .toBe(true);
}

const rail = (page: Page, legend: string) =>
  page.locator('fieldset').filter({ has: page.locator('legend', { hasText: new RegExp(`^\\s*${legend}\\s*$`) }) });

/** Clicks a button and waits for the navigation it starts; returns the final response. */
async function clickAndLand(
  page: Page,
  button: ReturnType<Page['getByRole']>,
  landsOn: (url: URL) => boolean,
): Promise<Response> {
  const [response] = await Promise.all([
    page.waitForResponse((r) => landsOn(new URL(r.url())) && r.request().isNavigationRequest()),
    button.click(),
  ]);
  await page.waitForLoadState('load');
  return response;
}

/** The merchant landing: its URL parsed, and the status of the POST that redirected there. */
async function payAndLand(
  page: Page,
  legend: string,
): Promise<{ landed: URL; postStatus: number | undefined; postMethod: string | undefined }> {
  const button = rail(page, legend).getByRole('button', { name: 'Pay (succeeds)' });
  const response = await clickAndLand(page, button, (u) => `${u.protocol}//${u.host}` === merchantUrl);
  const from = response.request().redirectedFrom();
  const fromResponse = await from?.response();
  await expect.poll(() => page.url()).toBe(response.url());
  return { landed: new URL(page.url()), postStatus: fromResponse?.status(), postMethod: from?.method() };
}

beforeAll(async () => {
  await mkdir(shots, { recursive: true });
  t = await startTestServer();
  await startMerchant();
  const created = await t.sandbox('POST', '/sandbox/organisations', {
    name: ORG_NAME,
    settlementCurrency: 'NZD',
    cardEnabled: true,
    openBankingApproved: true,
    settlementAccount: true,
  });
  org = {
    ...created,
    testToken: await t.token(created.apiKeys.test.clientId, created.apiKeys.test.clientSecret),
    liveToken: await t.token(created.apiKeys.live.clientId, created.apiKeys.live.clientSecret),
  };
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 900, height: 900 } });
  // page.route sees only the first request of a redirect chain, so every request is also
  // recorded here: a redirect to another address would show up in `offsite`.
  context.on('request', (request) => {
    if (!allowed(request.url())) offsite.push(request.url());
  });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (allowed(url)) return route.continue();
    offsite.push(url);
    return route.abort('blockedbyclient');
  });
}, paced(60_000));

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await t?.close();
  await new Promise<void>((resolve) => (merchant ? merchant.close(() => resolve()) : resolve()));
});

describe('hosted payment page in a browser', () => {
  it(
    'a: pays a both session by card and sends the payer (303) to the merchant with the ids appended',
    async () => {
      const session = await createSession();
      expect(session.url).toBe(`${t.url}/pay/${session.id}`);
      const { page, response } = await open(session.url);
      expect(response?.status()).toBe(200);
      expect(await page.locator('h1').innerText()).toBe(`Pay ${ORG_NAME}`);
      const main = await page.locator('main').innerText();
      expect(main).toContain('INV-1001');
      expect(await rail(page, 'Card').count()).toBe(1);
      expect(await rail(page, 'Bank transfer \\(open banking\\)').count()).toBe(1);
      await page.screenshot({ path: path.join(shots, 'a-both-payable.png'), fullPage: true });
      await expectAmountShown(page);

      const hitsBefore = merchantHits.length;
      const { landed, postStatus, postMethod } = await payAndLand(page, 'Card');
      expect(postMethod).toBe('POST');
      expect(postStatus).toBe(303);
      expect(landed.pathname).toBe('/done');
      expect(landed.searchParams.get('order')).toBe('42');
      expect(landed.searchParams.get('lang')).toBe('en');
      expect(landed.searchParams.get('checkoutSessionId')).toBe(session.id);
      const transactionId = landed.searchParams.get('transactionId');
      expect(transactionId).toMatch(UUID);
      expect(await page.locator('h1').innerText()).toBe('Thank you for your order');
      expect(merchantHits.slice(hitsBefore)).toEqual([`${landed.pathname}${landed.search}`]);
      await page.screenshot({ path: path.join(shots, 'a-merchant-landing.png') });

      // The id in the URL is not proof of payment: the merchant reads the session back.
      const read = await readSession(session.id);
      expect(read).toMatchObject({
        id: session.id,
        status: 'completed',
        transactionType: 'card',
        checkoutMethod: 'both',
        testMode: true,
      });
      expect(read.transactionId).toBe(transactionId);
      await page.close();
    },
    paced(30_000),
  );

  it(
    'b: a declined attempt comes back to the page with an alert; a retry on the bank rail succeeds',
    async () => {
      const session = await createSession();
      const { page } = await open(session.url);
      const decline = rail(page, 'Card').getByRole('button', { name: 'Decline' });
      await clickAndLand(page, decline, (u) => u.pathname === `/pay/${session.id}`);
      expect(new URL(page.url()).searchParams.get('result')).toBe('declined');
      const alert = page.getByRole('alert');
      await expect.poll(() => alert.count()).toBe(1);
      expect(await alert.isVisible()).toBe(true);
      expect(await alert.innerText()).toMatch(/declined/i);
      await page.screenshot({ path: path.join(shots, 'b-declined.png'), fullPage: true });
      expect(await readSession(session.id)).toMatchObject({ status: 'failed', transactionType: 'open_banking' });

      // The session stays live: both rails are still offered.
      expect(await page.getByRole('button', { name: 'Pay (succeeds)' }).count()).toBe(2);
      const { landed, postStatus } = await payAndLand(page, 'Bank transfer \\(open banking\\)');
      expect(postStatus).toBe(303);
      expect(landed.pathname).toBe('/done');
      expect(landed.searchParams.get('order')).toBe('42');
      expect(landed.searchParams.get('lang')).toBe('en');
      expect(landed.searchParams.get('checkoutSessionId')).toBe(session.id);
      expect(landed.searchParams.get('transactionId')).toMatch(UUID);
      const read = await readSession(session.id);
      expect(read).toMatchObject({ status: 'completed', transactionType: 'open_banking' });
      expect(read.transactionId).toBe(landed.searchParams.get('transactionId'));
      await page.close();
    },
    paced(30_000),
  );

  describe('c: pages for other states and sessions', () => {
    it('a completed session shows "Payment complete" and no buttons', async () => {
      const session = await createSession();
      await t.sandbox('POST', `/sandbox/checkout-sessions/${session.id}/attempts`, {
        rail: 'card',
        outcome: 'succeeded',
      });
      const { page, response } = await open(session.url);
      expect(response?.status()).toBe(200);
      expect(await page.locator('h1').innerText()).toBe('Payment complete');
      expect(await page.getByRole('status').innerText()).toContain(ORG_NAME);
      expect(await page.getByRole('button').count()).toBe(0);
      expect(await page.locator('form').count()).toBe(0);
      await page.screenshot({ path: path.join(shots, 'c-completed.png'), fullPage: true });
      await page.close();
    });

    it('a pending session’s page reloads itself and shows the completion; its link leads back to the merchant', async () => {
      const session = await createSession();
      await t.sandbox('POST', `/sandbox/checkout-sessions/${session.id}/attempts`, {
        rail: 'card',
        outcome: 'pending',
      });
      const { page } = await open(session.url);
      expect(await page.getByRole('status').innerText()).toMatch(/being processed/);
      // The bank's answer comes while the payer watches the page.
      await t.sandbox('POST', `/sandbox/checkout-sessions/${session.id}/attempts`, {
        rail: 'card',
        outcome: 'succeeded',
      });
      await expect.poll(() => page.locator('h1').innerText(), { timeout: 10_000 }).toBe('Payment complete');
      expect(page.url()).toBe(session.url);
      await page.screenshot({ path: path.join(shots, 'c-completed-after-pending.png'), fullPage: true });
      const back = page.getByRole('link', { name: `Return to ${ORG_NAME}` });
      await Promise.all([page.waitForURL((url) => url.href.startsWith(merchantUrl)), back.click()]);
      const landed = new URL(page.url());
      expect(landed.pathname).toBe('/done');
      expect(Object.fromEntries(landed.searchParams)).toMatchObject({
        order: '42',
        lang: 'en',
        checkoutSessionId: session.id,
      });
      expect(landed.searchParams.get('transactionId')).toMatch(UUID);
      await page.close();
    });

    it('an expired session (org clock 24 h + 1 s on) shows the expired page, HTTP 410, no buttons', async () => {
      // Its own organisation: the clock moves for every payment of an organisation.
      const other = await t.organisation();
      const session = await createSession({}, other.testToken);
      await t.advanceClock(other.id, 24 * 3600 + 1);
      const { page, response } = await open(session.url);
      expect(response?.status()).toBe(410);
      expect(await page.locator('h1').innerText()).toMatch(/expired/i);
      expect(await page.getByRole('alert').innerText()).toMatch(/nothing was taken/i);
      expect(await page.getByRole('button').count()).toBe(0);
      // Access tokens expire on the same clock: fetch a fresh one to read the session back.
      const fresh = await t.token(other.apiKeys.test.clientId, other.apiKeys.test.clientSecret);
      expect(await readSession(session.id, fresh)).toMatchObject({ status: 'expired' });
      await page.screenshot({ path: path.join(shots, 'c-expired.png'), fullPage: true });
      await page.close();
    });

    it('an unknown id shows a 404 page', async () => {
      const { page, response } = await open(`${t.url}/pay/cs_doesnotexist000000000000`);
      expect(response?.status()).toBe(404);
      expect(await page.locator('h1').innerText()).toMatch(/not found/i);
      expect(await page.getByRole('button').count()).toBe(0);
      await page.screenshot({ path: path.join(shots, 'c-not-found.png'), fullPage: true });
      await page.close();
    });

    it('a card-only session shows only the card rail', async () => {
      const session = await createSession({ checkoutMethod: 'card' });
      const { page } = await open(session.url);
      const legends = await page.locator('fieldset > legend').allInnerTexts();
      expect(legends.map((l) => l.trim())).toEqual(['Card']);
      expect(await page.getByRole('button', { name: 'Pay (succeeds)' }).count()).toBe(1);
      expect(
        await page.locator('input[name="rail"]').evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value)),
      ).toEqual(['card']);
      await page.screenshot({ path: path.join(shots, 'c-card-only.png'), fullPage: true });
      await page.close();
    });

    it('a live-mode session shows no test buttons', async () => {
      const session = await createSession({}, org.liveToken);
      const { page, response } = await open(session.url);
      expect(response?.status()).toBe(200);
      expect(await page.locator('h1').innerText()).toBe(`Pay ${ORG_NAME}`);
      expect(await page.getByRole('button').count()).toBe(0);
      expect(await page.locator('form').count()).toBe(0);
      await page.screenshot({ path: path.join(shots, 'c-live.png'), fullPage: true });
      await expectAmountShown(page);
      expect(await readSession(session.id, org.liveToken)).toMatchObject({ status: 'created', testMode: false });
      await page.close();
    });
  });

  it('d: the payable page passes basic accessibility checks', async () => {
    const session = await createSession();
    const { page } = await open(session.url);
    expect(await page.locator('html').getAttribute('lang')).toMatch(/^[a-z]{2}/i);
    expect(await page.title()).not.toBe('');
    expect(await page.locator('h1').count()).toBe(1);
    const buttons = await page.getByRole('button').count();
    expect(buttons).toBe(6);
    // A button without an accessible name does not match a name pattern.
    expect(await page.getByRole('button', { name: /\S/ }).count()).toBe(buttons);
    const outside = await page
      .locator('button')
      .evaluateAll(
        (els) =>
          els.filter((b) => !b.closest('fieldset')?.querySelector(':scope > legend')?.textContent?.trim()).length,
      );
    expect(outside, 'buttons outside a fieldset with a legend').toBe(0);
    for (const legend of ['Card', 'Bank transfer \\(open banking\\)']) {
      expect(await rail(page, legend).getByRole('button').count(), legend).toBe(3);
      // The group is exposed to assistive technology under the legend's name.
      expect(await page.getByRole('group', { name: new RegExp(`^${legend}$`) }).count(), legend).toBe(1);
    }
    await page.close();

    // The status message after an attempt is announced: alert for a decline, status while pending.
    for (const [result, role] of [
      ['declined', 'alert'],
      ['pending', 'status'],
    ] as const) {
      const { page: after } = await open(`${session.url}?result=${result}`);
      const message = after.getByRole(role);
      expect(await message.count(), result).toBe(1);
      expect(await message.isVisible(), result).toBe(true);
      expect(await after.locator('h1').count()).toBe(1);
      await after.close();
    }
  });

  it('made no request to any address but the test server and the merchant', () => {
    expect(offsite).toEqual([]);
  });
});

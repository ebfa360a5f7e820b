/**
 * The built docs (server/site, from `npm run build`) in headless Chromium, served by the
 * reference server on loopback with every other address blocked: the API reference renders its operations
 * and webhooks, the sandbox reference renders, and every error code's doc_url lands on
 * its section. Screenshots go to test-results/docs/ (git-ignored).
 *
 * @tags long
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDescription, repoRoot } from '../support/description.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { paced } from '../support/pace.ts';

const docsDir = path.join(repoRoot, 'server/site');
const shots = path.join(repoRoot, 'test-results/docs');
let server: TestServer;
let browser: Browser;
/** Every request the pages tried to make off the docs server. */
const offsite: string[] = [];

async function open(pathname: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(server.url) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
    offsite.push(url);
    return route.abort();
  });
  await page.goto(`${server.url}${pathname}`, { waitUntil: 'load' });
  return page;
}

/** True when a heading starting with this text (badges such as Deprecated may follow) is in the viewport. */
function headingInView(page: Page, text: string): Promise<boolean> {
  return page.evaluate((wanted) => {
    const heading = [...document.querySelectorAll('h1, h2, h3')].find((h) => h.textContent?.trim().startsWith(wanted));
    if (!heading) return false;
    const { top } = heading.getBoundingClientRect();
    return top >= 0 && top < window.innerHeight;
  }, text);
}

/** Every page of the site (the landing page, the references, the SDK's README, the error codes, the changelog), and whether Redoc draws it. */
const SITE_PAGES: Array<[pathname: string, redoc: boolean]> = [
  ['/', false],
  ['/docs/', true],
  ['/docs/sandbox/', true],
  ['/docs/client/', true],
  ['/docs/errors/', false],
  ['/docs/changelog/', false],
];

/**
 * The pages off the site its links may lead to, each a page that exists: Redoc's credit in
 * its sidebar, and what the SDK's README cites. The packages are on no registry yet, so no
 * registry page is among them.
 */
const EXTERNAL_PAGES = new Set(['https://redocly.com/redoc/', 'https://openapi-ts.dev/openapi-fetch/']);

/**
 * Follows the links of the site: says why one leads nowhere, or undefined. Off the site, a
 * page not on the allow-list; on it, an answer other than 200, an anchor no element of the
 * page has, or a Redoc route (`#/tag/operation`) that shows no section when followed.
 */
function linkFollower() {
  const answers = new Map<string, Promise<{ status: number; body: string }>>();
  const documents = new Map<string, Promise<Page>>();
  const answer = (at: URL) => {
    const key = at.pathname + at.search;
    if (!answers.has(key))
      answers.set(
        key,
        fetch(new URL(key, server.url)).then(async (r) => ({ status: r.status, body: await r.text() })),
      );
    return answers.get(key)!;
  };
  // One page per Redoc document, its routes followed by changing its address's fragment.
  const loaded = (at: URL) => {
    if (!documents.has(at.pathname)) documents.set(at.pathname, open(at.pathname));
    return documents.get(at.pathname)!;
  };
  return {
    async problem(url: URL): Promise<string | undefined> {
      if (url.origin !== new URL(server.url).origin)
        return EXTERNAL_PAGES.has(url.href) ? undefined : 'off the site, and not an allow-listed page';
      const { status, body } = await answer(url);
      if (status !== 200) return `answered ${status}`;
      const anchor = decodeURIComponent(url.hash.slice(1));
      if (!anchor) return undefined;
      if (!anchor.startsWith('/')) return body.includes(`id="${anchor}"`) ? undefined : `no id="${anchor}" on the page`;
      const page = await loaded(url);
      await page.evaluate((hash) => {
        window.location.hash = hash;
      }, url.hash);
      const section = page.locator(`[data-section-id="${anchor}"]`);
      return expect
        .poll(() => section.count(), { message: url.href })
        .toBeGreaterThan(0)
        .then(
          () => undefined,
          () => `no section ${anchor} shows`,
        );
    },
    async close() {
      for (const page of documents.values()) await (await page).close();
    },
  };
}

/** Error codes as the descriptions document them (x-error-status maps). */
function documentedCodes(): string[] {
  return [loadDescription('openapi'), loadDescription('sandbox')].flatMap((doc) =>
    Object.values<any>(doc.components.schemas).flatMap((s) => Object.keys(s['x-error-status'] ?? {})),
  );
}

beforeAll(async () => {
  if (!existsSync(path.join(docsDir, 'index.html')))
    throw new Error('server/site is missing: run `npm run build` first.');
  await mkdir(shots, { recursive: true });
  server = await startTestServer({ docsDir });
  browser = await launchChromium();
}, paced(60_000));

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('docs in a browser', () => {
  it(
    'renders every operation and webhook of the public API, reached from the sidebar',
    async () => {
      const page = await open('/docs/');
      await expect.poll(() => page.title()).toBe('Payment Service API');
      const doc = loadDescription('openapi');
      const operations = [
        ...Object.values<any>(doc.paths).flatMap((item) => Object.values<any>(item)),
        ...Object.values<any>(doc.webhooks).flatMap((item) => Object.values<any>(item)),
      ];
      expect(operations.length).toBe(9);
      const sidebar = page.locator('[data-component-name="Menu/MenuItem"]');
      for (const tag of doc.tags.map((t: any) => t.name)) {
        await sidebar.getByText(tag, { exact: true }).first().click();
        for (const op of operations.filter((o) => o.tags.includes(tag))) {
          // The tag's items may still be opening when first clicked, and Redoc then keeps the
          // tag's address: click until the page goes to the operation.
          const item = sidebar.getByText(op.summary, { exact: true }).first();
          await expect
            .poll(
              async () => {
                await item.click();
                return page.url();
              },
              { message: op.operationId },
            )
            .toContain(op.operationId.toLowerCase());
          await expect.poll(() => headingInView(page, op.summary), { message: op.summary }).toBe(true);
        }
      }
      await page.screenshot({ path: path.join(shots, 'api-reference-webhook.png') });
      await page.close();
    },
    paced(90_000),
  );

  it(
    'shows a create operation with its Idempotency-Key and its 400 error examples',
    async () => {
      const page = await open('/docs/');
      const sidebar = page.locator('[data-component-name="Menu/MenuItem"]');
      await sidebar.getByText('Checkout sessions', { exact: true }).first().click();
      await sidebar.getByText('Create a checkout session', { exact: true }).first().click();
      await expect.poll(() => headingInView(page, 'Create a checkout session')).toBe(true);
      expect(await page.locator('main').innerText()).toContain('Idempotency-Key');
      await page.getByRole('tab', { name: '400', exact: true }).first().click();
      await expect.poll(() => page.locator('main').innerText()).toContain('validation_failed');
      await page.screenshot({ path: path.join(shots, 'api-reference-create-400.png') });
      await page.close();
    },
    paced(60_000),
  );

  it(
    'renders the sandbox API reference',
    async () => {
      const page = await open('/docs/sandbox/');
      await expect.poll(() => page.title()).toBe('Payment Service Sandbox API');
      const doc = loadDescription('sandbox');
      const sidebar = page.locator('[data-component-name="Menu/MenuItem"]');
      for (const tag of doc.tags.map((t: any) => t.name)) {
        await expect.poll(() => sidebar.getByText(tag, { exact: true }).count(), tag).toBeGreaterThan(0);
      }
      await sidebar.getByText(doc.tags[0].name, { exact: true }).first().click();
      const first = Object.values<any>(doc.paths)
        .flatMap((item) => Object.values<any>(item))
        .find((op) => op.tags.includes(doc.tags[0].name));
      await sidebar.getByText(first.summary, { exact: true }).first().click();
      await expect.poll(() => headingInView(page, first.summary)).toBe(true);
      await page.screenshot({ path: path.join(shots, 'sandbox-reference.png') });
      await page.close();
    },
    paced(60_000),
  );

  it('has a section with id="<code>" for every documented error code', async () => {
    const page = await open('/docs/errors/');
    const codes = documentedCodes();
    expect(codes.length).toBeGreaterThanOrEqual(13);
    for (const code of codes) {
      expect(await page.locator(`section[id="${code}"]`).count(), code).toBe(1);
    }
    await page.close();
  });

  it('scrolls errors/#validation_failed to its section', async () => {
    const page = await open('/docs/errors/#validation_failed');
    const section = page.locator('#validation_failed');
    await expect
      .poll(() => section.evaluate((el) => Math.round(el.getBoundingClientRect().top)))
      .toBeLessThanOrEqual(5);
    expect(await page.evaluate(() => window.scrollY)).toBeGreaterThan(0);
    expect(await section.innerText()).toMatch(/HTTP 400/);
    await page.screenshot({ path: path.join(shots, 'errors-validation_failed.png') });
    await page.close();
  });

  it('links the error codes from both Redoc pages, and back', async () => {
    const page = await open('/docs/');
    await page.locator('main').getByRole('link', { name: 'error codes', exact: true }).first().click();
    await expect.poll(() => page.url()).toBe(`${server.url}/docs/errors/`);
    await page.getByRole('link', { name: 'Sandbox API reference', exact: true }).first().click();
    await expect.poll(() => page.title()).toBe('Payment Service Sandbox API');
    await page.locator('main').getByRole('link', { name: 'error codes', exact: true }).first().click();
    await expect.poll(() => page.url()).toBe(`${server.url}/docs/errors/`);
    await page.getByRole('link', { name: 'API reference', exact: true }).first().click();
    await expect.poll(() => page.title()).toBe('Payment Service API');
    await page.close();
  });

  it('styles the error-code and landing pages as the Redoc pages: font, size, line height, colour, heading', async () => {
    const look = async (pathname: string, text: string) => {
      const page = await open(pathname);
      await page.locator('p', { hasText: text }).first().waitFor();
      const style = await page.evaluate((wanted) => {
        const paragraph = [...document.querySelectorAll('p')].find((p) => p.textContent?.includes(wanted))!;
        const body = getComputedStyle(paragraph);
        const heading = getComputedStyle(document.querySelector('h1')!);
        return {
          font: body.fontFamily,
          size: body.fontSize,
          lineHeight: body.lineHeight,
          colour: body.color,
          heading: [heading.fontSize, heading.fontWeight],
        };
      }, text);
      await page.screenshot({ path: path.join(shots, `${pathname.replace(/\W+/g, '-')}look.png`) });
      await page.close();
      return style;
    };
    const redoc = await look('/docs/', 'A payment-collection service');
    expect(redoc.size).toBe('14px');
    expect(await look('/docs/errors/', 'Every error body')).toEqual(redoc);
    expect(await look('/', 'This server answers')).toEqual(redoc);
  });

  it('the landing page links every page of the docs', async () => {
    const page = await open('/');
    for (const [name, title] of <const>[
      ['API reference', 'Payment Service API'],
      ['Sandbox API reference', 'Payment Service Sandbox API'],
      ['TypeScript SDK', 'TypeScript SDK · Payment Service API'],
      ['Error codes', 'Error codes · Payment Service API'],
      ['Changelog', 'Changelog · Payment Service API'],
    ]) {
      await page.locator('nav').getByRole('link', { name, exact: true }).click();
      await expect.poll(() => page.title(), { message: name }).toBe(title);
      await page.goBack();
    }
    await page.close();
  });

  it('shows the contract’s changelog, release by release, each linked from the sidebar and fitting a screen', async () => {
    const page = await open('/docs/changelog/');
    await expect.poll(() => page.title()).toBe('Changelog · Payment Service API');
    await page.locator('nav').getByRole('link', { name: '0.1.0', exact: true }).click();
    await expect.poll(() => page.locator('#v0\\.1\\.0 h2').innerText()).toBe('0.1.0');
    expect(await page.locator('#v0\\.1\\.0').innerText()).toMatch(/First release/);
    // Each release reads in a screen, what is folded (the places of words-only changes) left
    // folded; only what breaks someone may take more, as every breaking change stays in view.
    const sections = await page.locator('main section').evaluateAll((all) =>
      all.map((s) => ({
        id: s.id,
        height: s.getBoundingClientRect().height,
        text: (s as HTMLElement).innerText,
        breaking: [...s.querySelectorAll('h3')].some((h) => h.textContent === 'Breaking'),
      })),
    );
    expect(sections.length).toBeGreaterThan(0);
    for (const { id, height, text, breaking } of sections) {
      if (!breaking) expect(height, id).toBeLessThanOrEqual(900);
      // Sentences, not the diff library's notation.
      expect(text, id).not.toMatch(/\[(Added|Removed|Replaced)\]|annotation \(|content \(application\/json\)/);
    }
    await page.screenshot({ path: path.join(shots, 'changelog.png'), fullPage: true });
    await page.close();
  });

  it(
    'quotes the descriptions in search results with a space where their lines break: "send the" finds "send the payer"',
    async () => {
      const page = await open('/docs/');
      const sidebar = page.locator('[data-component-name="Menu/MenuItem"]');
      await expect.poll(() => sidebar.count()).toBeGreaterThan(3);
      await page.keyboard.press('Control+k');
      // The create operation's description breaks its line between "send" and "the payer".
      await page.locator('[data-component-name="Search/SearchInput"] input').fill('send the');
      const results = page.locator('[data-component-name="Search/SearchItem"]');
      await expect.poll(() => results.allInnerTexts().then((texts) => texts.join('\n'))).toContain('send the payer');
      await page.locator('[data-component-name="Search/SearchInput"] input').fill('browser is sent');
      await expect
        .poll(() => results.allInnerTexts().then((texts) => texts.join('\n')))
        .toContain("payer's browser is sent");
      const quoted = (await results.allInnerTexts()).join('\n');
      expect(quoted).not.toMatch(/sendthe|payer'sbrowser/);
      await page.screenshot({ path: path.join(shots, 'search.png') });
      await page.close();
    },
    paced(60_000),
  );

  it(
    'links only pages that exist: every link of every page resolves inside the site (its anchors and Redoc’s sections included), or is an external page of the allow-list',
    async () => {
      const follower = linkFollower();
      const checked = new Set<string>();
      const broken: string[] = [];
      for (const [start, redoc] of SITE_PAGES) {
        const page = await open(start);
        if (redoc)
          await expect.poll(() => page.locator('[data-component-name="Menu/MenuItem"]').count()).toBeGreaterThan(0);
        const hrefs = new Map<string, string>();
        const collect = async () => {
          for (const [url, href] of await page.evaluate(() =>
            [...document.querySelectorAll('a[href]')].map((a) => [
              (a as HTMLAnchorElement).href,
              a.getAttribute('href')!,
            ]),
          ))
            hrefs.set(url!, href!);
        };
        // Redoc draws its sections as they come into view: the page is read down to its end.
        for (let seen = -1, y = 0; redoc && y !== seen; ) {
          await collect();
          seen = y;
          y = await page.evaluate(() => {
            window.scrollBy(0, window.innerHeight);
            return window.scrollY;
          });
          await page.waitForTimeout(150);
        }
        await collect();
        await page.close();
        for (const [url, href] of hrefs) {
          if (checked.has(url)) continue;
          checked.add(url);
          const problem = await follower.problem(new URL(url));
          if (problem) broken.push(`${start}: ${href} (${problem})`);
        }
      }
      await follower.close();
      expect(broken).toEqual([]);
      expect(checked.size).toBeGreaterThan(60);
    },
    paced(180_000),
  );

  it(
    'renders every page under its Content-Security-Policy, with no violation reported (Redoc and its search worker included)',
    async () => {
      for (const [pathname, ready] of <const>[
        ['/docs/', 'Payment Service API'],
        ['/docs/sandbox/', 'Payment Service Sandbox API'],
        ['/docs/client/', 'TypeScript SDK · Payment Service API'],
        ['/docs/errors/', 'Error codes · Payment Service API'],
        ['/docs/changelog/', 'Changelog · Payment Service API'],
        ['/', 'Payment Service reference server'],
      ]) {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        const violations: string[] = [];
        await page.exposeFunction('reportViolation', (text: string) => violations.push(text));
        await page.addInitScript(() =>
          document.addEventListener('securitypolicyviolation', (e) =>
            (window as unknown as { reportViolation(t: string): void }).reportViolation(
              `${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`,
            ),
          ),
        );
        page.on('console', (m) => {
          if (/Content.Security.Policy/i.test(m.text())) violations.push(m.text());
        });
        const response = await page.goto(`${server.url}${pathname}`, { waitUntil: 'load' });
        const policy = response?.headers()['content-security-policy'] ?? '';
        expect(policy, pathname).toContain("default-src 'none'");
        expect(policy, pathname).toContain("frame-ancestors 'none'");
        // Scripts by their hashes only: an injected one does not run. (Redoc's search worker needs eval.)
        expect(policy.match(/script-src[^;]*/)?.[0] ?? '', pathname).not.toContain("'unsafe-inline'");
        // The Redoc pages run scripts; the others are plain pages.
        const redoc = pathname === '/docs/' || pathname === '/docs/sandbox/' || pathname === '/docs/client/';
        if (!redoc) expect(policy, pathname).not.toContain('script-src');
        await expect.poll(() => page.title(), { message: pathname }).toBe(ready);
        if (redoc) {
          // Rendered by its script; its search index (built in a worker as the page loads) has had time to start.
          const sidebar = page.locator('[data-component-name="Menu/MenuItem"]');
          await expect.poll(() => sidebar.count(), { message: pathname }).toBeGreaterThan(3);
          await page.waitForTimeout(1000);
        }
        expect(violations, pathname).toEqual([]);
        await page.close();
      }
    },
    paced(60_000),
  );

  it('fits the landing page and its example to a phone screen, the example setting the token it uses', async () => {
    const page = await browser.newPage({ viewport: { width: 360, height: 740 } });
    await page.goto(`${server.url}/`, { waitUntil: 'load' });
    const widths = await page.evaluate(() => ({
      page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
      examples: [...document.querySelectorAll('pre')].map((pre) => [pre.scrollWidth, pre.clientWidth]),
    }));
    await page.screenshot({ path: path.join(shots, 'landing-phone.png'), fullPage: true });
    expect(widths.page[0]).toBeLessThanOrEqual(widths.page[1]!);
    expect(widths.examples.length).toBe(1);
    for (const [scroll, client] of widths.examples) expect(scroll).toBeLessThanOrEqual(client!);
    const example = await page.locator('pre').innerText();
    expect(example).toMatch(/^TOKEN=\$\(curl .*\/api\/token/m);
    expect(example.indexOf('TOKEN=')).toBeLessThan(example.indexOf('$TOKEN'));
    await page.close();
  });

  it.each([
    ['the error codes', '/docs/errors/'],
    [
      'the reference, at an operation with error examples and code samples',
      '/docs/#tag/Checkout-sessions/operation/createCheckoutSession',
    ],
  ])('fits %s to a phone screen: examples wrap instead of scrolling sideways', async (name, url) => {
    const page = await browser.newPage({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
    await page.goto(`${server.url}${url}`, { waitUntil: 'load' });
    await page.locator('pre').first().waitFor();
    const widths = await page.evaluate(() => ({
      page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
      examples: [...document.querySelectorAll('pre')]
        .filter((pre) => pre.getBoundingClientRect().width > 0)
        .map((pre) => [pre.scrollWidth, pre.clientWidth, pre.textContent!.slice(0, 40)] as const),
    }));
    await page.screenshot({ path: path.join(shots, `phone-${name.split(' ')[1]}.png`) });
    expect(widths.page[0], name).toBeLessThanOrEqual(widths.page[1]!);
    expect(widths.examples.length).toBeGreaterThan(0);
    const sideways = widths.examples.filter(([scroll, client]) => scroll > client + 1);
    expect(sideways).toEqual([]);
    await page.close();
  });

  it('shows each operation’s code samples, curl and the TypeScript SDK, and links the SDK and the signature vectors', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${server.url}/docs/#tag/Checkout-sessions/operation/createCheckoutSession`, { waitUntil: 'load' });
    const operation = page.locator('[data-section-id="/checkout-sessions/createcheckoutsession"]');
    // The curl sample first; the language menu switches to the SDK's.
    await operation.getByText('Idempotency-Key: order-1001', { exact: false }).first().waitFor();
    await operation.getByRole('button', { name: 'curl' }).first().click();
    await page.getByText('TypeScript SDK', { exact: true }).first().click();
    await operation.getByText('pay.createCheckoutSession(', { exact: false }).first().waitFor();
    await page.goto(`${server.url}/docs/`, { waitUntil: 'load' });
    await page.locator('a[href="webhook-signature-vectors.json"]').first().waitFor();
    const vectors = await fetch(`${server.url}/docs/webhook-signature-vectors.json`);
    expect(vectors.status).toBe(200);
    expect(((await vectors.json()) as { vectors: unknown[] }).vectors.length).toBeGreaterThan(10);
    expect(await page.getByText('npm install @payment-service/client').count()).toBeGreaterThan(0);
    await page.close();
  });

  it('made no request off the local docs server (works offline)', () => {
    expect(offsite).toEqual([]);
  });
});

/**
 * The pages the server renders beside the API (server/README.md, "What it serves"): the landing
 * page at / and the error-code page, over HTTP, and how a hosted payment page follows its
 * payment (a pending one reloads itself, a completed one leads back to the merchant).
 * Their look and links in a browser are in test/e2e/docs.browser.test.ts and
 * test/e2e/hosted-page.browser.test.ts.
 *
 * @tags postgres
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TOKEN, sessionRequest, startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
let off: TestServer;

beforeAll(async () => {
  [t, off] = await Promise.all([startTestServer(), startTestServer({ sandboxToken: false })]);
});
afterAll(async () => {
  await Promise.all([t.close(), off.close()]);
});

/** The href of every link on a page. */
const links = (html: string) => [...html.matchAll(/<a [^>]*href="([^"]+)"/g)].map((m) => m[1]);

describe('the landing page', () => {
  it('answers GET / with HTML that links the API reference, the sandbox reference, the error codes and health', async () => {
    const res = await fetch(`${t.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await res.text();
    expect(links(html)).toEqual(expect.arrayContaining(['/docs/', '/docs/sandbox/', '/docs/errors/', '/healthz']));
    expect(html).toContain(`${t.url}/api/`);
    for (const href of new Set(links(html))) {
      expect((await fetch(new URL(href!, t.url))).status, href).toBe(200);
    }
  });

  it('names no secret: not the sandbox token, whose place is the start-up output', async () => {
    const html = await (await fetch(`${t.url}/`)).text();
    expect(html).not.toContain(SANDBOX_TOKEN);
    expect(html).toMatch(/printed\s+when the server started/);
  });

  it('shows how the token its example uses is set, before it is used', async () => {
    const html = await (await fetch(`${t.url}/`)).text();
    const example = html.match(/<pre[^>]*><code>([\s\S]*?)<\/code><\/pre>/)![1]!;
    expect(example).toMatch(/^TOKEN=\$\(curl -s -X POST \S+\/api\/token /m);
    expect(example.indexOf('TOKEN=$(')).toBeLessThan(example.indexOf('Bearer $TOKEN'));
    expect(example.indexOf('CLIENT_ID=')).toBeLessThan(example.indexOf('$CLIENT_ID'));
  });

  it('says when the sandbox API is off', async () => {
    const html = await (await fetch(`${off.url}/`)).text();
    expect(html).toContain('The sandbox API is off on this server.');
  });

  it('answers HEAD as GET without a body, and other methods 405 with Allow, in the envelope', async () => {
    const head = await fetch(`${t.url}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    const post = await t.request('POST', '/', { body: {}, undocumented: true });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect(post.body.error.code).toBe('method_not_allowed');
  });
});

describe('the error-code page', () => {
  it('links back to both references, and every code in its sidebar lands on a section of its own', async () => {
    const html = await (await fetch(`${t.url}/docs/errors/`)).text();
    const hrefs = links(html);
    expect(hrefs).toEqual(expect.arrayContaining(['../', '../sandbox/']));
    const anchors = hrefs.filter((h) => h!.startsWith('#'));
    expect(anchors.length).toBeGreaterThanOrEqual(13);
    for (const anchor of anchors) expect(html).toContain(`<section class="card" id="${anchor!.slice(1)}"`);
  });
});

describe('a hosted payment page following its payment', () => {
  const REFRESH = /<meta http-equiv="refresh" content="(\d+); url=([^"]+)">/;

  async function pendingSession() {
    const org = await t.organisation();
    const created = await t.request('POST', '/api/checkout-sessions', {
      token: org.testToken,
      body: sessionRequest({ redirectUrl: 'https://shop.example.com/done?order=1001&lang=en' }),
    });
    return created.body as { id: string; url: string };
  }

  it('reloads itself, at its own address, while the payment is pending, and says the outcome will show', async () => {
    const session = await pendingSession();
    expect((await (await fetch(session.url)).text()).match(REFRESH), 'not yet attempted').toBeNull();
    await t.sandbox('POST', `/sandbox/checkout-sessions/${session.id}/attempts`, { rail: 'card', outcome: 'pending' });
    for (const address of [session.url, `${session.url}?result=pending`]) {
      const html = await (await fetch(address)).text();
      const refresh = html.match(REFRESH);
      expect(refresh, address).not.toBeNull();
      expect(Number(refresh![1])).toBeLessThanOrEqual(5);
      expect(refresh![2]).toBe(`/pay/${session.id}`);
      expect(html).toMatch(/<p class="status" role="status">The payment is being processed/);
    }
  });

  it('once completed stops reloading, and links back to the redirectUrl with the ids, as the redirect after paying does', async () => {
    const session = await pendingSession();
    await t.sandbox('POST', `/sandbox/checkout-sessions/${session.id}/attempts`, { rail: 'card', outcome: 'pending' });
    const paid = await t.sandbox('POST', `/sandbox/checkout-sessions/${session.id}/attempts`, {
      rail: 'card',
      outcome: 'succeeded',
    });
    const html = await (await fetch(session.url)).text();
    expect(html).toContain('<h1>Payment complete</h1>');
    expect(html.match(REFRESH)).toBeNull();
    const back = html.match(/<a class="return" href="([^"]+)">([^<]+)<\/a>/);
    expect(back).not.toBeNull();
    expect(back![1]!.replaceAll('&#38;', '&')).toBe(paid.redirectTo);
    const url = new URL(paid.redirectTo);
    expect([
      url.origin + url.pathname,
      url.searchParams.get('order'),
      url.searchParams.get('checkoutSessionId'),
    ]).toEqual(['https://shop.example.com/done', '1001', session.id]);
  });
});

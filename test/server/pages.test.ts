/**
 * The pages the server renders beside the API (design, "Reference server"): the landing
 * page at / and the error-code page, over HTTP. Their look and links in a browser are in
 * test/e2e/docs.browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';

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

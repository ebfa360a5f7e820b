/**
 * The browser-facing protections every answer carries, and the Content-Security-Policy of
 * each kind of page. Set on Node's response as a request arrives (http/server.ts), so the
 * JSON answers the Responder writes past Koa, the pages and the errors all carry them; a
 * page replaces the default policy with its own.
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/**
 * The policy of anything that is not one of the pages below (JSON, images, a page not
 * yet given its own): nothing may load, nothing may frame it.
 */
const DEFAULT_POLICY = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * On every answer. `no-referrer`: a hosted page's address is the payment's capability
 * (its id), so it is never sent on to the merchant's site or anywhere else; X-Frame-Options
 * for browsers that predate frame-ancestors.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'content-security-policy': DEFAULT_POLICY,
};

export function secure(res: ServerResponse): void {
  for (const name in SECURITY_HEADERS) res.setHeader(name, SECURITY_HEADERS[name]!);
}

/** The raw header lines of SECURITY_HEADERS, for answers written to the socket directly. */
export const SECURITY_HEADER_LINES = Object.entries(SECURITY_HEADERS)
  .map(([name, value]) => `${name}: ${value}\r\n`)
  .join('');

/** The pages the server renders itself beside the docs (landing, error codes): inline styles, no script, no form. */
export const PAGE_POLICY =
  "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The Redoc pages: `redocly build-docs --inlineBundle` writes its bundle and the theme
 * switch as inline scripts, so each is allowed by its hash (no 'unsafe-inline', so an
 * injected script still cannot run). Redoc injects its styles at run time
 * (styled-components) and draws data: images; its search (FlexSearch) runs in a worker
 * made from a blob: URL and built from its own source text with Function(), so the page
 * needs 'unsafe-eval' (without it the search probes, is refused, and falls back to the
 * main thread: a violation reported on every load). Nothing on these pages is evaluated
 * from the request or the description. It loads nothing from elsewhere (the docs work
 * offline).
 */
export function redocPolicy(html: string): string {
  const hashes = inlineScripts(html).map((text) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`);
  // A page of the site without scripts (the changelog) is a plain page.
  if (hashes.length === 0) return PAGE_POLICY;
  return [
    "default-src 'none'",
    `script-src ${hashes.join(' ')} 'unsafe-eval'`,
    "style-src 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    'worker-src blob:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * The text of each inline script, as the HTML parser reads it: a script element ends at
 * the first `</script` whatever it sits in, so the bundles write theirs as `<\/script`.
 */
function inlineScripts(html: string): string[] {
  const texts: string[] = [];
  const open = /<script\b([^>]*)>/gi;
  const close = /<\/script/gi;
  for (let match = open.exec(html); match; match = open.exec(html)) {
    close.lastIndex = open.lastIndex;
    const end = close.exec(html);
    if (!end) break;
    // The parser hashes the text after its newline normalisation (CR LF and CR become LF).
    if (!/\bsrc\s*=/i.test(match[1]!)) texts.push(html.slice(open.lastIndex, end.index).replace(/\r\n?/g, '\n'));
    open.lastIndex = close.lastIndex;
  }
  return texts;
}

/**
 * Builds the documentation site that the server package serves under /docs/, for offline
 * use (`npm run build` runs it):
 *
 *   server/site/index.html          the public API (Redoc, scripts inlined)
 *   server/site/sandbox/index.html  the sandbox API (Redoc, scripts inlined)
 *   server/site/errors/index.html   one section per error code, id="<code>", so that every
 *                                   error's doc_url ({docs_url}/errors/#<code>) lands on it
 *
 * Reads the bundled descriptions in generated/ (run `npm run generate` first).
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { collectErrorCodes, renderErrorPage } from '../server/docs/error-page.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'server/site');
const run = promisify(execFile);

/**
 * Redoc's sidebar credit shows a logo fetched from Redocly's CDN; offline, and for readers
 * who should not be tracked, the same credit shows a local image instead.
 */
const CDN_LOGOS = /https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(-full)?\.svg/g;
const LOCAL_LOGO = `data:image/svg+xml,${encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" width="56" height="14"><text x="0" y="11" font-family="sans-serif" font-size="11" fill="#555">Redocly</text></svg>',
)}`;

async function redoc(api: string, file: string, title: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  // --inlineBundle embeds Redoc itself; without it the page loads Redoc from a CDN.
  await run(
    path.join(root, 'node_modules/.bin/redocly'),
    ['build-docs', api, '--inlineBundle', '--title', title, '--output', file],
    { cwd: root, env: { ...process.env, REDOCLY_SUPPRESS_NOTIFICATIONS: 'true' } },
  );
  const html = await readFile(file, 'utf8');
  await writeFile(file, html.replace(CDN_LOGOS, LOCAL_LOGO));
}

async function readJson(file: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(path.join(root, file), 'utf8')) as Record<string, unknown>;
}

async function main(): Promise<void> {
  const [publicApi, sandboxApi] = await Promise.all([readJson('generated/openapi.json'), readJson('generated/sandbox.json')]);
  await Promise.all([
    redoc('public', path.join(out, 'index.html'), 'Payment Service API'),
    redoc('sandbox', path.join(out, 'sandbox/index.html'), 'Payment Service Sandbox API'),
  ]);
  const codes = collectErrorCodes([publicApi, sandboxApi]);
  await mkdir(path.join(out, 'errors'), { recursive: true });
  await writeFile(path.join(out, 'errors/index.html'), renderErrorPage(codes));
  console.log(`docs written to ${path.relative(root, out)}/ (${codes.length} error codes)`);
}

await main();

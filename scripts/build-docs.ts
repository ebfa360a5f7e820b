/**
 * Builds the documentation site that the server package serves under /docs/, for offline
 * use (`npm run build` runs it; `npm run docs -- --force` rebuilds regardless, and
 * `--out DIR` writes elsewhere):
 *
 *   server/site/index.html          the public API (Redoc, scripts inlined)
 *   server/site/sandbox/index.html  the sandbox API (Redoc, scripts inlined)
 *   server/site/errors/index.html   one section per error code, id="<code>", so that every
 *                                   error's doc_url ({docs_url}/errors/#<code>) lands on it
 *   server/site/changelog/index.html  the contract's changes, release by release (RELEASING.md)
 *   server/site/client/index.html   the TypeScript SDK's README (client/README.md), which the
 *                                   reference links: the package is not on a registry to read it on
 *   server/site/webhook-signature-vectors.json   the signature test vectors the docs link
 *
 * The public API's page shows the code samples of examples/samples/ (x-codeSamples). Its
 * search quotes the descriptions with a space where a line or a block ends
 * (scripts/docs-search-text.ts).
 *
 * Reads the bundled descriptions in generated/. Nothing is rebuilt when none of the inputs
 * (the descriptions, the page renderers, this script, Redocly's version) changed since
 * the last build: their hash is kept beside the pages, in site/.inputs.json.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { type ChangelogRelease, renderChangelogPage } from '../server/docs/changelog-page.ts';
import { collectErrorCodes, renderErrorPage } from '../server/docs/error-page.ts';
import { changelogBetween, releases } from './compat/releases.ts';
import { spaceSearchText } from './docs-search-text.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: flags } = parseArgs({ options: { out: { type: 'string' }, force: { type: 'boolean' } } });
const out = path.resolve(root, flags.out ?? 'server/site');
const stamp = path.join(out, '.inputs.json');
const run = promisify(execFile);

const SAMPLES = path.join(root, 'examples/samples');

const INPUTS = [
  'generated/openapi.json',
  'generated/sandbox.json',
  'openapi/webhook-signature-vectors.json',
  'redocly.yaml',
  'scripts/build-docs.ts',
  'scripts/docs-search-text.ts',
  'server/docs/error-page.ts',
  'server/docs/changelog-page.ts',
  'scripts/compat/changelog.ts',
  'scripts/compat/contract-diff.ts',
  'scripts/compat/releases.ts',
  ...readdirSync(path.join(root, 'releases/contract'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
    .sort(),
  'server/docs/theme.ts',
  'client/README.md',
  'client/package.json',
  'node_modules/@redocly/cli/package.json',
  ...readdirSync(SAMPLES, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
    .sort(),
];

/** A code sample of examples/samples/, as Redoc's `x-codeSamples` takes it. */
async function sample(lang: string, label: string, file: string): Promise<Json> {
  return { lang, label, source: (await readFile(path.join(SAMPLES, file), 'utf8')).trimEnd() };
}

/**
 * The description with its code samples (tested by test/docs-samples.test.ts): a curl line
 * and the SDK call for every operation, and the signature check in three languages on the
 * webhook that is signed.
 */
async function withCodeSamples(doc: Json): Promise<Json> {
  const paths = structuredClone(doc.paths) as Record<string, Record<string, Json>>;
  for (const item of Object.values(paths))
    for (const operation of Object.values(item)) {
      if (typeof operation?.operationId !== 'string') continue;
      operation['x-codeSamples'] = [
        await sample('Shell', 'curl', `curl/${operation.operationId}.sh`),
        await sample('TypeScript', 'TypeScript SDK', `sdk/${operation.operationId}.ts`),
      ];
    }
  const webhooks = structuredClone(doc.webhooks) as Record<string, Record<string, Json>>;
  const completed = webhooks['checkout_session.completed']?.post;
  if (!completed) throw new Error('generated/openapi.json has no checkout_session.completed webhook');
  completed['x-codeSamples'] = [
    await sample('TypeScript', 'TypeScript SDK', 'webhooks/verify-sdk.ts'),
    await sample('JavaScript', 'WebCrypto (JavaScript)', 'webhooks/verify-webcrypto.mjs'),
    await sample('Python', 'Python (standard library)', 'webhooks/verify.py'),
  ];
  return { ...doc, paths, webhooks };
}

/**
 * Redoc's sidebar credit shows a logo fetched from Redocly's CDN; offline, and for readers
 * who should not be tracked, the same credit shows a local image instead.
 */
const CDN_LOGOS = /https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(-full)?\.svg/g;
const LOCAL_LOGO = `data:image/svg+xml,${encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" width="56" height="14"><text x="0" y="11" font-family="sans-serif" font-size="11" fill="#555">Redocly</text></svg>',
)}`;

/**
 * On a phone, Redoc's code panels (request and response examples, code samples) would need
 * scrolling sideways, line by line: there, their lines wrap instead.
 */
const PHONE_STYLE =
  '<style>@media (max-width: 50rem) { pre, pre * { white-space: pre-wrap !important; overflow-wrap: anywhere; } }</style>';

/**
 * Redoc links its own sections (a group of the sidebar, the overview, the anchor beside a
 * heading) by a path from the host's root (`/authentication`, `/section/install`), which its
 * script turns into the page's own `#/authentication` when clicked; opened in a new tab or
 * copied, the same link leads to no page. Each such link of its router (`data-discover`) is
 * given, as it is drawn, the address a click goes to.
 */
const ROUTE_LINKS =
  '<script>(()=>{const fix=()=>{for(const a of document.querySelectorAll(\'a[data-discover][href^="/"]\'))a.setAttribute("href","#"+a.getAttribute("href"))};new MutationObserver(fix).observe(document.documentElement,{childList:true,subtree:true,attributes:true,attributeFilter:["href"]})})()</script>';

type Json = Record<string, unknown>;

/** The site's other pages, linked from the top of a Redoc page (its description's start). */
function withSiteLinks(doc: Json, links: string): Json {
  const info = doc.info as Json;
  return { ...doc, info: { ...info, description: `${links}\n\n${String(info.description ?? '')}` } };
}

async function redoc(doc: Json, file: string, title: string, scratch: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const input = path.join(scratch, `${path.basename(path.dirname(file))}.json`);
  await writeFile(input, JSON.stringify(doc));
  // --inlineBundle embeds Redoc itself; without it the page loads Redoc from a CDN.
  await run(
    path.join(root, 'node_modules/.bin/redocly'),
    ['build-docs', input, '--inlineBundle', '--title', title, '--output', file],
    { cwd: root, env: { ...process.env, REDOCLY_SUPPRESS_NOTIFICATIONS: 'true' } },
  );
  const html = await readFile(file, 'utf8');
  await writeFile(
    file,
    spaceSearchText(html).replace(CDN_LOGOS, LOCAL_LOGO).replace('</head>', `${PHONE_STYLE}${ROUTE_LINKS}</head>`),
  );
}

/** The SDK's README as a page of the site: its words are the description of an API with no operation. */
async function clientReadme(links: string): Promise<Json> {
  const readme = await readFile(path.join(root, 'client/README.md'), 'utf8');
  const { name, version } = JSON.parse(await readFile(path.join(root, 'client/package.json'), 'utf8')) as Json;
  return withSiteLinks(
    {
      openapi: '3.1.0',
      // Its own title heads the page: the README's first heading would say it twice.
      info: { title: `TypeScript SDK (${String(name)})`, version, description: readme.replace(/^# .*\n+/, '') },
      paths: {},
    },
    links,
  );
}

/** The contract's releases, newest first, each with its changes since the one before; and what is not released yet. */
function changelog(): ChangelogRelease[] {
  const versions = releases('contract');
  const entries: ChangelogRelease[] = versions.map((version, i) =>
    i === 0
      ? { version, text: 'First release: the description as it stood.' }
      : { version, since: versions[i - 1], text: changelogBetween(versions[i - 1]!, version).text },
  );
  const last = versions.at(-1);
  const pending = last ? changelogBetween(last, 'current') : undefined;
  if (pending && pending.changes.length > 0) entries.push({ version: 'Unreleased', since: last, text: pending.text });
  return entries.reverse();
}

async function inputsHash(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of INPUTS)
    hash
      .update(file)
      .update('\0')
      .update(await readFile(path.join(root, file)))
      .update('\0');
  return hash.digest('hex');
}

async function main(): Promise<void> {
  const hash = await inputsHash();
  const built = await readFile(stamp, 'utf8').then(
    (text) => (JSON.parse(text) as { hash?: string }).hash,
    () => undefined,
  );
  if (built === hash && !flags.force) return;

  const read = async (file: string) => JSON.parse(await readFile(path.join(root, file), 'utf8')) as Json;
  const [publicApi, sandboxApi] = await Promise.all([read('generated/openapi.json'), read('generated/sandbox.json')]);
  const scratch = await mkdtemp(path.join(tmpdir(), 'docs-'));
  try {
    await rm(out, { recursive: true, force: true });
    await Promise.all([
      redoc(
        withSiteLinks(
          await withCodeSamples(publicApi),
          '**Also here:** [error codes](errors/) · [sandbox API reference](sandbox/) · [webhook signature test vectors](webhook-signature-vectors.json) · the TypeScript SDK: `npm install @payment-service/client` ([its README](client/))',
        ),
        path.join(out, 'index.html'),
        'Payment Service API',
        scratch,
      ),
      redoc(
        withSiteLinks(sandboxApi, '**Also here:** [error codes](../errors/) · [public API reference](../)'),
        path.join(out, 'sandbox/index.html'),
        'Payment Service Sandbox API',
        scratch,
      ),
      redoc(
        await clientReadme(
          '**Also here:** [API reference](../) · [error codes](../errors/) · [changelog](../changelog/)',
        ),
        path.join(out, 'client/index.html'),
        'TypeScript SDK · Payment Service API',
        scratch,
      ),
    ]);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  // Served beside the reference, so the docs can link the vectors they cite.
  await copyFile(
    path.join(root, 'openapi/webhook-signature-vectors.json'),
    path.join(out, 'webhook-signature-vectors.json'),
  );
  await mkdir(path.join(out, 'changelog'), { recursive: true });
  await writeFile(path.join(out, 'changelog/index.html'), renderChangelogPage(changelog()));
  const codes = collectErrorCodes([publicApi, sandboxApi]);
  await mkdir(path.join(out, 'errors'), { recursive: true });
  await writeFile(path.join(out, 'errors/index.html'), renderErrorPage(codes));
  await writeFile(stamp, `${JSON.stringify({ hash }, null, 2)}\n`);
  console.log(`docs written to ${path.relative(root, out)}/ (${codes.length} error codes)`);
}

await main();

/**
 * The error-code page: one section per documented error code, each with id="<code>", so
 * that `error.doc_url` (`{docs_url}/errors/#<code>`) lands on its explanation. The codes,
 * statuses and meanings are read from the descriptions (schemas carrying `x-error-status`
 * and `x-enumDescriptions`), never written here.
 */

import { escapeHtml, renderPage } from './theme.ts';

type Json = Record<string, unknown>;

export interface ErrorCodeEntry {
  code: string;
  status: number;
  meaning: string;
  example: unknown;
  /** "METHOD /path" of every operation whose documented responses show this code. */
  operations: string[];
  api: string;
}

/** What the document says about retrying, by status (Errors, HTTP statuses). */
const retryByStatus: Record<number, string> = {
  400: 'The request or the account configuration needs changing. Do not retry without a change.',
  401: 'Authentication failed. Only <code>token_expired</code> is worth retrying: fetch a new token and repeat the request once.',
  404: "No such resource, or it is not the caller's. Do not retry.",
  500: 'Service-side failure. Retry with exponential backoff; on a create, with the same Idempotency-Key.',
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

function asObject(value: unknown): Json {
  return value && typeof value === 'object' ? (value as Json) : {};
}

/** Resolves a local `#/components/...` reference inside one bundled description. */
function resolve(doc: Json, node: unknown): Json {
  const ref = asObject(node).$ref;
  if (typeof ref !== 'string' || !ref.startsWith('#/')) return asObject(node);
  return ref
    .slice(2)
    .split('/')
    .reduce<Json>((at, key) => asObject(at[key.replace(/~1/g, '/').replace(/~0/g, '~')]), doc);
}

function exampleCode(doc: Json, example: unknown): string | undefined {
  const code = asObject(asObject(resolve(doc, example).value).error).code;
  return typeof code === 'string' ? code : undefined;
}

/** Every response example in the description, as [operation, code, value]. */
function responseExamples(doc: Json): Array<{ operation: string; code: string; value: unknown }> {
  const found: Array<{ operation: string; code: string; value: unknown }> = [];
  for (const [route, item] of Object.entries(asObject(doc.paths))) {
    for (const method of METHODS) {
      const operation = asObject(asObject(item)[method]);
      for (const response of Object.values(asObject(operation.responses))) {
        const content = asObject(resolve(doc, response).content);
        for (const media of Object.values(content)) {
          for (const example of Object.values(asObject(asObject(media).examples))) {
            const code = exampleCode(doc, example);
            if (code)
              found.push({ operation: `${method.toUpperCase()} ${route}`, code, value: resolve(doc, example).value });
          }
        }
      }
    }
  }
  return found;
}

export function collectErrorCodes(docs: Json[]): ErrorCodeEntry[] {
  const entries = new Map<string, ErrorCodeEntry>();
  for (const doc of docs) {
    const api = String(asObject(doc.info).title ?? '');
    const examples = responseExamples(doc);
    for (const schema of Object.values(asObject(asObject(doc.components).schemas))) {
      const statuses = asObject(asObject(schema)['x-error-status']);
      const meanings = asObject(asObject(schema)['x-enumDescriptions']);
      for (const [code, status] of Object.entries(statuses)) {
        const uses = examples.filter((e) => e.code === code);
        const entry = entries.get(code) ?? {
          code,
          status: Number(status),
          meaning: String(meanings[code] ?? ''),
          example: uses[0]?.value,
          operations: [],
          api,
        };
        for (const use of uses) if (!entry.operations.includes(use.operation)) entry.operations.push(use.operation);
        entries.set(code, entry);
      }
    }
  }
  return [...entries.values()];
}

/** Inline `code` spans of the descriptions' Markdown, after escaping. */
function inlineMarkdown(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

function section(entry: ErrorCodeEntry): string {
  const code = escapeHtml(entry.code);
  const example =
    entry.example === undefined
      ? ''
      : `
      <h3>Example</h3>
      <pre><code>${escapeHtml(JSON.stringify(entry.example, null, 2))}</code></pre>`;
  const operations =
    entry.operations.length === 0
      ? ''
      : `
      <h3>Answered by</h3>
      <ul>${entry.operations.map((op) => `<li><code>${escapeHtml(op)}</code></li>`).join('')}</ul>`;
  const scope = entry.api.includes('Sandbox') ? ' <span class="muted">sandbox API only</span>' : '';
  return `
    <section class="card" id="${code}" aria-labelledby="${code}-title">
      <h2 id="${code}-title"><a href="#${code}">${code}</a></h2>
      <p class="status"><span class="badge">HTTP ${entry.status}</span>${scope}</p>
      <p>${inlineMarkdown(entry.meaning)}</p>
      <p class="retry"><strong>Retry:</strong> ${retryByStatus[entry.status] ?? 'See the API reference.'}</p>${operations}${example}
    </section>`;
}

/** The sidebar: the other pages of the docs, then the codes grouped by status. */
function sidebar(entries: ErrorCodeEntry[]): string {
  const statuses = [...new Set(entries.map((e) => e.status))].sort((a, b) => a - b);
  const groups = statuses.map((status) => {
    const items = entries
      .filter((e) => e.status === status)
      .map((e) => `<li><a href="#${escapeHtml(e.code)}"><code>${escapeHtml(e.code)}</code></a></li>`)
      .join('');
    return `
      <h2>HTTP ${status}</h2>
      <ul>${items}</ul>`;
  });
  return `
      <a class="home" href="./">Error codes</a>
      <ul>
        <li><a href="../">API reference</a></li>
        <li><a href="../sandbox/">Sandbox API reference</a></li>
      </ul>${groups.join('')}`;
}

export function renderErrorPage(entries: ErrorCodeEntry[]): string {
  return renderPage({
    title: 'Error codes · Payment Service API',
    sidebar: sidebar(entries),
    main: `
      <h1>Error codes</h1>
      <p>Every error body except the token endpoint's 400 and 401 is
      <code>{ "error": { "code", "message", "param", "doc_url" } }</code>. Branch on
      <code>error.code</code>, never on the message. <code>param</code> names the offending
      field, or is <code>null</code> when no single field is to blame. <code>details</code>
      appears on <code>validation_failed</code> only. Codes may be added later: handle an
      unknown code as a generic failure.</p>
      <p class="links"><a href="../">API reference</a><a href="../sandbox/">Sandbox API reference</a></p>
${entries.map(section).join('')}`,
  });
}

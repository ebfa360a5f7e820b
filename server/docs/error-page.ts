/**
 * The error-code page: one section per documented error code, each with id="<code>", so
 * that `error.doc_url` (`{docs_url}/errors/#<code>`) lands on its explanation. The codes,
 * statuses and meanings are read from the descriptions (schemas carrying `x-error-status`
 * and `x-enumDescriptions`), never written here.
 */

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
  404: 'No such resource, or it is not the caller\'s. Do not retry.',
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
            if (code) found.push({ operation: `${method.toUpperCase()} ${route}`, code, value: resolve(doc, example).value });
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

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Inline `code` spans of the descriptions' Markdown, after escaping. */
function inlineMarkdown(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

function section(entry: ErrorCodeEntry): string {
  const example = entry.example === undefined ? '' : `
      <h3>Example</h3>
      <pre><code>${escapeHtml(JSON.stringify(entry.example, null, 2))}</code></pre>`;
  const operations = entry.operations.length === 0 ? '' : `
      <h3>Answered by</h3>
      <ul>${entry.operations.map((op) => `<li><code>${escapeHtml(op)}</code></li>`).join('')}</ul>`;
  return `
    <section id="${escapeHtml(entry.code)}" aria-labelledby="${escapeHtml(entry.code)}-title">
      <h2 id="${escapeHtml(entry.code)}-title"><a href="#${escapeHtml(entry.code)}">${escapeHtml(entry.code)}</a></h2>
      <p class="status">HTTP ${entry.status}${entry.api.includes('Sandbox') ? ' &middot; sandbox API only' : ''}</p>
      <p>${inlineMarkdown(entry.meaning)}</p>
      <p class="retry"><strong>Retry:</strong> ${retryByStatus[entry.status] ?? 'See the API reference.'}</p>${operations}${example}
    </section>`;
}

export function renderErrorPage(entries: ErrorCodeEntry[]): string {
  const index = entries
    .map((e) => `<li><a href="#${escapeHtml(e.code)}"><code>${escapeHtml(e.code)}</code></a> (${e.status})</li>`)
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Error codes · Payment Service API</title>
  <style>
    body { font: 16px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 50rem; padding: 1rem 1.5rem 40vh; color: #1d1d1f; }
    code, pre { font-family: ui-monospace, monospace; }
    pre { background: #f4f4f6; padding: .75rem; overflow-x: auto; border-radius: 4px; }
    section { border-top: 1px solid #ddd; padding-top: .5rem; margin-top: 1.5rem; }
    section:target { outline: 3px solid #3b6fd8; outline-offset: .5rem; }
    .status { font-weight: 600; color: #555; margin: 0; }
    nav ul { columns: 2; }
  </style>
</head>
<body>
  <header>
    <h1>Error codes</h1>
    <p>Every error body except the token endpoint's 400 and 401 is
    <code>{ "error": { "code", "message", "param", "doc_url" } }</code>. Branch on
    <code>error.code</code>, never on the message. <code>param</code> names the offending
    field, or is <code>null</code> when no single field is to blame. <code>details</code>
    appears on <code>validation_failed</code> only. Codes may be added later: handle an
    unknown code as a generic failure.</p>
    <p><a href="../">API reference</a> &middot; <a href="../sandbox/">Sandbox API reference</a></p>
  </header>
  <nav aria-label="Error codes"><ul>${index}</ul></nav>
  <main>${entries.map(section).join('')}
  </main>
</body>
</html>
`;
}

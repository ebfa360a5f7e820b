/**
 * The look of the pages the server renders itself (the error-code page, the landing page),
 * taken from the Redoc pages beside them: the same system font stack, 14/22 px text, warm
 * grey palette, a 285 px sidebar and rounded cards, so that moving between the reference
 * and these pages does not feel like changing site. Everything is inline: the docs work
 * offline and load nothing from another host.
 */

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const CSS = `
  :root {
    --font: system-ui, -apple-system, BlinkMacSystemFont, 'Segoe UI', 'Roboto', 'Oxygen', 'Ubuntu', 'Cantarell', 'Fira Sans', 'Droid Sans', 'Helvetica Neue', Arial, sans-serif;
    --mono: ui-monospace, SFMono-Regular, Menlo, Monaco, Consolas, 'Liberation Mono', monospace;
    --text: #3b3c45; --text-secondary: #5c6270; --border: #e4e4e7; --layer: #f4f4f5;
    --sidebar-hover: #ededf0; --brand: #1f7cff; --link: #1a5fd6;
  }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/22px var(--font); color: var(--text); background: #fff; }
  a { color: var(--link); text-decoration: none; }
  a:hover { text-decoration: underline; }
  code, pre { font-family: var(--mono); font-size: 13px; }
  :not(pre) > code { background: var(--layer); border: 1px solid var(--border); border-radius: 4px; padding: 0 4px; overflow-wrap: anywhere; }
  pre { background: var(--layer); border: 1px solid var(--border); border-radius: 8px; padding: 12px 16px; overflow-x: auto; line-height: 20px; }
  pre.wrap { white-space: pre-wrap; overflow-wrap: anywhere; }
  h2 { overflow-wrap: anywhere; }
  .layout { display: flex; min-height: 100vh; }
  .sidebar { width: 285px; flex: none; border-right: 1px solid var(--border); padding: 16px; position: sticky; top: 0; height: 100vh; overflow-y: auto; }
  .sidebar h2 { font-size: 12px; line-height: 20px; text-transform: uppercase; letter-spacing: .04em; color: var(--text-secondary); margin: 16px 4px 4px; }
  .sidebar ul { list-style: none; margin: 0; padding: 0; }
  .sidebar li a { display: block; padding: 4px 20px; border-radius: 8px; color: var(--text); }
  .sidebar li a:hover { background: var(--sidebar-hover); text-decoration: none; }
  .sidebar li code { background: none; border: 0; padding: 0; overflow-wrap: anywhere; }
  .sidebar .home { display: block; padding: 4px 20px; border-radius: 8px; background: var(--sidebar-hover); color: var(--text); font-weight: 500; }
  main { flex: 1; min-width: 0; max-width: 800px; padding: 32px 64px 40vh; }
  h1 { font-size: 36px; line-height: 44px; font-weight: 600; margin: 8px 0 16px; }
  h2 { font-size: 24px; line-height: 32px; font-weight: 600; margin: 0 0 4px; }
  h3 { font-size: 14px; line-height: 22px; font-weight: 600; margin: 16px 0 4px; }
  .card { border: 1px solid var(--border); border-radius: 8px; padding: 16px 20px; margin: 24px 0; }
  .card:target { border-color: var(--brand); box-shadow: 0 0 0 2px var(--brand); }
  .muted { color: var(--text-secondary); }
  .badge { display: inline-block; font-weight: 600; font-size: 12px; border-radius: 4px; padding: 0 6px; background: var(--layer); border: 1px solid var(--border); }
  details { margin: 4px 0 12px; }
  summary { cursor: pointer; color: var(--text-secondary); }
  .links { display: flex; gap: 16px; flex-wrap: wrap; margin: 16px 0; }
  @media (max-width: 800px) { pre { white-space: pre-wrap; overflow-wrap: anywhere; } .layout { display: block; } .sidebar { position: static; width: auto; height: auto; border-right: 0; border-bottom: 1px solid var(--border); } main { padding: 24px 16px; } }
`;

export interface PageParts {
  title: string;
  /** The sidebar's HTML (links). */
  sidebar: string;
  /** The main column's HTML. */
  main: string;
}

/** A whole page: the sidebar on the left, the content beside it, as the Redoc pages lay them out. */
export function renderPage(parts: PageParts): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(parts.title)}</title>
  <style>${CSS}</style>
</head>
<body>
  <div class="layout">
    <nav class="sidebar" aria-label="Site">${parts.sidebar}
    </nav>
    <main>${parts.main}
    </main>
  </div>
</body>
</html>
`;
}

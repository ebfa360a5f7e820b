/**
 * The changelog page of the contract (/docs/changelog/): each release of the description,
 * newest first, with its changes in words (breaking and for whom, not decided, added, changed,
 * deprecated, documentation), and what is not released yet. Written by the docs build from the
 * releases the repository keeps (RELEASING.md); the findings are the compatibility gate's, the
 * sentences scripts/compat/changelog.ts's, as the contract's CHANGELOG.md has them.
 */
import { escapeHtml, renderPage } from './theme.ts';

export interface ChangelogRelease {
  /** A version, or `Unreleased`. */
  version: string;
  /** The version it is compared with (none for the first release). */
  since?: string;
  /**
   * The changes as the changelog writes them (scripts/compat/changelog.ts): `### Heading`
   * lines, `- item` lines and paragraphs, `code` in backticks, `**strong**`, and lines folded
   * between `<details>`, `<summary>...</summary>` and `</details>`, each on a line of its own.
   */
  text: string;
}

/** The changelog's Markdown subset as HTML: headings, list items, paragraphs, folds, code spans and strong words. */
function render(text: string): string {
  const inline = (line: string) =>
    escapeHtml(line).replace(/`([^`]+)`|\*\*([^*]+)\*\*/g, (_m, code?: string, strong?: string) =>
      code !== undefined ? `<code>${code}</code>` : `<strong>${strong}</strong>`,
    );
  const out: string[] = [];
  let list = false;
  for (const line of text.split('\n')) {
    const item = /^- (.*)$/.exec(line);
    if (item) {
      if (!list) out.push('<ul>');
      list = true;
      out.push(`<li>${inline(item[1]!)}</li>`);
      continue;
    }
    if (list) out.push('</ul>');
    list = false;
    const heading = /^#+ (.*)$/.exec(line);
    const summary = /^<summary>(.*)<\/summary>$/.exec(line);
    if (heading) out.push(`<h3>${inline(heading[1]!)}</h3>`);
    else if (line === '<details>' || line === '</details>') out.push(line);
    else if (summary) out.push(`<summary>${inline(summary[1]!)}</summary>`);
    else if (line.trim()) out.push(`<p>${inline(line)}</p>`);
  }
  if (list) out.push('</ul>');
  return out.join('\n');
}

export function renderChangelogPage(releases: ChangelogRelease[]): string {
  const id = (r: ChangelogRelease) => `v${r.version.toLowerCase()}`;
  return renderPage({
    title: 'Changelog · Payment Service API',
    sidebar: `
      <a class="home" href="../">API reference</a>
      <ul>${releases.map((r) => `<li><a href="#${id(r)}">${escapeHtml(r.version)}</a></li>`).join('')}</ul>`,
    main: `
      <h1>Changelog of the contract</h1>
      <p>What changed in the description of the API, its webhooks and the sandbox API from one
      release to the next, and for whom it breaks: API clients, merchants' webhook receivers,
      sandbox users. A schema used by several operations is named once, with the operations it
      reaches; changes to the words alone (descriptions, examples) are counted, and listed under
      a fold. The API has no version in its path or headers, so every change reaches every
      client and receiver at once; a breaking one comes only with a major version.</p>
      <p class="links"><a href="../">API reference</a><a href="../sandbox/">Sandbox API reference</a><a href="../errors/">Error codes</a></p>
${releases
  .map(
    (r) => `      <section id="${id(r)}">
        <h2>${escapeHtml(r.version)}</h2>
        ${r.since ? `<p>Since ${escapeHtml(r.since)}.</p>` : ''}
        ${render(r.text)}
      </section>`,
  )
  .join('\n')}`,
  });
}

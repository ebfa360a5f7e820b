/**
 * The text Redoc's search finds and quotes, with a space wherever the description breaks.
 *
 * Redoc 3 (what `redocly build-docs --inlineBundle` writes into each page) indexes a
 * description as the text of its Markdoc tree, every piece joined to the next with nothing
 * between: a line break inside a paragraph, or two paragraphs, list items or table cells in a
 * row, glue the words on either side ("the page `url` to send⏎the payer" is quoted as "to
 * sendthe payer", and cannot be found by "send the"). The page's copy of that function is
 * replaced by one that puts a space at such a break when neither side has one; the text of a
 * single paragraph, and so the ids Redoc derives from headings, is what it was.
 *
 * The bundle is minified: the function is found by its shape, and a bundle without exactly
 * one function of that shape fails the build (a Redocly upgrade may have changed or fixed
 * it: check the search in test/e2e/docs.browser.test.ts and drop or adapt this).
 */

/** Redoc 3.0's `function QT(e){let t=[];function n(e){if(!Yae(e)){typeof e.attributes?.content==`string`&&t.push(...` */
const EXTRACTOR =
  /function ([\w$]+)\(([\w$]+)\)\{let ([\w$]+)=\[\];function ([\w$]+)\(([\w$]+)\)\{if\(!([\w$]+)\(\5\)\)\{typeof \5\.attributes\?\.content==`string`&&\3\.push\(\5\.attributes\.content\);for\(let ([\w$]+) of \5\.children\?\?\[\]\)\4\(\7\)\}\}return \4\(\2\),\3\.join\(``\)\}/g;

/** Markdoc's block nodes: text on either side of one is not one word. */
const BLOCKS = [
  'document',
  'heading',
  'paragraph',
  'blockquote',
  'fence',
  'hr',
  'list',
  'item',
  'table',
  'thead',
  'tbody',
  'tr',
  'th',
  'td',
];

/** The replacement, under the minified name the bundle calls, with its own test for nodes to leave out. */
function spaced(name: string, skip: string): string {
  return `function ${name}(node){const blocks=new Set(${JSON.stringify(BLOCKS)});const parts=[];let gap=!1;function visit(n){if(${skip}(n))return;const block=blocks.has(n.type);if(block||n.type==="softbreak"||n.type==="hardbreak")gap=!0;const text=n.attributes?.content;if(typeof text=="string"&&text!==""){if(gap&&parts.length>0&&!/\\s$/.test(parts[parts.length-1])&&!/^\\s/.test(text))parts.push(" ");gap=!1;parts.push(text)}for(const child of n.children??[])visit(child);if(block)gap=!0}return visit(node),parts.join("")}`;
}

/** A Redoc page (or its bundle) whose search keeps a space between words the description breaks apart. */
export function spaceSearchText(page: string): string {
  const found = [...page.matchAll(EXTRACTOR)];
  if (found.length !== 1)
    throw new Error(
      `Redoc's search-text function was found ${found.length} times in the page, not once: the bundle changed (scripts/docs-search-text.ts).`,
    );
  return page.replace(EXTRACTOR, (_match, name: string, ...groups: string[]) => spaced(name, groups[4]!));
}

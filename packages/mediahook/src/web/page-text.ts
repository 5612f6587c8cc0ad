/**
 * What the dashboard and the inspector share in their pages: how they show a text that came from
 * elsewhere (invisible characters made visible, long values clamped with a way to see them all),
 * a time in UTC, and a table that stacks into one card a row on a narrow screen. Both are plain source, prepended to each page's own script and style; the
 * pages' CSP admits the whole by its hash (page-headers.ts).
 */

/** The shared part of the pages' style sheets. */
export const TEXT_STYLE = String.raw`
  /* An invisible character, shown as its escape so that it cannot reorder or hide the text. */
  .cc { font: 11px/1.2 ui-monospace, monospace; color: #b3261e; background: #fdecea;
        border: 1px solid #f1b4ae; border-radius: 3px; padding: 0 2px; margin: 0 1px;
        unicode-bidi: isolate; direction: ltr; }
  /* A long value: a few lines, and all of it (scrollable) on demand. */
  .long { display: block; }
  .long > .text { display: block; max-height: 5.6em; overflow: hidden; overflow-wrap: anywhere; }
  .long.open > .text { max-height: 22em; overflow-y: auto; }
  .long > .more { display: block; margin: .15rem 0 .25rem; font-size: 12px; padding: 0 .4rem; }
  /* A table.stacks on a phone: one card a row, each value under its column's name (labelCells),
     so a row's state and buttons stay on screen with no sideways scrolling. */
  @media (max-width: 640px) {
    table.stacks { min-width: 0; table-layout: auto; }
    table.stacks colgroup, table.stacks thead { display: none; }
    table.stacks tr, table.stacks td { display: block; }
    table.stacks tr { border-bottom: 2px solid #c5cad3; padding: .25rem 0; }
    table.stacks td { border: 0; padding: .15rem .6rem; }
    table.stacks td[data-label]::before { content: attr(data-label) ": "; color: #4d5566; font-size: 12px; }
  }
`;

/**
 * The shared part of the pages' scripts: `el`, `shown` (text with its invisible characters
 * shown), `visible` (the same for an attribute), `clamped` (a value, its first lines when long),
 * `utc` and `labelCells` (a row's cells named by their columns, for a stacked table).
 */
export const TEXT_SCRIPT = String.raw`
'use strict';
function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}
// Bidi controls (U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and the other format, control
// and separator characters a sender could hide in a text, and the blank letters; tab and line
// ends are left as they are, and so are the joiners (U+200C, U+200D: Persian and Indic text,
// emoji sequences) and the tag characters of flag emoji, which scripts need to read right.
const INVISIBLE =
  /(?![\t\n\r\u200C\u200D\u{E0020}-\u{E007F}])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u034F\u115F\u1160\u17B4\u17B5\u3164\uFFA0]/u;
const INVISIBLES = new RegExp(INVISIBLE.source, 'gu');
function escapeOf(char) {
  const hex = char.codePointAt(0).toString(16).toUpperCase();
  return hex.length > 4 ? '\\u{' + hex + '}' : '\\u' + hex.padStart(4, '0');
}
// For an attribute (alt, aria-label) where no markup can mark them.
function visible(value) {
  return String(value).replace(INVISIBLES, escapeOf);
}
// The text as nodes, each invisible character a marked escape (\u202E) instead.
function shown(value) {
  const text = String(value);
  const fragment = document.createDocumentFragment();
  if (!INVISIBLE.test(text)) {
    fragment.append(text);
    return fragment;
  }
  let from = 0;
  for (const match of text.matchAll(INVISIBLES)) {
    if (match.index > from) fragment.append(text.slice(from, match.index));
    const mark = el('span', escapeOf(match[0]), 'cc');
    mark.title = 'invisible character U+' + escapeOf(match[0]).replace(/[\\u{}]/g, '');
    fragment.append(mark);
    from = match.index + match[0].length;
  }
  if (from < text.length) fragment.append(text.slice(from));
  return fragment;
}
// The long values shown whole, by key, so that a refresh keeps them open.
const LONG = 160;
const opened = new Set();
// A value as text: shown whole when short, else its first lines and a button to see it all.
function clamped(value, key) {
  const all = String(value ?? '');
  if (all.length <= LONG) return shown(all);
  const box = el('span', undefined, 'long');
  const body = el('span', undefined, 'text');
  body.append(shown(all));
  const more = el('button', undefined, 'more');
  more.type = 'button';
  more.dataset.focus = key; // found again after a refresh rebuilds the list
  const show = (open) => {
    box.classList.toggle('open', open);
    more.setAttribute('aria-expanded', String(open));
    more.textContent = open ? 'show less' : 'show all ' + all.length.toLocaleString('en') + ' characters';
    // Open, the box scrolls: the keyboard can reach it.
    if (open) body.tabIndex = 0;
    else body.removeAttribute('tabindex');
  };
  show(opened.has(key));
  more.addEventListener('click', () => {
    const open = !box.classList.contains('open');
    if (open) opened.add(key);
    else opened.delete(key);
    show(open);
  });
  box.append(body, more);
  return box;
}
// A time in UTC: the clock alone when it is today (UTC), else with its date.
function utc(iso, milliseconds, zone) {
  const date = new Date(iso);
  if (typeof iso !== 'string' || Number.isNaN(date.getTime())) return el('span', String(iso));
  const full = date.toISOString();
  const day = full.slice(0, 10) === new Date().toISOString().slice(0, 10) ? '' : full.slice(0, 10) + ' ';
  const node = el('time', day + full.slice(11, milliseconds ? 23 : 19) + (zone ? ' UTC' : ''));
  node.dateTime = full;
  node.title = date.toString();
  return node;
}
// Names each cell of a row by its column, from its table's head: a table.stacks shows the name
// beside the value once it stacks on a narrow screen.
function labelCells(row) {
  const head = row.closest('table')?.tHead?.rows[0];
  const names = head ? [...head.cells].map((th) => th.textContent) : [];
  [...row.cells].forEach((cell, i) => (cell.dataset.label = names[i] ?? ''));
}
`;

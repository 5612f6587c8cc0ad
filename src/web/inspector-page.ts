import { pageHeaders } from './page-headers.ts';

const STYLE = `
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d2330; background: #f7f8fa; }
  h1 { font-size: 1.2rem; margin: 0 0 1rem; }
  .scroll { overflow-x: auto; }
  /* Narrow screens scroll the table sideways rather than squeeze it unreadable. */
  table { border-collapse: collapse; width: 100%; min-width: 720px; background: #fff; }
  th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #e3e6ec; vertical-align: top; }
  /* A long id, message or header without spaces wraps instead of stretching the table. */
  td.free { overflow-wrap: anywhere; }
  th { background: #eef0f4; font-weight: 600; }
  .accepted { color: #16703a; font-weight: 600; }
  .duplicate { color: #8a6100; font-weight: 600; }
  .rejected, .error { color: #b3261e; font-weight: 600; }
  code { font-size: 12px; display: block; }
  img, video { max-width: 160px; max-height: 120px; display: block; }
  #empty { color: #4d5566; }
  :focus-visible { outline: 2px solid #1a56db; outline-offset: 2px; }
  @media (max-width: 640px) { body { margin: .75rem; } img, video { max-width: 110px; } }
`;

// Runs as written: the CSP admits this script by its hash, and nothing else.
const SCRIPT = `
'use strict';
const tbody = document.querySelector('#requests tbody');
const problem = document.getElementById('problem');
function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}
function cell(row, content, className) {
  const td = row.insertCell();
  td.append(...content);
  if (className) td.className = className;
  return td;
}
// One line "name=value"; <bdi> keeps right-to-left text inside its own value.
function field(name, value) {
  const line = el('div', name + '=');
  line.append(el('bdi', String(value)));
  return line;
}
// A stored file's element, kept across refreshes so that a playing video is not reloaded.
const mediaByUrl = new Map();
function media(file) {
  const about = file.mediaType + ', ' + file.bytes + ' B';
  const wrap = el('div');
  if (file.url) {
    if (!mediaByUrl.has(file.url)) {
      const element = el(file.mediaType === 'video/mp4' ? 'video' : 'img');
      element.src = file.url;
      if (element.tagName === 'VIDEO') { element.controls = true; element.muted = true; }
      else element.alt = 'received ' + (file.filename || 'image');
      mediaByUrl.set(file.url, element);
    }
    wrap.append(mediaByUrl.get(file.url));
  }
  wrap.append(el('div', about));
  if (file.filename) wrap.append(field('filename', file.filename));
  return wrap;
}
let shown = '';
async function refresh() {
  try {
    const response = await fetch('/requests.json', { cache: 'no-store' });
    if (!response.ok) throw new Error('HTTP ' + response.status);
    const text = await response.text();
    if (problem.textContent) problem.textContent = '';
    // Re-render only on change, so a playing video is not reloaded every second.
    if (text !== shown) render(JSON.parse(text), text);
  } catch {
    const words = 'The receiver cannot be reached; trying again.';
    if (problem.textContent !== words) problem.textContent = words;
  }
  setTimeout(refresh, 1000);
}
function render(requests, text) {
  shown = text;
  document.getElementById('empty').hidden = requests.length > 0;
  document.getElementById('requests').hidden = requests.length === 0;
  const urls = new Set();
  tbody.replaceChildren();
  for (const r of requests) {
    const row = tbody.insertRow();
    row.dataset.verdict = r.verdict;
    cell(row, [r.receivedAt.replace('T', ' ').slice(0, 23)]);
    cell(row, [r.verdict + (r.error ? ' — ' + r.error.code : '')], r.verdict);
    const c = r.callback;
    cell(row, [c ? c.family + ' ' + c.event : '']);
    if (c) cell(row, [field('status', c.status), field('id_gen', c.id_gen), field('time_gen', c.time_gen)], 'free');
    else cell(row, [el('bdi', r.error ? r.error.message : '')], 'free');
    if (c && c.event === 'error') cell(row, [el('bdi', c.message)], 'free');
    else if (c && c.file) { if (c.file.url) urls.add(c.file.url); cell(row, [media(c.file)], 'free'); }
    else cell(row, []);
    cell(row, Object.entries(r.headers).map(([k, v]) => el('code', k + ': ' + v)), 'free');
  }
  for (const url of mediaByUrl.keys()) if (!urls.has(url)) mediaByUrl.delete(url);
}
refresh();
`;

/**
 * The receiver inspector of `mediahook listen`: one self-contained page (no build step, no
 * CDN) that polls `/requests.json` every second and lists every request with its verdict,
 * fields and file.
 */
export function inspectorPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>mediahook listen — inspector</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<h1>Callbacks received</h1>
<p id="problem" class="error" role="status"></p>
<p id="empty">No request yet. POST a callback to this address.</p>
<div class="scroll">
<table id="requests" hidden>
  <thead><tr><th scope="col">time (UTC)</th><th scope="col">verdict</th><th scope="col">callback</th><th scope="col">fields</th><th scope="col">file or message</th><th scope="col">headers</th></tr></thead>
  <tbody></tbody>
</table>
</div>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

/** The headers of the inspector page: its CSP admits only its own script and style. */
export const INSPECTOR_HEADERS: Readonly<Record<string, string>> = pageHeaders(SCRIPT, STYLE, {
  media: ["'self'"],
});

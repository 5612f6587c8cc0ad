import { pageHeaders } from './page-headers.ts';
import { TEXT_SCRIPT, TEXT_STYLE } from './page-text.ts';

const STYLE = `${TEXT_STYLE}
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d2330; background: #f7f8fa; }
  h1 { font-size: 1.2rem; margin: 0 0 1rem; }
  /* Middling screens scroll the table sideways, inside its box; a phone's stacks it (TEXT_STYLE). */
  .scroll { overflow-x: auto; }
  /* Fixed columns: one long value cannot squeeze the others; it wraps, clamped to a few lines. */
  table { border-collapse: collapse; table-layout: fixed; width: 100%; min-width: 1200px; background: #fff; }
  col.c-time { width: 7.5rem; } col.c-verdict { width: 8rem; } col.c-callback { width: 6rem; }
  col.c-fields { width: 20%; } col.c-headers { width: 24%; } col.c-app { width: 8rem; }
  th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #e3e6ec; vertical-align: top;
           overflow-wrap: anywhere; }
  th { background: #eef0f4; font-weight: 600; }
  .accepted { color: #16703a; font-weight: 600; }
  .duplicate { color: #8a6100; font-weight: 600; }
  .rejected, .error { color: #b3261e; font-weight: 600; }
  .mismatch { color: #8a6100; }
  .replay { margin-top: .3rem; font: inherit; }
  code { font-size: 12px; display: block; }
  img, video { max-width: 160px; max-height: 120px; display: block; }
  #empty { color: #4d5566; }
  :focus-visible { outline: 2px solid #1a56db; outline-offset: 2px; }
  @media (max-width: 640px) { body { margin: .75rem; } img, video { max-width: 110px; } }
`;

// Runs as written: the CSP admits this script by its hash, and nothing else.
const SCRIPT =
  TEXT_SCRIPT +
  String.raw`
const POLL_MS = 1000;
const tbody = document.querySelector('#requests tbody');
const problem = document.getElementById('problem');
function cell(row, content, className) {
  const td = row.insertCell();
  td.append(...content);
  if (className) td.className = className;
  return td;
}
// A received text in <bdi>, so that right-to-left text stays inside its own value.
function isolated(value, key) {
  const node = el('bdi');
  node.append(clamped(value, key));
  return node;
}
// One line "name=value".
function field(name, value, key) {
  const line = el('div', name + '=');
  line.append(isolated(value, key + '/' + name));
  return line;
}
// A stored file's element, kept across refreshes so that a playing video is not reloaded.
const mediaByUrl = new Map();
function media(file, key) {
  const wrap = el('div');
  const name = visible(file.filename || '');
  if (file.url) {
    if (!mediaByUrl.has(file.url)) {
      const element = el(file.mediaType === 'video/mp4' ? 'video' : 'img');
      element.src = file.url;
      if (element.tagName === 'VIDEO') {
        element.controls = true;
        element.muted = true;
        element.setAttribute('aria-label', 'received ' + (name || 'video'));
      } else element.alt = 'received ' + (name || 'image');
      mediaByUrl.set(file.url, element);
    }
    wrap.append(mediaByUrl.get(file.url));
  }
  // The type the bytes say; the one the sender declared too when they differ.
  wrap.append(el('div', file.mediaType + ', ' + file.bytes + ' B', 'type'));
  if (file.declaredType && file.declaredType !== file.mediaType) {
    const declared = el('div', 'declared ', 'declared mismatch');
    declared.append(isolated(file.declaredType, key + '/declared'));
    wrap.append(declared);
  }
  if (file.filename) wrap.append(field('filename', file.filename, key));
  if (file.url) {
    const link = el('a', 'open the stored file', 'stored');
    link.href = file.url;
    link.target = '_blank';
    wrap.append(link);
  }
  return wrap;
}
// The app's answer to a forwarded callback, and the button that sends the kept request again.
function app(r, key) {
  const parts = [];
  if (r.forward) {
    const answer = r.forward.status === null ? r.forward.code || 'no answer' : 'HTTP ' + r.forward.status;
    const ok = r.forward.status !== null && r.forward.status < 300;
    parts.push(el('div', answer, ok ? 'accepted' : 'error'), el('div', r.forward.ms + ' ms'));
  }
  if (r.replay) {
    const button = el('button', 'Replay', 'replay');
    button.type = 'button';
    button.dataset.replay = r.replay;
    button.dataset.focus = key + '/replay';
    parts.push(button, el('div', '', 'replayed'));
  }
  return parts;
}
// Replay: the kept request goes to the app again; the answer shows under the button.
tbody.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-replay]');
  if (!button) return;
  const note = button.nextElementSibling;
  button.disabled = true;
  note.textContent = 'sending…';
  try {
    const response = await fetch(button.dataset.replay, { method: 'POST' });
    const answer = await response.json();
    note.textContent = answer.forward
      ? 'app answered ' + answer.forward.status + ' (' + answer.forward.ms + ' ms)'
      : answer.error.code + ': ' + answer.error.message;
  } catch {
    note.textContent = 'The receiver cannot be reached.';
  }
  button.disabled = false;
});
// One request for the list at a time, a second after the last, none while the page is hidden.
// The browser's cache revalidates it (ETag), and an unchanged list is not drawn again.
let drawn = '';
let timer = 0;
let asking = false;
async function refresh() {
  clearTimeout(timer);
  if (asking) return;
  asking = true;
  try {
    const response = await fetch('/requests.json');
    if (!response.ok) throw new Error('HTTP ' + response.status);
    const answer = await response.text();
    if (problem.textContent) problem.textContent = '';
    // Re-render only on change, so a playing video is not reloaded every second.
    if (answer !== drawn) render(JSON.parse(answer), answer);
  } catch {
    const words = 'The receiver cannot be reached; trying again.';
    if (problem.textContent !== words) problem.textContent = words;
  }
  asking = false;
  if (document.visibilityState !== 'hidden') timer = setTimeout(refresh, POLL_MS);
}
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'hidden') clearTimeout(timer);
  else refresh();
});
function render(requests, answer) {
  drawn = answer;
  document.getElementById('empty').hidden = requests.length > 0;
  document.getElementById('requests').hidden = requests.length === 0;
  const focused = document.activeElement;
  const refocus = focused && tbody.contains(focused) ? focused.dataset.focus : undefined;
  const urls = new Set();
  tbody.replaceChildren();
  for (const r of requests) {
    const row = tbody.insertRow();
    const key = r.receivedAt + '/' + (r.callback ? r.callback.id_gen : '');
    row.dataset.verdict = r.verdict;
    cell(row, [r.receivedAt.replace('T', ' ').slice(0, 23)]);
    const verdict = cell(row, [r.verdict], r.verdict);
    if (r.error) verdict.append(' — ', isolated(r.error.code, key + '/code'));
    const c = r.callback;
    cell(row, [c ? c.family + ' ' + c.event : '']);
    if (c) cell(row, [field('status', c.status, key), field('id_gen', c.id_gen, key), field('time_gen', c.time_gen, key)]);
    else cell(row, [isolated(r.error ? r.error.message : '', key + '/error')]);
    if (c && c.event === 'error') cell(row, [isolated(c.message, key + '/message')]);
    else if (c && c.file) {
      if (c.file.url) urls.add(c.file.url);
      cell(row, [media(c.file, key)]);
    } else cell(row, []);
    const lines = Object.entries(r.headers).map(([name, value]) => {
      const line = el('code');
      line.append(clamped(name + ': ' + value, key + '/h/' + name));
      return line;
    });
    cell(row, lines);
    cell(row, app(r, key));
    labelCells(row);
  }
  for (const url of mediaByUrl.keys()) if (!urls.has(url)) mediaByUrl.delete(url);
  if (refocus) [...tbody.querySelectorAll('button')].find((b) => b.dataset.focus === refocus)?.focus();
}
refresh();
`;

/**
 * The receiver inspector of `mediahook listen`: one self-contained page (no build step, no
 * CDN) that polls `/requests.json` every second while shown and lists every request with its
 * verdict, fields, file and headers, and, with `--forward-to`, the app's answer and a Replay button.
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
<table id="requests" class="stacks" hidden>
  <colgroup><col class="c-time"><col class="c-verdict"><col class="c-callback"><col class="c-fields"><col class="c-file"><col class="c-headers"><col class="c-app"></colgroup>
  <thead><tr><th scope="col">time (UTC)</th><th scope="col">verdict</th><th scope="col">callback</th><th scope="col">fields</th><th scope="col">file or message</th><th scope="col">headers</th><th scope="col">app</th></tr></thead>
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

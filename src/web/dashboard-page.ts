import { pageHeaders } from './page-headers.ts';

const STYLE = `
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d2330; background: #f7f8fa; }
  h1 { font-size: 1.2rem; margin: 0 0 1rem; }
  form, nav { display: flex; gap: .75rem; align-items: center; margin-bottom: 1rem; flex-wrap: wrap; }
  .scroll { overflow-x: auto; }
  /* Narrow screens scroll the table sideways rather than squeeze it unreadable. */
  table { border-collapse: collapse; width: 100%; min-width: 720px; background: #fff; }
  th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #e3e6ec; vertical-align: top; }
  /* A long URL or error without spaces wraps instead of stretching the table off screen. */
  .free, p { overflow-wrap: anywhere; }
  th { background: #eef0f4; font-weight: 600; }
  .state { font-weight: 600; }
  .delivered, .succeeded { color: #16703a; }
  .retrying, .running, .delivering, .pending, .queued { color: #8a6100; }
  .dead, .gone, .failed, .circuit, .error { color: #b3261e; }
  .head { color: #4d5566; font-size: 12px; }
  ol { margin: 0; padding-left: 1.2rem; }
  img, video { max-width: 160px; max-height: 120px; display: block; }
  code { font-size: 12px; }
  :focus-visible { outline: 2px solid #1a56db; outline-offset: 2px; }
  @media (max-width: 640px) { body { margin: .75rem; } img, video { max-width: 110px; } }
`;

// Runs as written: the CSP admits this script by its hash, and nothing else.
const SCRIPT = `
'use strict';
const PAGE_SIZE = 100;
const form = document.getElementById('filters');
const rows = document.getElementById('operations');
const message = document.getElementById('message');
const problem = document.getElementById('problem');
const older = document.getElementById('older');
const newer = document.getElementById('newer');
const pageInfo = document.getElementById('page');
form.key.value = localStorage.getItem('mediahook-key') || '';
function headers() {
  const key = form.key.value.trim();
  return key ? { authorization: 'Bearer ' + key } : {};
}
function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}
// Sets a live region's text only when it changes, so screen readers do not repeat it.
function say(node, text, className) {
  if (node.textContent !== text) node.textContent = text;
  node.className = className || '';
}
function endpointOf(url) {
  try {
    const u = new URL(url);
    return u.hostname.toLowerCase() + ':' + (u.port || (u.protocol === 'https:' ? '443' : '80'));
  } catch {
    return 'invalid:' + url.slice(0, 200);
  }
}
async function errorText(response) {
  try {
    const body = await response.json();
    if (body && body.error && typeof body.error.message === 'string') return body.error.message;
  } catch {}
  return 'HTTP ' + response.status;
}
// An <img src> cannot carry the API key: results are fetched with it and shown from blob: URLs.
const previews = new Map();
function preview(op) {
  if (op.state !== 'succeeded') return el('span', '');
  if (!previews.has(op.id_gen)) {
    const media = el(op.kind === 'video' ? 'video' : 'img');
    if (op.kind === 'video') { media.controls = true; media.muted = true; media.loop = true; }
    else media.alt = 'result of ' + op.id_gen;
    previews.set(op.id_gen, media);
    loadPreview(op.id_gen, media);
  }
  return previews.get(op.id_gen);
}
async function loadPreview(id, media) {
  try {
    const response = await fetch('/v1/operations/' + encodeURIComponent(id) + '/result', { headers: headers() });
    const blob = response.ok ? await response.blob() : null;
    if (previews.get(id) !== media) return;
    if (blob) {
      media.src = URL.createObjectURL(blob);
    } else if (response.status === 404) {
      const gone = el('span', 'result file gone');
      previews.set(id, gone);
      media.replaceWith(gone);
    } else {
      previews.delete(id); // tried again on the next refresh (the key may come later)
    }
  } catch {
    if (previews.get(id) === media) previews.delete(id);
  }
}
function forgetPreviews(shown) {
  for (const [id, media] of previews) {
    if (shown.has(id)) continue;
    if (media.src) URL.revokeObjectURL(media.src);
    previews.delete(id);
  }
}
function askForKey() {
  document.getElementById('key').hidden = false;
  say(problem, form.key.value.trim() ? 'The API key was refused: enter a valid one.' : 'This service needs an API key: enter one above.', 'error');
}
async function redeliver(id, button) {
  button.disabled = true;
  say(message, 'Queueing a redelivery for ' + id + '…');
  try {
    const response = await fetch('/v1/operations/' + encodeURIComponent(id) + '/redeliver', { method: 'POST', headers: headers() });
    if (response.ok) say(message, 'Redelivery queued for ' + id);
    else say(message, 'Redelivery for ' + id + ' failed: ' + (await errorText(response)), 'error');
    if (response.status === 401) askForKey();
  } catch {
    say(message, 'Redelivery for ' + id + ' failed: the service cannot be reached.', 'error');
  }
  button.disabled = false;
  refresh();
}
// The \`before\` cursor of each page from the newest one; the last is the page shown.
let cursors = [null];
let ticket = 0;
let timer = 0;
let shown = '';
// One refresh at a time, the next two seconds after the last ended; a newer one (a filter or
// page change) makes the answers of those still in flight stale, and they are dropped.
async function refresh() {
  clearTimeout(timer);
  const mine = ++ticket;
  try {
    await load(mine);
  } catch {
    if (mine === ticket) say(problem, 'The service cannot be reached; trying again.', 'error');
  }
  if (mine === ticket) timer = setTimeout(refresh, 2000);
}
async function load(mine) {
  const query = new URLSearchParams();
  for (const name of ['state', 'callback_state', 'family', 'endpoint']) if (form[name].value) query.set(name, form[name].value);
  query.set('limit', String(PAGE_SIZE));
  const before = cursors[cursors.length - 1];
  if (before) query.set('before', before);
  const response = await fetch('/v1/operations?' + query, { headers: headers() });
  if (mine !== ticket) return;
  if (response.status === 401) {
    askForKey();
    shown = '';
    rows.replaceChildren();
    forgetPreviews(new Set());
    return;
  }
  if (!response.ok) {
    const text = await errorText(response);
    if (mine === ticket) say(problem, 'The service answered: ' + text + '; trying again.', 'error');
    return;
  }
  const { operations, next_before } = await response.json();
  const circuits = new Map();
  await Promise.all([...new Set(operations.map((op) => endpointOf(op.webhook_url)))].map(async (key) => {
    const answer = await fetch('/v1/endpoints/' + encodeURIComponent(key), { headers: headers() });
    if (answer.ok) circuits.set(key, await answer.json());
  }));
  if (mine !== ticket) return;
  say(problem, '');
  render(operations, next_before, circuits);
}
function render(operations, next, circuits) {
  older.disabled = !next;
  older.dataset.before = next || '';
  newer.disabled = cursors.length === 1;
  say(pageInfo, 'Page ' + cursors.length + ', newest first, ' + PAGE_SIZE + ' a page');
  // Rebuilt only on a change: a rebuild would reset focus, selection and a playing video.
  const snapshot = JSON.stringify([operations, [...circuits]]);
  if (snapshot === shown) return;
  shown = snapshot;
  const focused = document.activeElement;
  const refocus = focused && rows.contains(focused) ? focused.closest('tr').dataset.id : null;
  rows.replaceChildren();
  forgetPreviews(new Set(operations.map((op) => op.id_gen)));
  if (operations.length === 0) {
    const filtered = [...new FormData(form)].some(([name, value]) => name !== 'key' && value);
    const cell = rows.insertRow().insertCell();
    cell.colSpan = 7;
    cell.textContent = filtered ? 'No operation matches these filters.' : 'No operations.';
  }
  for (const op of operations) row(op, circuits);
  if (refocus) {
    const button = [...rows.rows].find((r) => r.dataset.id === refocus)?.querySelector('button');
    if (button) button.focus();
  }
}
function row(op, circuits) {
  const row = rows.insertRow();
  row.dataset.id = op.id_gen;
  row.insertCell().textContent = op.created_at.replace('T', ' ').slice(0, 19);
  const what = row.insertCell();
  what.append(el('code', op.id_gen, 'free'), el('div', op.kind + ', family ' + op.family), el('div', op.webhook_url, 'free'));
  row.insertCell().append(el('span', op.state, 'state ' + op.state));
  const cb = row.insertCell();
  cb.append(el('span', op.callback.state, 'state callback-state ' + op.callback.state));
  if (op.callback.next_attempt_at) cb.append(el('div', 'next try ' + op.callback.next_attempt_at.slice(11, 19)));
  const circuit = circuits.get(endpointOf(op.webhook_url));
  if (circuit && circuit.circuit_state !== 'closed') {
    const until = circuit.open_until ? ' until ' + circuit.open_until.slice(11, 19) : '';
    cb.append(el('div', 'circuit ' + circuit.circuit_state.replace('_', '-') + until, 'circuit'));
  }
  const attempts = el('ol', undefined, 'attempts free');
  for (const a of op.callback.attempts) {
    const item = el('li', a.at.slice(11, 23) + ' — ');
    // <bdi>: right-to-left text from the receiver stays inside its own words.
    item.append(el('bdi', String(a.status_code ?? a.error)), ' (' + a.duration_ms + ' ms)');
    // The receiver's own words (its error code, say) on hover, and in short when it refused.
    if (a.response_head) {
      item.title = a.response_head;
      if (!(a.status_code >= 200 && a.status_code < 300)) item.append(el('div', a.response_head.slice(0, 120), 'head'));
    }
    attempts.append(item);
  }
  row.insertCell().append(attempts);
  row.insertCell().append(preview(op));
  const actions = row.insertCell();
  if (['delivered', 'dead', 'gone', 'retrying', 'pending'].includes(op.callback.state) && op.state !== 'queued' && op.state !== 'running') {
    const button = el('button', 'Redeliver');
    button.type = 'button';
    button.setAttribute('aria-label', 'Redeliver the callback of ' + op.id_gen);
    button.addEventListener('click', () => redeliver(op.id_gen, button));
    actions.append(button);
  }
}
form.addEventListener('submit', (event) => { event.preventDefault(); refresh(); });
form.addEventListener('change', () => {
  localStorage.setItem('mediahook-key', form.key.value);
  cursors = [null];
  refresh();
});
older.addEventListener('click', () => { if (older.dataset.before) { cursors.push(older.dataset.before); refresh(); } });
newer.addEventListener('click', () => { if (cursors.length > 1) { cursors.pop(); refresh(); } });
refresh();
`;

/**
 * The service dashboard at `/`: one self-contained page (no build step, no CDN) over the
 * service's own API. Lists operations a page of 100 at a time with their callback's delivery,
 * attempts, result preview, filters, and a redeliver button; refreshes every two seconds.
 * With API keys, every call (the previews too) carries the key entered on the page.
 */
export function dashboardPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>mediahook — operations</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<h1>Operations</h1>
<form id="filters">
  <label>state <select name="state"><option value="">any</option><option>queued</option><option>running</option><option>succeeded</option><option>failed</option></select></label>
  <label>callback <select name="callback_state"><option value="">any</option><option>pending</option><option>delivering</option><option>retrying</option><option>delivered</option><option>dead</option><option>gone</option></select></label>
  <label>family <select name="family"><option value="">any</option><option>A</option><option>B</option></select></label>
  <label>endpoint <input name="endpoint" placeholder="host:port" size="18" autocomplete="off"></label>
  <label id="key" hidden>API key <input name="key" type="password" size="24" autocomplete="off"></label>
</form>
<p id="problem" role="status"></p>
<p id="message" role="status"></p>
<nav aria-label="pages">
  <button type="button" id="newer" disabled>Newer</button>
  <span id="page"></span>
  <button type="button" id="older" disabled>Older</button>
</nav>
<div class="scroll">
<table>
  <thead><tr><th scope="col">created (UTC)</th><th scope="col">operation</th><th scope="col">state</th><th scope="col">callback</th><th scope="col">attempts (UTC)</th><th scope="col">result</th><th scope="col">action</th></tr></thead>
  <tbody id="operations"></tbody>
</table>
</div>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

/** The headers of the dashboard page: its CSP admits only its own script and style. */
export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = pageHeaders(SCRIPT, STYLE, {
  media: ['blob:'],
});

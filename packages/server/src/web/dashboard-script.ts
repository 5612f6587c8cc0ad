/**
 * The dashboard's own script (after page-text.ts's shared part). It runs as written: the CSP
 * admits it by its hash, and nothing else.
 */
export const DASHBOARD_SCRIPT = String.raw`
const PAGE_SIZE = 100;
const POLL_MS = 2000;
// A receiver's circuit is asked at most this often, and only for rows whose callback waits on it.
const CIRCUIT_MS = 10000;
const CIRCUIT_STATES = ['retrying', 'dead'];
const SHOWS_CIRCUIT = ['pending', 'retrying', 'dead'];
const MAX_CIRCUIT_REQUESTS = 4;
const form = document.getElementById('filters');
const rows = document.getElementById('operations');
const message = document.getElementById('message');
const problem = document.getElementById('problem');
const older = document.getElementById('older');
const newer = document.getElementById('newer');
const pageInfo = document.getElementById('page');
const keyBox = document.getElementById('key');
form.key.value = localStorage.getItem('mediahook-key') || '';
keyBox.hidden = !form.key.value;
function headers() {
  const key = form.key.value.trim();
  return key ? { authorization: 'Bearer ' + key } : {};
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
    return null;
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
    if (op.kind === 'video') {
      media.controls = true;
      media.muted = true;
      media.loop = true;
      media.setAttribute('aria-label', 'result of ' + visible(op.id_gen));
    } else media.alt = 'result of ' + visible(op.id_gen);
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
function forgetPreviews(shownIds) {
  for (const [id, media] of previews) {
    if (shownIds.has(id)) continue;
    if (media.src) URL.revokeObjectURL(media.src);
    previews.delete(id);
  }
}
// After a 401 the page stops polling until a key is entered (or forgotten).
let refused = false;
function askForKey() {
  refused = true;
  keyBox.hidden = false;
  say(problem, form.key.value.trim() ? 'The API key was refused: enter a valid one.' : 'This service needs an API key: enter one above.', 'error');
}
// The outcome of each row's last redelivery, told next to its button.
const outcomes = new Map();
function tell(id, short, long, className, unreachable) {
  outcomes.set(id, { text: short, className, unreachable });
  const row = [...rows.rows].find((r) => r.dataset.id === id);
  const cell = row && row.querySelector('.outcome');
  if (cell) {
    cell.textContent = short;
    cell.className = 'outcome ' + (className || '');
  }
  say(message, long, className);
}
// A failure for want of the service is stale once the service answers again.
function forgetUnreachable() {
  for (const [id, outcome] of outcomes) {
    if (!outcome.unreachable) continue;
    outcomes.delete(id);
    const row = [...rows.rows].find((r) => r.dataset.id === id);
    const cell = row && row.querySelector('.outcome');
    if (cell) cell.textContent = '';
    if (message.dataset.id === id) say(message, '');
  }
}
async function redeliver(id, button) {
  button.disabled = true;
  message.dataset.id = id;
  tell(id, 'queueing…', 'Queueing a redelivery for ' + visible(id) + '…');
  try {
    const response = await fetch('/v1/operations/' + encodeURIComponent(id) + '/redeliver', { method: 'POST', headers: headers() });
    if (response.ok) tell(id, 'redelivery queued', 'Redelivery queued for ' + visible(id));
    else {
      const why = await errorText(response);
      tell(id, 'redelivery failed: ' + why, 'Redelivery for ' + visible(id) + ' failed: ' + why, 'error');
    }
    if (response.status === 401) askForKey();
  } catch {
    const why = 'the service cannot be reached.';
    tell(id, 'redelivery failed: ' + why, 'Redelivery for ' + visible(id) + ' failed: ' + why, 'error', true);
  }
  button.disabled = false;
  refresh();
}
// The before cursor of each page from the newest one; the last is the page shown.
let cursors = [null];
let ticket = 0;
let timer = 0;
let listText = '';
let list = { operations: [], next_before: null };
let painted = '';
// One refresh at a time, the next two seconds after the last ended, none while the page is
// hidden or the key refused; a newer one (a filter or page change) makes the answers of those
// still in flight stale, and they are dropped.
async function refresh() {
  clearTimeout(timer);
  const mine = ++ticket;
  try {
    await load(mine);
  } catch {
    if (mine === ticket) say(problem, 'The service cannot be reached; trying again.', 'error');
  }
  if (mine === ticket && !refused && document.visibilityState !== 'hidden') timer = setTimeout(refresh, POLL_MS);
}
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'hidden') clearTimeout(timer);
  else if (!refused) refresh();
});
async function load(mine) {
  const query = new URLSearchParams();
  for (const name of ['state', 'callback_state', 'family', 'endpoint']) if (form[name].value) query.set(name, form[name].value);
  query.set('limit', String(PAGE_SIZE));
  const before = cursors[cursors.length - 1];
  if (before) query.set('before', before);
  // The browser's cache revalidates the list (ETag): an unchanged one comes back as it was.
  const response = await fetch('/v1/operations?' + query, { headers: headers() });
  if (mine !== ticket) return;
  if (response.status === 401) {
    askForKey();
    listText = '';
    list = { operations: [], next_before: null };
    painted = '';
    rows.replaceChildren();
    forgetPreviews(new Set());
    return;
  }
  if (!response.ok) {
    const why = await errorText(response);
    if (mine === ticket) say(problem, 'The service answered: ' + why + '; trying again.', 'error');
    return;
  }
  const answer = await response.text();
  if (mine !== ticket) return;
  refused = false;
  if (answer !== listText) {
    list = JSON.parse(answer);
    listText = answer;
  }
  say(problem, '');
  forgetUnreachable();
  askCircuits(list.operations);
  paint();
}
// Circuits by endpoint: { value, at, busy }; a failed request keeps what was known.
const circuits = new Map();
let circuitRequests = 0;
function askCircuits(operations) {
  const now = Date.now();
  for (const op of operations) {
    if (!CIRCUIT_STATES.includes(op.callback.state)) continue;
    const key = endpointOf(op.webhook_url);
    const known = key && circuits.get(key);
    if (!key || (known && (known.busy || now - known.at < CIRCUIT_MS))) continue;
    if (circuitRequests >= MAX_CIRCUIT_REQUESTS) return;
    askCircuit(key, known || { value: null, at: 0, busy: false });
  }
}
async function askCircuit(key, known) {
  known.busy = true;
  circuits.set(key, known);
  circuitRequests++;
  try {
    const answer = await fetch('/v1/endpoints/' + encodeURIComponent(key), { headers: headers() });
    if (answer.ok) known.value = await answer.json();
  } catch {}
  circuitRequests--;
  known.busy = false;
  known.at = Date.now();
  paint();
  if (!refused) askCircuits(list.operations); // the next ones waiting for a free request
}
function paint() {
  const next = list.next_before;
  older.disabled = !next;
  older.dataset.before = next || '';
  newer.disabled = cursors.length === 1;
  say(pageInfo, 'Page ' + cursors.length + ', newest first, ' + PAGE_SIZE + ' a page');
  if (!listText) return; // nothing listed yet, or the key was refused
  // Rebuilt only on a change: a rebuild would reset focus, selection and a playing video.
  const snapshot = listText + JSON.stringify([...circuits].map(([key, c]) => [key, c.value]));
  if (snapshot === painted) return;
  painted = snapshot;
  const focused = document.activeElement;
  const refocus = focused && rows.contains(focused) ? focused.dataset.focus : undefined;
  rows.replaceChildren();
  forgetPreviews(new Set(list.operations.map((op) => op.id_gen)));
  if (list.operations.length === 0) {
    const filtered = [...new FormData(form)].some(([name, value]) => name !== 'key' && value);
    const cell = rows.insertRow().insertCell();
    cell.colSpan = 7;
    cell.textContent = filtered ? 'No operation matches these filters.' : 'No operations.';
  }
  for (const op of list.operations) row(op);
  if (refocus) [...rows.querySelectorAll('button')].find((b) => b.dataset.focus === refocus)?.focus();
}
function row(op) {
  const row = rows.insertRow();
  const id = op.id_gen;
  row.dataset.id = id;
  row.insertCell().textContent = op.created_at.replace('T', ' ').slice(0, 19);
  const what = row.insertCell();
  const idText = el('code', undefined, 'id');
  idText.append(clamped(id, id + '/id'));
  const url = el('div', undefined, 'url');
  url.append(clamped(op.webhook_url, id + '/url'));
  what.append(idText, el('div', op.kind + ', family ' + op.family), url);
  // The failure text of a failed operation (absent from an older service).
  if (op.state === 'failed' && op.error_message != null) {
    const failure = el('div', 'error: ', 'error-message');
    failure.append(clamped(op.error_message, id + '/error'));
    what.append(failure);
  }
  const state = row.insertCell();
  state.append(el('span', undefined, 'state ' + op.state));
  state.firstChild.append(shown(op.state));
  const cb = row.insertCell();
  const cbState = el('span', undefined, 'state callback-state ' + op.callback.state);
  cbState.append(shown(op.callback.state));
  cb.append(cbState);
  if (op.callback.next_attempt_at) {
    const next = el('div', 'next try ', 'next-try');
    next.append(utc(op.callback.next_attempt_at, false, true));
    cb.append(next);
  }
  const key = endpointOf(op.webhook_url);
  const circuit = SHOWS_CIRCUIT.includes(op.callback.state) && key && circuits.get(key)?.value;
  if (circuit && circuit.circuit_state && circuit.circuit_state !== 'closed') {
    const line = el('div', 'circuit ' + String(circuit.circuit_state).replace('_', '-'), 'circuit');
    if (circuit.open_until) line.append(' until ', utc(circuit.open_until, false, true));
    cb.append(line);
  }
  const attempts = el('ol', undefined, 'attempts');
  op.callback.attempts.forEach((a, i) => {
    const item = el('li');
    // <bdi>: what the receiver (or the network) said stays inside its own words.
    const said = el('bdi');
    said.append(clamped(String(a.status_code ?? a.error), id + '/a' + i));
    item.append(utc(a.at, true), ' — ', said, ' (' + a.duration_ms + ' ms)');
    // The receiver's own words (its error code, say) when it refused.
    if (a.response_head && !(a.status_code >= 200 && a.status_code < 300)) {
      const head = el('bdi', undefined, 'head');
      head.append(clamped(a.response_head, id + '/h' + i));
      item.append(head);
    }
    attempts.append(item);
  });
  row.insertCell().append(attempts);
  row.insertCell().append(preview(op));
  const actions = row.insertCell();
  if (['delivered', 'dead', 'gone', 'retrying', 'pending'].includes(op.callback.state) && op.state !== 'queued' && op.state !== 'running') {
    const button = el('button', 'Redeliver');
    button.type = 'button';
    button.setAttribute('aria-label', 'Redeliver the callback of ' + visible(id));
    button.dataset.focus = 'redeliver/' + id;
    button.addEventListener('click', () => redeliver(id, button));
    const outcome = outcomes.get(id);
    actions.append(button, el('div', outcome ? outcome.text : '', 'outcome ' + (outcome?.className || '')));
  }
}
form.addEventListener('submit', (event) => {
  event.preventDefault();
  refresh();
});
form.addEventListener('change', (event) => {
  if (event.target === form.key) {
    const key = form.key.value.trim();
    if (key) localStorage.setItem('mediahook-key', key);
    else localStorage.removeItem('mediahook-key');
    forgetPreviews(new Set());
    painted = '';
  }
  cursors = [null];
  refresh();
});
document.getElementById('forget').addEventListener('click', () => {
  localStorage.removeItem('mediahook-key');
  form.key.value = '';
  forgetPreviews(new Set());
  painted = '';
  cursors = [null];
  refresh();
});
older.addEventListener('click', () => {
  if (older.dataset.before) {
    cursors.push(older.dataset.before);
    refresh();
  }
});
newer.addEventListener('click', () => {
  if (cursors.length > 1) {
    cursors.pop();
    refresh();
  }
});
refresh();
`;

// The operations list: a page of 100 at a time with their callback's delivery, attempts,
// result preview and a redeliver button, refreshed every two seconds while shown.

const PAGE_SIZE = 100;
const POLL_MS = 2000;
// A receiver's circuit is asked at most this often, and only for rows whose callback waits on it.
const CIRCUIT_MS = 10000;
const CIRCUIT_STATES = ['retrying', 'dead'];
const SHOWS_CIRCUIT = ['pending', 'retrying', 'dead'];
const MAX_CIRCUIT_REQUESTS = 4;
const rows = byId('operations', HTMLTableSectionElement);
const older = byId('older', HTMLButtonElement);
const newer = byId('newer', HTMLButtonElement);
const pageInfo = byId('page', HTMLElement);
// An <img src> cannot carry the API key: results are fetched with it and shown from blob: URLs.
/** @type {Map<string, HTMLImageElement | HTMLVideoElement | HTMLSpanElement>} */
const previews = new Map();
/**
 * The element a result shows in: a video for an MP4, an image otherwise.
 * @param {boolean} isVideo
 * @param {string} id
 */
function mediaElement(isVideo, id) {
  if (isVideo) {
    const video = el('video');
    video.controls = true;
    video.muted = true;
    video.loop = true;
    video.setAttribute('aria-label', 'result of ' + visible(id));
    return video;
  }
  const image = el('img');
  image.alt = 'result of ' + visible(id);
  return image;
}
/** @param {Operation} op */
function preview(op) {
  if (op.state !== 'succeeded') return el('span', '');
  const known = previews.get(op.id_gen);
  if (known) return known;
  const media = mediaElement(op.kind === 'video', op.id_gen);
  previews.set(op.id_gen, media);
  loadPreview(op.id_gen, media, op.kind === 'external');
  return media;
}
/**
 * A handed-in result (kind `external`) may be either media: its answer's type picks the element.
 * @param {string} id
 * @param {HTMLImageElement | HTMLVideoElement} media
 * @param {boolean} byAnswerType
 */
async function loadPreview(id, media, byAnswerType) {
  try {
    const response = await fetch('/v1/operations/' + encodeURIComponent(id) + '/result', {
      headers: headers(),
    });
    const blob = response.ok ? await response.blob() : null;
    if (previews.get(id) !== media) return;
    if (blob) {
      const isVideo = blob.type === 'video/mp4';
      if (byAnswerType && isVideo !== media instanceof HTMLVideoElement) {
        const corrected = mediaElement(isVideo, id);
        previews.set(id, corrected);
        media.replaceWith(corrected);
        media = corrected;
      }
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
/** @param {Set<string>} shownIds */
function forgetPreviews(shownIds) {
  for (const [id, media] of previews) {
    if (shownIds.has(id)) continue;
    if ('src' in media && media.src) URL.revokeObjectURL(media.src);
    previews.delete(id);
  }
}
// The outcome of each row's last redelivery, told next to its button.
/** @type {Map<string, { text: string, className: string | undefined, unreachable: boolean }>} */
const outcomes = new Map();
/** @param {string} id */
function outcomeCell(id) {
  const row = [...rows.rows].find((r) => r.dataset.id === id);
  return row && row.querySelector('.outcome');
}
/**
 * @param {string} id
 * @param {string} short
 * @param {string} long
 * @param {string} [className]
 * @param {boolean} [unreachable]
 */
function tell(id, short, long, className, unreachable) {
  outcomes.set(id, { text: short, className, unreachable: Boolean(unreachable) });
  const cell = outcomeCell(id);
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
    const cell = outcomeCell(id);
    if (cell) cell.textContent = '';
    if (message.dataset.id === id) say(message, '');
  }
}
/**
 * @param {string} id
 * @param {HTMLButtonElement} button
 */
async function redeliver(id, button) {
  button.disabled = true;
  message.dataset.id = id;
  tell(id, 'queueing…', 'Queueing a redelivery for ' + visible(id) + '…');
  try {
    const response = await fetch('/v1/operations/' + encodeURIComponent(id) + '/redeliver', {
      method: 'POST',
      headers: headers(),
    });
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
/** @type {(string | null)[]} */
let cursors = [null];
let ticket = 0;
let timer = 0;
let listText = '';
/** @type {OperationList} */
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
  if (mine === ticket && !refused && document.visibilityState !== 'hidden')
    timer = setTimeout(refresh, POLL_MS);
}
/** The list's query: the filters, the page size and the page's cursor. */
function listQuery() {
  const query = new URLSearchParams();
  for (const name of ['state', 'callback_state', 'family', 'endpoint', 'client']) {
    const value = field(name).value;
    if (value) query.set(name, value);
  }
  query.set('limit', String(PAGE_SIZE));
  const before = cursors[cursors.length - 1];
  if (before) query.set('before', before);
  return query;
}
/**
 * The list, or with an id_gen searched for, that one operation alone (as a list of one).
 * @returns {Promise<Response>}
 */
async function fetchList() {
  const id = field('id').value.trim();
  if (!id) return fetch('/v1/operations?' + listQuery(), { headers: headers() });
  const response = await fetch('/v1/operations/' + encodeURIComponent(id), { headers: headers() });
  if (response.status === 404) return new Response('{"operations":[],"next_before":null}');
  if (!response.ok) return response;
  return new Response(JSON.stringify({ operations: [await response.json()], next_before: null }));
}
/** @param {number} mine */
async function load(mine) {
  // The browser's cache revalidates the list (ETag): an unchanged one comes back as it was.
  const response = await fetchList();
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
// Circuits by endpoint; a failed request keeps what was known.
/** @type {Map<string, { value: Circuit | null, at: number, busy: boolean }>} */
const circuits = new Map();
let circuitRequests = 0;
/** @param {Operation[]} operations */
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
/**
 * @param {string} key
 * @param {{ value: Circuit | null, at: number, busy: boolean }} known
 */
async function askCircuit(key, known) {
  known.busy = true;
  circuits.set(key, known);
  circuitRequests++;
  try {
    const answer = await fetch('/v1/endpoints/' + encodeURIComponent(key), { headers: headers() });
    if (answer.ok) known.value = await answer.json();
  } catch {
    // Unreachable: what was known stays, asked again later.
  }
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
  const refocus =
    focused instanceof HTMLElement && rows.contains(focused) ? focused.dataset.focus : undefined;
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
  showDetail();
}
/** @param {Operation} op */
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
  // The client shows for an admin key, which sees every client's (absent from an older service).
  const client = op.client === undefined ? '' : ', client ' + op.client;
  what.append(idText, el('div', op.kind + ', family ' + op.family + client), url);
  // The failure text of a failed operation (absent from an older service).
  if (op.state === 'failed' && op.error_message != null) {
    const failure = el('div', 'error: ', 'error-message');
    failure.append(clamped(op.error_message, id + '/error'));
    what.append(failure);
  }
  const state = el('span', undefined, 'state ' + op.state);
  state.append(shown(op.state));
  row.insertCell().append(state);
  row.insertCell().append(callbackCell(op));
  row.insertCell().append(attemptList(op));
  row.insertCell().append(preview(op));
  row.insertCell().append(...actions(op));
  labelCells(row);
}
/** @param {Operation} op */
function callbackCell(op) {
  const cell = document.createDocumentFragment();
  const cbState = el('span', undefined, 'state callback-state ' + op.callback.state);
  cbState.append(shown(op.callback.state));
  cell.append(cbState);
  if (op.callback.next_attempt_at) {
    const next = el('div', 'next try ', 'next-try');
    next.append(utc(op.callback.next_attempt_at, false, true));
    cell.append(next);
  }
  const key = endpointOf(op.webhook_url);
  const circuit = SHOWS_CIRCUIT.includes(op.callback.state) && key && circuits.get(key)?.value;
  if (circuit && circuit.circuit_state && circuit.circuit_state !== 'closed') {
    const line = el('div', 'circuit ' + String(circuit.circuit_state).replace('_', '-'), 'circuit');
    if (circuit.open_until) line.append(' until ', utc(circuit.open_until, false, true));
    cell.append(line);
  }
  return cell;
}
/** @param {Operation} op */
function attemptList(op) {
  const id = op.id_gen;
  const attempts = el('ol', undefined, 'attempts');
  op.callback.attempts.forEach((a, i) => {
    const item = el('li');
    // <bdi>: what the receiver (or the network) said stays inside its own words.
    const said = el('bdi');
    said.append(clamped(String(a.status_code ?? a.error), id + '/a' + i));
    item.append(utc(a.at, true), ' — ', said, ' (' + a.duration_ms + ' ms)');
    // The receiver's own words (its error code, say) when it refused.
    if (a.response_head && !(a.status_code !== null && a.status_code >= 200 && a.status_code < 300)) {
      const head = el('bdi', undefined, 'head');
      head.append(clamped(a.response_head, id + '/h' + i));
      item.append(head);
    }
    attempts.append(item);
  });
  return attempts;
}
/**
 * The row's buttons: redeliver once the callback can be queued again, and the attempts' detail.
 * @param {Operation} op
 * @returns {Node[]}
 */
function actions(op) {
  const id = op.id_gen;
  /** @type {Node[]} */
  const nodes = [];
  const finished = op.state !== 'queued' && op.state !== 'running';
  if (['delivered', 'dead', 'gone', 'retrying', 'pending'].includes(op.callback.state) && finished) {
    const button = el('button', 'Redeliver');
    button.type = 'button';
    button.setAttribute('aria-label', 'Redeliver the callback of ' + visible(id));
    button.dataset.focus = 'redeliver/' + id;
    button.addEventListener('click', () => redeliver(id, button));
    const outcome = outcomes.get(id);
    nodes.push(button, el('div', outcome ? outcome.text : '', 'outcome ' + (outcome?.className || '')));
  }
  if (op.callback.attempts.length > 0) nodes.push(detailButton(op));
  return nodes;
}

/**
 * The service dashboard at `/`: one self-contained page (no build step, no CDN) over the
 * service's own API. Lists operations with their callback's delivery, attempts, result
 * preview, filters, and a redeliver button; refreshes every two seconds. With API keys, every
 * call (the previews too) carries the key entered on the page.
 */
export function dashboardPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>mediahook — operations</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d2330; background: #f7f8fa; }
  h1 { font-size: 1.2rem; margin: 0 0 1rem; }
  form { display: flex; gap: .75rem; align-items: center; margin-bottom: 1rem; flex-wrap: wrap; }
  table { border-collapse: collapse; width: 100%; background: #fff; }
  th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #e3e6ec; vertical-align: top; }
  th { background: #eef0f4; font-weight: 600; }
  .state { font-weight: 600; }
  .delivered, .succeeded { color: #16703a; }
  .retrying, .running, .delivering, .pending, .queued { color: #8a6100; }
  .dead, .gone, .failed, .circuit { color: #b3261e; }
  ol { margin: 0; padding-left: 1.2rem; }
  img, video { max-width: 160px; max-height: 120px; display: block; }
  code { font-size: 12px; }
  #key { display: none; }
</style>
</head>
<body>
<h1>Operations</h1>
<form id="filters">
  <label>state <select name="state"><option value="">any</option><option>queued</option><option>running</option><option>succeeded</option><option>failed</option></select></label>
  <label>callback <select name="callback_state"><option value="">any</option><option>pending</option><option>delivering</option><option>retrying</option><option>delivered</option><option>dead</option><option>gone</option></select></label>
  <label>family <select name="family"><option value="">any</option><option>A</option><option>B</option></select></label>
  <label>endpoint <input name="endpoint" placeholder="host:port" size="18"></label>
  <label id="key">API key <input name="key" type="password" size="24"></label>
</form>
<p id="message"></p>
<table>
  <thead><tr><th>created</th><th>operation</th><th>state</th><th>callback</th><th>attempts</th><th>result</th><th></th></tr></thead>
  <tbody id="operations"></tbody>
</table>
<script>
const form = document.getElementById('filters');
const rows = document.getElementById('operations');
const message = document.getElementById('message');
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
function endpointOf(url) {
  try {
    const u = new URL(url);
    return u.hostname.toLowerCase() + ':' + (u.port || (u.protocol === 'https:' ? '443' : '80'));
  } catch {
    return 'invalid:' + url.slice(0, 200);
  }
}
// An <img src> cannot carry the API key: results are fetched with it and shown from blob: URLs.
const previews = new Map();
function preview(op) {
  if (op.state !== 'succeeded') return el('span', '');
  if (!previews.has(op.id_gen)) {
    const media = el(op.kind === 'video' ? 'video' : 'img');
    if (op.kind === 'video') { media.controls = true; media.muted = true; media.loop = true; }
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
async function redeliver(id) {
  const response = await fetch('/v1/operations/' + encodeURIComponent(id) + '/redeliver', { method: 'POST', headers: headers() });
  const body = await response.json();
  message.textContent = response.ok ? 'Redelivery queued for ' + id : body.error.message;
  refresh();
}
async function refresh() {
  const query = new URLSearchParams();
  for (const name of ['state', 'callback_state', 'family', 'endpoint']) if (form[name].value) query.set(name, form[name].value);
  query.set('limit', '100');
  const response = await fetch('/v1/operations?' + query, { headers: headers() });
  if (response.status === 401) {
    document.getElementById('key').style.display = 'inline';
    message.textContent = 'This service needs an API key.';
    return;
  }
  const { operations } = await response.json();
  const circuits = new Map();
  await Promise.all([...new Set(operations.map((op) => endpointOf(op.webhook_url)))].map(async (key) => {
    const answer = await fetch('/v1/endpoints/' + encodeURIComponent(key), { headers: headers() });
    if (answer.ok) circuits.set(key, await answer.json());
  }));
  rows.replaceChildren();
  forgetPreviews(new Set(operations.map((op) => op.id_gen)));
  for (const op of operations) {
    const row = rows.insertRow();
    row.dataset.id = op.id_gen;
    row.insertCell().textContent = op.created_at.replace('T', ' ').slice(0, 19);
    const what = row.insertCell();
    what.append(el('code', op.id_gen), el('div', op.kind + ', family ' + op.family), el('div', op.webhook_url));
    row.insertCell().append(el('span', op.state, 'state ' + op.state));
    const cb = row.insertCell();
    cb.append(el('span', op.callback.state, 'state callback-state ' + op.callback.state));
    if (op.callback.next_attempt_at) cb.append(el('div', 'next try ' + op.callback.next_attempt_at.slice(11, 19)));
    const circuit = circuits.get(endpointOf(op.webhook_url));
    if (circuit && circuit.circuit_state !== 'closed') {
      const until = circuit.open_until ? ' until ' + circuit.open_until.slice(11, 19) : '';
      cb.append(el('div', 'circuit ' + circuit.circuit_state.replace('_', '-') + until, 'circuit'));
    }
    const attempts = el('ol', undefined, 'attempts');
    for (const a of op.callback.attempts) {
      const item = el('li', a.at.slice(11, 23) + ' — ' + (a.status_code ?? a.error) + ' (' + a.duration_ms + ' ms)');
      // The receiver's own words (its error code, say) on hover.
      if (a.response_head) item.title = a.response_head;
      attempts.append(item);
    }
    row.insertCell().append(attempts);
    row.insertCell().append(preview(op));
    const actions = row.insertCell();
    if (['delivered', 'dead', 'gone', 'retrying', 'pending'].includes(op.callback.state) && op.state !== 'queued' && op.state !== 'running') {
      const button = el('button', 'Redeliver');
      button.type = 'button';
      button.onclick = () => redeliver(op.id_gen);
      actions.append(button);
    }
  }
}
form.addEventListener('change', () => { localStorage.setItem('mediahook-key', form.key.value); refresh(); });
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
`;
}

// The receivers panel: every receiver the service has called, worst first, with its circuit,
// its callbacks by state, the last hour's success rate and latency, its last error, and a
// Recover button that queues again what died since a chosen time.

const PANEL_MS = 10000;
const receiverRows = byId('receivers', HTMLTableSectionElement);
const COUNTED = ['pending', 'retrying', 'delivering', 'delivered', 'dead', 'gone'];
/** @type {Receiver[]} */
let receivers = [];
/** The last answer painted (an unchanged one is not painted again). */
const receiversRead = { text: '' };
// What each receiver's last recovery said, shown beside its button until the next one.
/** @type {Map<string, { text: string, className: string }>} */
const recoveries = new Map();
// Each receiver's choice of the time to recover from, while the page is open.
/** @type {Map<string, { choice: string, custom: string }>} */
const sinceChoices = new Map();

/** @param {number | null} rate */
function percent(rate) {
  return rate === null ? '—' : (Math.round(rate * 1000) / 10).toString() + ' %';
}
async function loadReceivers() {
  const answer = await readPanel(
    '/v1/endpoints' + clientParam().replace('&', '?'),
    'receivers',
    receiversRead,
  );
  if (!answer) return;
  receivers = answer.endpoints;
  paintReceivers();
}
function paintReceivers() {
  const focused = document.activeElement;
  const refocus =
    focused instanceof HTMLElement && receiverRows.contains(focused) ? focused.dataset.focus : undefined;
  receiverRows.replaceChildren();
  if (receivers.length === 0) {
    const cell = receiverRows.insertRow().insertCell();
    cell.colSpan = 7;
    cell.textContent = 'No receiver has been called yet.';
  }
  for (const receiver of receivers) receiverRow(receiver);
  if (refocus)
    [...receiverRows.querySelectorAll('button, select, input')].forEach((n) => {
      if (n instanceof HTMLElement && n.dataset.focus === refocus) n.focus();
    });
}
/** @param {Receiver} receiver */
function receiverRow(receiver) {
  const row = receiverRows.insertRow();
  row.dataset.key = receiver.key;
  const name = el('code');
  name.append(clamped(receiver.key, 'receiver/' + receiver.key));
  row.insertCell().append(name);
  const circuit = String(receiver.circuit_state).replace('_', '-');
  row.insertCell().append(el('span', circuit, 'state circuit-' + circuit));
  const counts = el('span', undefined, 'counts');
  for (const state of COUNTED) {
    const n = receiver.callbacks[state] ?? 0;
    if (n > 0) counts.append(el('span', state + ' ' + n, 'count ' + state), ' ');
  }
  row.insertCell().append(counts);
  row.insertCell().append(el('span', percent(receiver.success_rate_1h), 'rate'));
  row.insertCell().textContent = receiver.latency_ms === null ? '—' : receiver.latency_ms.p95 + ' ms';
  const last = row.insertCell();
  if (receiver.last_error !== null) {
    const why = el('bdi', undefined, 'error');
    why.append(clamped(receiver.last_error, 'receiver/' + receiver.key + '/error'));
    last.append(why);
  }
  if (receiver.last_attempt_at !== null) {
    const when = el('div', 'last try ', 'last-try');
    when.append(utc(receiver.last_attempt_at, false, true));
    last.append(when);
  }
  row.insertCell().append(recoverControls(receiver));
  labelCells(row);
}
/** @param {Receiver} receiver */
function recoverControls(receiver) {
  const box = el('div', undefined, 'recover');
  const since = el('select');
  since.setAttribute('aria-label', 'Recover the dead callbacks of ' + visible(receiver.key) + ' since');
  since.dataset.focus = 'since/' + receiver.key;
  for (const [value, label] of [
    ['1h', 'last hour'],
    ['24h', 'last 24 hours'],
    ['custom', 'since…'],
  ]) {
    const option = el('option', label);
    option.value = value;
    since.append(option);
  }
  const custom = el('input');
  custom.type = 'datetime-local';
  custom.setAttribute('aria-label', 'since (your local time)');
  custom.dataset.focus = 'custom/' + receiver.key;
  // What was chosen survives the panel's refreshes, which rebuild it.
  const chosen = sinceChoices.get(receiver.key);
  if (chosen) [since.value, custom.value] = [chosen.choice, chosen.custom];
  custom.hidden = since.value !== 'custom';
  const keep = () => {
    custom.hidden = since.value !== 'custom';
    sinceChoices.set(receiver.key, { choice: since.value, custom: custom.value });
  };
  since.addEventListener('change', keep);
  custom.addEventListener('change', keep);
  const button = el('button', 'Recover');
  button.type = 'button';
  button.dataset.focus = 'recover/' + receiver.key;
  button.setAttribute('aria-label', 'Recover the dead callbacks of ' + visible(receiver.key));
  button.disabled = (receiver.callbacks['dead'] ?? 0) === 0;
  button.addEventListener('click', () => recover(receiver.key, sinceOf(since.value, custom.value), button));
  const said = recoveries.get(receiver.key);
  box.append(
    since,
    custom,
    button,
    el('div', said ? said.text : '', 'outcome ' + (said ? said.className : '')),
  );
  return box;
}
/**
 * The time a recovery starts from, as RFC 3339; null when the custom time is not filled in.
 * @param {string} choice
 * @param {string} custom
 */
function sinceOf(choice, custom) {
  if (choice === 'custom') {
    const time = new Date(custom);
    return Number.isNaN(time.getTime()) ? null : time.toISOString();
  }
  return new Date(Date.now() - (choice === '24h' ? 24 : 1) * 3600000).toISOString();
}
/**
 * @param {string} key
 * @param {string | null} since
 * @param {HTMLButtonElement} button
 */
async function recover(key, since, button) {
  /** @param {string} text @param {string} [className] */
  const tellRecovery = (text, className) => {
    recoveries.set(key, { text, className: className || '' });
    say(message, text + ' (' + visible(key) + ')', className);
    paintReceivers();
  };
  if (since === null) return tellRecovery('Choose the time to recover from.', 'error');
  button.disabled = true;
  try {
    const response = await fetch('/v1/endpoints/' + encodeURIComponent(key) + '/recover', {
      method: 'POST',
      headers: { ...headers(), 'content-type': 'application/json' },
      body: JSON.stringify({ since }),
    });
    if (response.status === 401) askForKey();
    if (response.ok) {
      const { requeued } = await response.json();
      tellRecovery(requeued === 1 ? '1 callback queued again' : requeued + ' callbacks queued again');
    } else tellRecovery('recovery failed: ' + (await errorText(response)), 'error');
  } catch {
    tellRecovery('recovery failed: the service cannot be reached.', 'error');
  }
  receiversRead.text = '';
  refreshPanels();
  refresh();
}

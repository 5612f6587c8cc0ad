// Clients: with an admin key, the keys (make one, revoke one) and a filter by client; with a
// client key (or none, keyless), that client's signing secret. Both only when asked: a page
// that probed for them would log a refusal on every load for a client key.

const keysBox = byId('keys-box', HTMLElement);
const keyTable = byId('keys-table', HTMLTableElement);
const keyRows = byId('keys', HTMLTableSectionElement);
const KEY_COLUMNS = ['key', 'client', 'role', 'created (UTC)', 'expires', 'last used', 'state'];
const newKeyForm = byId('new-key', HTMLFormElement);
const newKeyShown = byId('new-key-shown', HTMLElement);
const secretShown = byId('secret-shown', HTMLElement);
const secretButton = byId('secret-toggle', HTMLButtonElement);
const clientFilter = byId('client-filter', HTMLElement);
const keysButton = byId('keys-toggle', HTMLButtonElement);

/** @param {Response} response */
async function sayRefused(response) {
  if (response.status === 401) askForKey();
  else say(problem, await errorText(response), 'error');
}

/** The keys, for an admin key; the client filter comes with them. */
async function loadKeys() {
  const response = await fetch('/v1/keys', { headers: headers() });
  if (!response.ok) {
    hideKeys();
    return response.status === 403
      ? say(message, 'Keys are managed with an admin key.')
      : sayRefused(response);
  }
  keysBox.hidden = false;
  clientFilter.hidden = false;
  keysButton.textContent = 'Hide keys';
  paintKeys((await response.json()).keys);
}

/** Hides what a key showed: after a change of key, the new one has to ask again. */
function hideAccess() {
  hideKeys();
  hideSecret();
}

function hideKeys() {
  keysBox.hidden = true;
  clientFilter.hidden = true;
  field('client').value = '';
  newKeyShown.hidden = true;
  newKeyShown.replaceChildren();
  keysButton.textContent = 'Keys';
}

keysButton.addEventListener('click', () => (keysBox.hidden ? loadKeys() : hideKeys()));

/** @param {ApiKey[]} keys */
function paintKeys(keys) {
  // The head is made with the first list: a page that never shows keys has no hidden columns.
  if (!keyTable.tHead) {
    const head = keyTable.createTHead().insertRow();
    for (const name of KEY_COLUMNS) {
      const cell = document.createElement('th');
      cell.scope = 'col';
      cell.textContent = name;
      head.append(cell);
    }
  }
  keyRows.replaceChildren();
  for (const key of keys) {
    const row = keyRows.insertRow();
    row.insertCell().append(el('code', key.key_id));
    row.insertCell().append(shown(key.client));
    row.insertCell().textContent = key.role;
    row.insertCell().append(utc(key.created_at));
    row.insertCell().append(key.expires_at ? utc(key.expires_at) : el('span', 'never'));
    row.insertCell().append(key.last_used_at ? utc(key.last_used_at) : el('span', 'never'));
    const state = row.insertCell();
    if (key.revoked_at) state.append(el('span', 'revoked ', 'dead'), utc(key.revoked_at));
    else {
      const revoke = el('button', 'Revoke');
      revoke.type = 'button';
      revoke.addEventListener('click', () => revokeKey(key.key_id));
      state.append(revoke);
    }
  }
}

/** @param {string} keyId */
async function revokeKey(keyId) {
  const response = await fetch('/v1/keys/' + encodeURIComponent(keyId), {
    method: 'DELETE',
    headers: headers(),
  });
  if (!response.ok) return sayRefused(response);
  say(message, 'Key ' + keyId + ' revoked.');
  await loadKeys();
}

newKeyForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const data = new FormData(newKeyForm);
  /** @type {Record<string, string>} */
  const body = { client: String(data.get('client') || '').trim(), role: String(data.get('role')) };
  const expires = String(data.get('expires_in') || '').trim();
  if (expires) body['expires_in'] = expires;
  const response = await fetch('/v1/keys', {
    method: 'POST',
    headers: { ...headers(), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) return sayRefused(response);
  const made = await response.json();
  // Shown this once: the service keeps only its hash.
  newKeyShown.replaceChildren(
    el('span', 'New key for ' + made.client + ' (copy it now, it is not shown again): '),
    el('code', made.key),
  );
  newKeyForm.reset();
  await loadKeys();
  newKeyShown.hidden = false;
});

function hideSecret() {
  secretShown.replaceChildren();
  secretShown.hidden = true;
  secretButton.textContent = 'Show signing secret';
}

secretButton.addEventListener('click', async () => {
  if (!secretShown.hidden) return hideSecret();
  const response = await fetch('/v1/webhooks/secret', { headers: headers() });
  if (!response.ok) return sayRefused(response);
  secretShown.replaceChildren(el('code', (await response.json()).secret));
  secretShown.hidden = false;
  secretButton.textContent = 'Hide signing secret';
});

/** The client filter of the panels, for an admin: `&client=…`, or nothing. */
function clientParam() {
  const client = field('client').value.trim();
  return client ? '&client=' + encodeURIComponent(client) : '';
}

// What every part of the dashboard uses: its elements, the API key, and how it talks to the API.

/**
 * The element with this id, checked to be of the type the script expects.
 * @template {HTMLElement} T
 * @param {string} id
 * @param {new () => T} type
 * @returns {T}
 */
function byId(id, type) {
  const node = document.getElementById(id);
  if (!(node instanceof type)) throw new Error('the page has no ' + type.name + ' #' + id);
  return node;
}
const form = byId('filters', HTMLFormElement);
const message = byId('message', HTMLElement);
const problem = byId('problem', HTMLElement);
const keyBox = byId('key', HTMLElement);
/**
 * A field of the filter form, by name.
 * @param {string} name
 * @returns {HTMLInputElement | HTMLSelectElement}
 */
function field(name) {
  const node = form.elements.namedItem(name);
  if (!(node instanceof HTMLInputElement || node instanceof HTMLSelectElement))
    throw new Error('no field ' + name);
  return node;
}
const keyField = field('key');
keyField.value = localStorage.getItem('mediahook-key') || '';
keyBox.hidden = !keyField.value;
/** @returns {Record<string, string>} */
function headers() {
  const key = keyField.value.trim();
  return key ? { authorization: 'Bearer ' + key } : {};
}
/**
 * Sets a live region's text only when it changes, so screen readers do not repeat it.
 * @param {HTMLElement} node
 * @param {string} text
 * @param {string} [className]
 */
function say(node, text, className) {
  if (node.textContent !== text) node.textContent = text;
  node.className = className || '';
}
/**
 * The receiver's key, `host:port`, as the service keys it.
 * @param {string} url
 */
function endpointOf(url) {
  try {
    const u = new URL(url);
    return u.hostname.toLowerCase() + ':' + (u.port || (u.protocol === 'https:' ? '443' : '80'));
  } catch {
    return null;
  }
}
/** @param {Response} response */
async function errorText(response) {
  try {
    const body = await response.json();
    if (body && body.error && typeof body.error.message === 'string') return body.error.message;
  } catch {
    // Not our JSON error (a proxy's page, say): the status says it.
  }
  return 'HTTP ' + response.status;
}
/**
 * A panel's answer from `path`, parsed, or null when there is nothing new to paint: the answer
 * is the text read last time, the key was refused (and is asked for), or the failure is said.
 * @param {string} path
 * @param {string} what what the panel shows, for the line that says it could not be read
 * @param {{ text: string }} last the panel's last answer, which this updates
 */
async function readPanel(path, what, last) {
  const response = await fetch(path, { headers: headers() });
  if (response.status === 401) {
    askForKey();
    return null;
  }
  if (!response.ok) {
    say(problem, 'The ' + what + ' could not be read: ' + (await errorText(response)), 'error');
    return null;
  }
  const text = await response.text();
  if (text === last.text) return null;
  last.text = text;
  return JSON.parse(text);
}
// After a 401 the page stops polling until a key is entered (or forgotten).
let refused = false;
function askForKey() {
  refused = true;
  keyBox.hidden = false;
  say(
    problem,
    keyField.value.trim()
      ? 'The API key was refused: enter a valid one.'
      : 'This service needs an API key: enter one above.',
    'error',
  );
}

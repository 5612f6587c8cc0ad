// The attempts of one operation in detail: for each, the request headers sent, the answer's
// status, headers and first bytes, its duration, and a `mediahook send` line that sends the
// same callback again from a shell.

const detail = byId('detail', HTMLElement);
/** The operation whose attempts are shown; null: none. @type {string | null} */
let detailId = null;
/** @param {Operation} op */
function detailButton(op) {
  const button = el('button', 'Attempts');
  button.type = 'button';
  button.setAttribute('aria-label', 'Show the attempts of ' + visible(op.id_gen) + ' in detail');
  button.dataset.focus = 'detail/' + op.id_gen;
  button.addEventListener('click', () => {
    detailId = op.id_gen;
    showDetail();
    detail.scrollIntoView();
  });
  return button;
}
/**
 * A word as a POSIX shell reads it back unchanged: in single quotes, each quote closed,
 * escaped and reopened.
 * @param {string} text
 */
function shellWord(text) {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : "'" + text.replaceAll("'", "'\\''") + "'";
}
/**
 * The `mediahook send` line that sends this operation's callback again: the same parts, the
 * result file once downloaded beside it, signed when the service signed it.
 * @param {Operation} op
 * @param {boolean} signed
 */
function sendLine(op, signed) {
  const success = op.state === 'succeeded';
  const words = ['mediahook', 'send', op.webhook_url, '--family', op.family, '--id', op.id_gen];
  if (op.finished_at) words.push('--time', op.finished_at);
  words.push('--status', op.callback.status ?? (success ? 'success' : 'error'));
  if (success) words.push('--file', op.id_gen + (op.kind === 'video' ? '.mp4' : '.jpg'));
  else words.push('--message', op.error_message ?? 'the operation failed');
  const line = words.map(shellWord).join(' ');
  return signed ? line + ' --secret "$MEDIAHOOK_SECRET"' : line;
}
/**
 * Headers as a two-column list; none: a dash.
 * @param {Record<string, string> | null | undefined} given
 * @param {string} key
 */
function headerList(given, key) {
  if (!given || Object.keys(given).length === 0) return el('p', '—');
  const list = el('dl', undefined, 'headers');
  for (const [name, value] of Object.entries(given)) {
    const term = el('dt');
    term.append(shown(name));
    const text = el('dd');
    text.append(clamped(value, key + '/' + name));
    list.append(term, text);
  }
  return list;
}
// The attempts shown open, by key, so that a refresh keeps them so; the latest opens by itself.
/** @type {Map<string, boolean>} */
const openAttempts = new Map();
/**
 * One attempt, folded to its one-line summary unless opened.
 * @param {Operation} op
 * @param {Attempt} attempt
 * @param {number} i
 */
function attemptDetail(op, attempt, i) {
  const key = 'detail/' + op.id_gen + '/' + i;
  const box = el('details', undefined, 'attempt');
  box.open = openAttempts.get(key) ?? i === op.callback.attempts.length - 1;
  box.addEventListener('toggle', () => openAttempts.set(key, box.open));
  const title = el('summary', 'Attempt ' + (i + 1) + ' at ');
  title.append(utc(attempt.at, true, true), ', ' + attempt.duration_ms + ' ms: ');
  const answer = el('span', undefined, 'answer');
  if (attempt.status_code !== null) answer.append('answered HTTP ' + attempt.status_code);
  else answer.append('no answer');
  if (attempt.error !== null) {
    const why = el('bdi', undefined, 'error');
    why.append(clamped(attempt.error, key + '/error'));
    answer.append(': ', why);
  }
  title.append(answer);
  const head = el('pre', undefined, 'first-bytes');
  head.append(shown(attempt.response_head ?? '(no bytes)'));
  box.append(
    title,
    el('h4', 'Request headers sent'),
    headerList(attempt.request_headers, key + '/request'),
    el('h4', 'Answer headers'),
    headerList(attempt.response_headers, key + '/response'),
    el('h4', 'First bytes of the answer'),
    head,
  );
  return box;
}
/** Shows the chosen operation's attempts, as the list last gave them. */
function showDetail() {
  const op = list.operations.find((o) => o.id_gen === detailId);
  detail.hidden = !op;
  if (!op) return;
  const heading = el('h2', 'Attempts of ');
  heading.append(clamped(op.id_gen, 'detail/' + op.id_gen + '/id'));
  const close = el('button', 'Close');
  close.type = 'button';
  close.addEventListener('click', () => {
    detailId = null;
    showDetail();
  });
  const signed = op.callback.attempts.some((a) => a.request_headers?.['webhook-signature'] !== undefined);
  const line = sendLine(op, signed);
  const command = el('code', line, 'send-line');
  const copy = el('button', 'Copy');
  copy.type = 'button';
  copy.addEventListener('click', () => copyText(command, line, copy));
  const send = el('div', undefined, 'send');
  send.append(el('h3', 'Send it again from a shell'), command, copy);
  if (op.state === 'succeeded') {
    send.append(el('p', 'with the result file downloaded from /v1/operations/<id_gen>/result beside it'));
  }
  const attempts = op.callback.attempts.map((a, i) => attemptDetail(op, a, i));
  detail.replaceChildren(heading, close, send, ...attempts);
}
/**
 * Puts `text` on the clipboard, or selects it for the user to copy when the browser refuses.
 * @param {HTMLElement} node
 * @param {string} text
 * @param {HTMLButtonElement} button
 */
async function copyText(node, text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    getSelection()?.selectAllChildren(node);
    button.textContent = 'Selected: copy it';
  }
}

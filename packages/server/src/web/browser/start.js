// Wires the page's controls and starts it: the panels every ten seconds, the list every two,
// none of them while the page is hidden or the API key refused.

let panelTimer = 0;
async function refreshPanels() {
  clearTimeout(panelTimer);
  try {
    await Promise.all([loadReceivers(), loadStats()]);
  } catch {
    say(problem, 'The service cannot be reached; trying again.', 'error');
  }
  if (!refused && document.visibilityState !== 'hidden') panelTimer = setTimeout(refreshPanels, PANEL_MS);
}
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'hidden') {
    clearTimeout(timer);
    clearTimeout(panelTimer);
  } else if (!refused) {
    refresh();
    refreshPanels();
  }
});
windowField.addEventListener('change', () => {
  statsRead.text = '';
  refreshPanels();
});
/** After the key changed: what it showed is forgotten and read again with the new one. */
function restart() {
  hideAccess();
  forgetPreviews(new Set());
  painted = '';
  receiversRead.text = '';
  statsRead.text = '';
  cursors = [null];
  refresh();
  refreshPanels();
}
form.addEventListener('submit', (event) => {
  event.preventDefault();
  refresh();
});
form.addEventListener('change', (event) => {
  if (event.target === keyField) {
    const key = keyField.value.trim();
    if (key) localStorage.setItem('mediahook-key', key);
    else localStorage.removeItem('mediahook-key');
    return restart();
  }
  cursors = [null];
  // The client filter narrows the panels too.
  if (event.target === field('client')) {
    receiversRead.text = '';
    statsRead.text = '';
    refreshPanels();
  }
  refresh();
});
byId('forget', HTMLButtonElement).addEventListener('click', () => {
  localStorage.removeItem('mediahook-key');
  keyField.value = '';
  restart();
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
refreshPanels();

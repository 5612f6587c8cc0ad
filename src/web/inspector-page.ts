/**
 * The receiver inspector of `mediahook listen`: one self-contained page (no build step, no
 * CDN) that polls `/requests.json` and lists every request with its verdict, fields and file.
 */
export function inspectorPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>mediahook listen — inspector</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d2330; background: #f7f8fa; }
  h1 { font-size: 1.2rem; margin: 0 0 1rem; }
  table { border-collapse: collapse; width: 100%; background: #fff; }
  th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #e3e6ec; vertical-align: top; }
  th { background: #eef0f4; font-weight: 600; }
  .accepted { color: #16703a; font-weight: 600; }
  .duplicate { color: #8a6100; font-weight: 600; }
  .rejected { color: #b3261e; font-weight: 600; }
  code { font-size: 12px; }
  img, video { max-width: 160px; max-height: 120px; display: block; }
  #empty { color: #667; }
</style>
</head>
<body>
<h1>Callbacks received</h1>
<p id="empty">No request yet. POST a callback to this address.</p>
<table id="requests" hidden>
  <thead><tr><th>time</th><th>verdict</th><th>callback</th><th>fields</th><th>file or message</th><th>headers</th></tr></thead>
  <tbody></tbody>
</table>
<script>
const tbody = document.querySelector('#requests tbody');
function cell(row, text, className) {
  const td = row.insertCell();
  if (text instanceof Node) td.append(text); else td.textContent = text;
  if (className) td.className = className;
  return td;
}
function media(file) {
  if (!file || !file.url) return document.createTextNode(file ? file.mediaType + ', ' + file.bytes + ' B' : '');
  const element = document.createElement(file.mediaType === 'video/mp4' ? 'video' : 'img');
  element.src = file.url;
  if (element.tagName === 'VIDEO') { element.controls = true; element.muted = true; }
  const wrap = document.createElement('div');
  wrap.append(element, document.createTextNode(file.mediaType + ', ' + file.bytes + ' B'));
  return wrap;
}
let shown = '';
async function refresh() {
  const response = await fetch('/requests.json', { cache: 'no-store' });
  const text = await response.text();
  // Re-render only on change, so a playing video is not reloaded every second.
  if (text === shown) return;
  shown = text;
  const requests = JSON.parse(text);
  document.getElementById('empty').hidden = requests.length > 0;
  document.getElementById('requests').hidden = requests.length === 0;
  tbody.replaceChildren();
  for (const r of requests) {
    const row = tbody.insertRow();
    row.dataset.verdict = r.verdict;
    cell(row, r.receivedAt.replace('T', ' ').slice(0, 23));
    cell(row, r.verdict + (r.error ? ' — ' + r.error.code : ''), r.verdict);
    const c = r.callback;
    cell(row, c ? c.family + ' ' + c.event : '');
    cell(row, c ? 'status=' + c.status + '\\nid_gen=' + c.id_gen + '\\ntime_gen=' + c.time_gen : (r.error ? r.error.message : ''));
    cell(row, c ? (c.event === 'error' ? c.message : media(c.file)) : '');
    const headers = document.createElement('code');
    headers.textContent = Object.entries(r.headers).map(([k, v]) => k + ': ' + v).join('\\n');
    headers.style.whiteSpace = 'pre-wrap';
    cell(row, headers);
  }
}
refresh();
setInterval(refresh, 1000);
</script>
</body>
</html>
`;
}

import { DASHBOARD_SCRIPT } from './dashboard-script.ts';
import { pageHeaders, TEXT_SCRIPT, TEXT_STYLE } from 'mediahook/web';

const STYLE = `${TEXT_STYLE}
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d2330; background: #f7f8fa; }
  h1 { font-size: 1.2rem; margin: 0 0 1rem; }
  form, nav { display: flex; gap: .75rem; align-items: center; margin-bottom: 1rem; flex-wrap: wrap; }
  #key { display: inline-flex; gap: .5rem; align-items: center; }
  #key[hidden] { display: none; }
  /* Narrow screens scroll the table sideways, inside its box, rather than squeeze it unreadable. */
  .scroll { overflow-x: auto; }
  /* Fixed columns: one long value cannot squeeze the others; it wraps, clamped to a few lines. */
  table { border-collapse: collapse; table-layout: fixed; width: 100%; min-width: 1120px; background: #fff; }
  col.c-created { width: 6.5rem; } col.c-operation { width: 24%; } col.c-state { width: 7rem; }
  col.c-callback { width: 10rem; } col.c-result { width: 10.5rem; } col.c-action { width: 8rem; }
  th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #e3e6ec; vertical-align: top;
           overflow-wrap: anywhere; }
  p { overflow-wrap: anywhere; }
  th { background: #eef0f4; font-weight: 600; }
  .state { font-weight: 600; }
  .delivered, .succeeded { color: #16703a; }
  .retrying, .running, .delivering, .pending, .queued { color: #8a6100; }
  .dead, .gone, .failed, .circuit, .error, .error-message { color: #b3261e; }
  .head { display: block; color: #4d5566; font-size: 12px; }
  .outcome { font-size: 12px; margin-top: .25rem; }
  ol { margin: 0; padding-left: 1.2rem; }
  img, video { max-width: 160px; max-height: 120px; display: block; }
  code { font-size: 12px; display: block; }
  :focus-visible { outline: 2px solid #1a56db; outline-offset: 2px; }
  @media (max-width: 640px) { body { margin: .75rem; } img, video { max-width: 110px; } }
`;

// Runs as written: the CSP admits this script by its hash, and nothing else.
const SCRIPT = TEXT_SCRIPT + DASHBOARD_SCRIPT;

/**
 * The service dashboard at `/`: one self-contained page (no build step, no CDN) over the
 * service's own API. Lists operations a page of 100 at a time with their callback's delivery,
 * attempts, result preview, filters, and a redeliver button; refreshes every two seconds while
 * shown. With API keys, every call (the previews too) carries the key entered on the page.
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
  <span id="key" hidden><label>API key <input name="key" type="password" size="24" autocomplete="off"></label>
    <button type="button" id="forget">Forget key</button></span>
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
  <colgroup><col class="c-created"><col class="c-operation"><col class="c-state"><col class="c-callback"><col class="c-attempts"><col class="c-result"><col class="c-action"></colgroup>
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

import { readFileSync } from 'node:fs';
import { FAMILIES } from 'mediahook/protocol';
import { pageHeaders, TEXT_SCRIPT, TEXT_STYLE } from 'mediahook/internal';
import { CALLBACK_STATES, OPERATION_STATES } from '../store/schema.ts';

/** A filter's choices: any, then each value (plain identifiers: nothing to escape). */
const options = (values: readonly string[]): string =>
  ['<option value="">any</option>', ...values.map((value) => `<option>${value}</option>`)].join('');

/**
 * The dashboard's scripts (browser/, plain JavaScript checked by its own tsconfig.json), in the
 * order the page runs them; the build copies them beside this module as they are.
 */
const SCRIPT_FILES = [
  'page-common',
  'operations',
  'attempt-detail',
  'receivers',
  'charts',
  'clients',
  'start',
];
const DASHBOARD_SCRIPT = SCRIPT_FILES.map((name) =>
  readFileSync(new URL(`./browser/${name}.js`, import.meta.url), 'utf8'),
).join('\n');

const STYLE = `${TEXT_STYLE}
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d2330; background: #f7f8fa; }
  h1 { font-size: 1.2rem; margin: 0 0 1rem; }
  form, nav { display: flex; gap: .75rem; align-items: center; margin-bottom: 1rem; flex-wrap: wrap; }
  #key { display: inline-flex; gap: .5rem; align-items: center; }
  #key[hidden], #client-filter[hidden], #keys-box[hidden], #secret-shown[hidden] { display: none; }
  table.keys { min-width: 720px; }
  #secret-shown code, #new-key-shown code { display: inline; font-size: 13px; overflow-wrap: anywhere; }
  /* Middling screens scroll a table sideways, inside its box; narrow ones stack it (below). */
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
  h2 { font-size: 1.05rem; margin: 1.5rem 0 .5rem; }
  h3 { font-size: .95rem; margin: .75rem 0 .25rem; }
  h4 { font-size: .85rem; margin: .5rem 0 .15rem; color: #4d5566; }
  @media (min-width: 641px) { table.receivers { min-width: 880px; } }
  col.c-key { width: 13rem; } col.c-circuit { width: 7rem; } col.c-rate { width: 7rem; }
  col.c-p95 { width: 7rem; } col.c-recover { width: 13rem; }
  .circuit-open { color: #b3261e; } .circuit-half-open { color: #8a6100; } .circuit-closed { color: #16703a; }
  .count { white-space: nowrap; }
  .recover { display: flex; flex-wrap: wrap; gap: .3rem; align-items: center; }
  .recover .outcome { flex-basis: 100%; }
  #charts { max-width: 900px; }
  svg.chart { display: block; width: 100%; height: 120px; background: #fff; border: 1px solid #e3e6ec; }
  svg.chart .axis { stroke: #c5cad3; }
  svg.chart rect.delivered { fill: #2e9d5b; } svg.chart rect.failed { fill: #d0473c; }
  svg.chart rect.p95 { fill: #1d3f8f; } svg.chart rect.p50 { fill: #8fb0ee; }
  .legend { color: #4d5566; font-size: 12px; margin: .2rem 0 .75rem; }
  #detail { background: #fff; border: 1px solid #e3e6ec; padding: .5rem 1rem 1rem; margin-top: 1rem; }
  #detail[hidden] { display: none; }
  .attempt { border-top: 1px solid #e3e6ec; padding: .4rem 0; }
  .attempt summary { cursor: pointer; font-weight: 600; overflow-wrap: anywhere; }
  dl.headers { display: grid; grid-template-columns: minmax(6rem, max-content) 1fr; gap: .1rem .75rem; margin: 0; }
  dl.headers dt { font-weight: 600; overflow-wrap: anywhere; } dl.headers dd { margin: 0; overflow-wrap: anywhere; }
  pre.first-bytes { white-space: pre-wrap; overflow-wrap: anywhere; background: #f2f3f6; padding: .5rem;
                    max-height: 12em; overflow-y: auto; margin: 0; }
  code.send-line { display: block; white-space: pre-wrap; overflow-wrap: anywhere; background: #f2f3f6;
                   padding: .5rem; margin-bottom: .3rem; }
  @media (max-width: 640px) {
    body { margin: .75rem; } img, video { max-width: 110px; }
    form label, form input { max-width: 100%; }
  }
`;

// Runs as written: the CSP admits this script by its hash, and nothing else.
const SCRIPT = TEXT_SCRIPT + DASHBOARD_SCRIPT;

/**
 * The service dashboard at `/`: one self-contained page (no CDN) over the service's own API.
 * Receivers by health with a Recover button, charts of the last hour or day, and operations a
 * page of 100 at a time with their callback's delivery, attempts (in detail on demand), result
 * preview, filters, search by id_gen, and a redeliver button; refreshes while shown. With API keys, every call (the previews too) carries the key entered on the page.
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
<h1>mediahook</h1>
<form id="filters">
  <label>id_gen <input name="id" placeholder="search by id_gen" size="24" autocomplete="off"></label>
  <label>state <select name="state">${options(OPERATION_STATES)}</select></label>
  <label>callback <select name="callback_state">${options(CALLBACK_STATES)}</select></label>
  <label>family <select name="family">${options(FAMILIES)}</select></label>
  <label>endpoint <input name="endpoint" placeholder="host:port" size="18" autocomplete="off"></label>
  <label id="client-filter" hidden>client <input name="client" placeholder="any" size="12" autocomplete="off"></label>
  <span id="key" hidden><label>API key <input name="key" type="password" size="24" autocomplete="off"></label>
    <button type="button" id="forget">Forget key</button></span>
</form>
<p id="problem" role="status"></p>
<p id="message" role="status"></p>
<section id="clients-panel" aria-label="keys and secret">
<p><button type="button" id="secret-toggle">Show signing secret</button> <span id="secret-shown" hidden></span>
  <button type="button" id="keys-toggle">Keys</button></p>
<div id="keys-box" hidden>
<h2>API keys</h2>
<div class="scroll">
<table class="keys" id="keys-table">
  <tbody id="keys"></tbody>
</table>
</div>
<form id="new-key">
  <label>client <input name="client" required pattern="[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}" size="14" autocomplete="off"></label>
  <label>role <select name="role"><option>client</option><option>admin</option></select></label>
  <label>expires in <input name="expires_in" placeholder="never (e.g. 30d)" size="12" autocomplete="off"></label>
  <button type="submit">Make key</button>
</form>
<p id="new-key-shown" role="status" hidden></p>
</div>
</section>
<section id="receivers-panel" aria-labelledby="receivers-title">
<h2 id="receivers-title">Receivers</h2>
<div class="scroll">
<table class="receivers stacks">
  <colgroup><col class="c-key"><col class="c-circuit"><col class="c-counts"><col class="c-rate"><col class="c-p95"><col class="c-last"><col class="c-recover"></colgroup>
  <thead><tr><th scope="col">receiver</th><th scope="col">circuit</th><th scope="col">callbacks</th><th scope="col">success (1 h)</th><th scope="col">p95 (1 h)</th><th scope="col">last error</th><th scope="col">recover dead callbacks</th></tr></thead>
  <tbody id="receivers"></tbody>
</table>
</div>
</section>
<section id="activity" aria-labelledby="activity-title">
<h2 id="activity-title">Activity</h2>
<label>window <select id="window"><option value="1h">last hour</option><option value="24h">last 24 hours</option></select></label>
<div id="charts"></div>
</section>
<h2>Operations</h2>
<nav aria-label="pages">
  <button type="button" id="newer" disabled>Newer</button>
  <span id="page"></span>
  <button type="button" id="older" disabled>Older</button>
</nav>
<div class="scroll">
<table class="operations stacks">
  <colgroup><col class="c-created"><col class="c-operation"><col class="c-state"><col class="c-callback"><col class="c-attempts"><col class="c-result"><col class="c-action"></colgroup>
  <thead><tr><th scope="col">created (UTC)</th><th scope="col">operation</th><th scope="col">state</th><th scope="col">callback</th><th scope="col">attempts (UTC)</th><th scope="col">result</th><th scope="col">action</th></tr></thead>
  <tbody id="operations"></tbody>
</table>
</div>
<section id="detail" aria-label="attempt detail" hidden></section>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

/** The headers of the dashboard page: its CSP admits only its own script and style. */
export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = pageHeaders(SCRIPT, STYLE, {
  media: ['blob:'],
});

// Deliveries and failures over time, and latency, drawn as SVG from `/v1/stats`: bars of
// delivered (below) and failed (above) attempts per bucket, and bars of p95 with p50 inside.

const SVG = 'http://www.w3.org/2000/svg';
const CHART_W = 600;
const CHART_H = 120;
const charts = byId('charts', HTMLElement);
const windowField = byId('window', HTMLSelectElement);
/** The last answer painted (an unchanged one is not painted again). */
const statsRead = { text: '' };

/**
 * An SVG element with its attributes (numbers and plain words only, never received text).
 * @param {string} tag
 * @param {Record<string, string | number>} attributes
 */
function svg(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}
async function loadStats() {
  const path = '/v1/stats?window=' + encodeURIComponent(windowField.value) + clientParam();
  const stats = await readPanel(path, 'charts', statsRead);
  if (stats) paintCharts(stats.buckets);
}
/**
 * A chart's frame: an SVG scaled to its box, titled for assistive technology.
 * @param {string} title
 * @param {string} className
 */
function chartFrame(title, className) {
  const chart = svg('svg', {
    viewBox: '0 0 ' + CHART_W + ' ' + CHART_H,
    role: 'img',
    class: 'chart ' + className,
  });
  chart.setAttribute('preserveAspectRatio', 'none');
  const label = svg('title', {});
  label.textContent = title;
  chart.append(
    label,
    svg('line', { x1: 0, y1: CHART_H - 0.5, x2: CHART_W, y2: CHART_H - 0.5, class: 'axis' }),
  );
  return chart;
}
/** @param {StatsBucket[]} buckets */
function paintCharts(buckets) {
  const width = CHART_W / Math.max(1, buckets.length);
  const most = Math.max(1, ...buckets.map((b) => b.delivered + b.failed));
  const delivered = buckets.reduce((n, b) => n + b.delivered, 0);
  const failed = buckets.reduce((n, b) => n + b.failed, 0);
  const counts = chartFrame(
    delivered + ' delivered, ' + failed + ' failed, at most ' + most + ' a bucket',
    'counts',
  );
  buckets.forEach((b, i) => {
    const ok = (b.delivered / most) * CHART_H;
    const bad = (b.failed / most) * CHART_H;
    const x = i * width;
    if (ok > 0)
      counts.append(
        svg('rect', { x, y: CHART_H - ok, width: Math.max(1, width - 1), height: ok, class: 'delivered' }),
      );
    if (bad > 0)
      counts.append(
        svg('rect', {
          x,
          y: CHART_H - ok - bad,
          width: Math.max(1, width - 1),
          height: bad,
          class: 'failed',
        }),
      );
  });
  const slowest = Math.max(1, ...buckets.map((b) => b.p95_ms ?? 0));
  const latency = chartFrame('latency p50 and p95, at most ' + slowest + ' ms', 'latency');
  buckets.forEach((b, i) => {
    // The p95 bar, and the p50 bar inside it: both read at a glance, however few buckets have any.
    for (const [name, value] of /** @type {const} */ ([
      ['p95', b.p95_ms],
      ['p50', b.p50_ms],
    ])) {
      if (value === null) continue;
      const height = Math.max(1, (value / slowest) * CHART_H);
      const bar = { x: i * width, y: CHART_H - height, width: Math.max(1, width - 1), height, class: name };
      latency.append(svg('rect', bar));
    }
  });
  const first = buckets[0];
  const span = first ? 'from ' + first.start.slice(11, 16) + ' UTC' : '';
  charts.replaceChildren(
    el('h3', 'Deliveries (green) and failures (red) ' + span),
    counts,
    el(
      'p',
      delivered + ' delivered, ' + failed + ' failed; the tallest bar is ' + most + ' attempts',
      'legend',
    ),
    el('h3', 'Latency: p95 (dark) and p50 (light)'),
    latency,
    el('p', 'the top of the chart is ' + slowest + ' ms', 'legend'),
  );
}

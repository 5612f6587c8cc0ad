/**
 * The operator's view at scale, on the store alone: how long `listEndpointHealth`,
 * `attemptStats` (1h, 24h) and `recoverEndpoint` take over a store of a million callbacks (by
 * default) across 97 receivers, with one attempt each spread over the last day, on SQLite and
 * PostgreSQL. Rows are bulk-loaded with plain SQL, then ANALYZEd.
 *
 *   npx tsx bench/operator-view.ts [--callbacks 1000000]
 */
import { parseArgs } from 'node:util';
import { type Backend, execOnOutbox, openOutbox, type Outbox, probePostgres } from './deliver-outbox.ts';
import { median } from './harness.ts';

// Prime, so that every receiver has callbacks of every state (states cycle by i % 100).
const RECEIVERS = 97;
const DAY_MS = 86_400_000;

/**
 * `n` finished operations, their callbacks (90 % delivered, 5 % dead, 3 % retrying, 2 %
 * pending) and one attempt for each callback tried, spread over the day before `now`.
 */
function loadSql(n: number, now: number, series: string): string[] {
  const state = `case when i % 100 < 90 then 'delivered' when i % 100 < 95 then 'dead'
    when i % 100 < 98 then 'retrying' else 'pending' end`;
  const at = `${now} - (cast(i as bigint) * 7919) % ${DAY_MS}`;
  return [
    `INSERT INTO operations (id_gen, kind, family, state, webhook_url, endpoint_key, prompt, created_at,
       started_at, finished_at, error_message, runs)
     SELECT 'op-' || i, 'image', 'A', 'failed', 'http://r' || (i % ${RECEIVERS}) || '.test/hook',
       'r' || (i % ${RECEIVERS}) || '.test:80', 'bench', ${at}, ${at}, ${at}, 'failed', 1 FROM ${series}`,
    `INSERT INTO callbacks (id_gen, state, next_attempt_at, attempt_count, round, round_attempt_count,
       endpoint_key, created_at, finished_at)
     SELECT 'op-' || i, ${state}, case when i % 100 >= 95 then ${now} else null end,
       case when i % 100 < 98 then 1 else 0 end, 1, case when i % 100 < 98 then 1 else 0 end,
       'r' || (i % ${RECEIVERS}) || '.test:80', ${at},
       case when i % 100 < 95 then ${at} else null end FROM ${series}`,
    `INSERT INTO attempts (id_gen, seq, round, at, duration_ms, status_code, error, endpoint_key)
     SELECT 'op-' || i, 1, 1, ${at}, (i * 31) % 900 + 5, case when i % 100 < 90 then 200 when i % 100 < 97
       then 500 else null end, case when i % 100 >= 97 then 'connection_refused: bench' else null end,
       'r' || (i % ${RECEIVERS}) || '.test:80' FROM ${series} WHERE i % 100 < 98`,
    'ANALYZE',
  ];
}

function load(outbox: Outbox, n: number, now: number): Promise<void> {
  return execOnOutbox(outbox, n, (series) => loadSql(n, now, series));
}

/** Median ms of `runs` runs of `work`, after one untimed. */
async function timed(runs: number, work: () => Promise<unknown>): Promise<number> {
  await work();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await work();
    times.push(performance.now() - started);
  }
  return median(times)!;
}

const { values } = parseArgs({ options: { callbacks: { type: 'string', default: '1000000' } } });
const n = Number(values.callbacks);
const backends: Backend[] = ['sqlite'];
if ((await probePostgres()) === undefined) backends.push('postgres');
for (const backend of backends) {
  const outbox = await openOutbox(backend, Buffer.alloc(0));
  try {
    const now = Date.now();
    const started = performance.now();
    await load(outbox, n, now);
    const loaded = performance.now() - started;
    const { store } = outbox;
    const health = await timed(5, () => store.listEndpointHealth('default'));
    const hour = await timed(5, () => store.attemptStats('default', '1h'));
    const day = await timed(5, () => store.attemptStats('default', '24h'));
    const recoverStarted = performance.now();
    const requeued = await store.recoverEndpoint('default', 'r7.test:80', now - 3_600_000);
    const recover = performance.now() - recoverStarted;
    const line = [
      `${backend}: ${n.toLocaleString('en')} callbacks (loaded in ${(loaded / 1000).toFixed(1)} s)`,
      `listEndpointHealth ${health.toFixed(1)} ms`,
      `attemptStats 1h ${hour.toFixed(1)} ms`,
      `attemptStats 24h ${day.toFixed(1)} ms`,
      `recoverEndpoint ${recover.toFixed(1)} ms (${requeued} requeued)`,
    ];
    console.log(line.join('; '));
  } finally {
    await outbox.dispose();
  }
}

/**
 * The operator's view in SQL, the same on both databases: receivers' health, attempts over time
 * and recovery. Percentiles are by nearest rank (the duration at rank ⌈p·n⌉ in order), read
 * from per-duration counts the database makes: at most one row per distinct duration of a
 * group is fetched, never one per attempt.
 */
import { sql } from 'kysely';
import { requeueQuery } from './callback-queries.ts';
import { inScope } from './client-queries.ts';
import { ALL_CLIENTS, type ClientScope } from './client-store.ts';
import { isoTime } from './records.ts';
import { CALLBACK_STATES, type CallbackState, type CircuitState, type StoreDb } from './schema.ts';
import { selectEndpoint } from './status-queries.ts';
import type { EndpointRecord, WorkEvent } from './store.ts';
import {
  circuitStateAt,
  type EndpointHealth,
  STATS_WINDOWS,
  type StatsBucket,
  type StatsWindow,
} from './operator-view.ts';

const HOUR_MS = 3_600_000;

/**
 * A failed attempt: no answer, an answer other than 2xx, or one not taken (a redirect). Spelled
 * as the partial index `attempts_failed_idx` spells it, so that both databases use that index.
 */
const FAILED = sql<boolean>`(error is not null or status_code is null or status_code < 200 or status_code > 299)`;

interface Durations {
  n: number;
  ok: number;
  p50: number;
  p95: number;
}

/** The value at rank ⌈p·n⌉ of `counts`, durations in ascending order with how many had each. */
function nearestRank(counts: readonly (readonly [number, number])[], n: number, percent: number): number {
  const rank = Math.ceil((n * percent) / 100);
  let seen = 0;
  for (const [duration, times] of counts) {
    seen += times;
    if (seen >= rank) return duration;
  }
  return counts.at(-1)![0];
}

/**
 * Attempts since `from` (and before `to`) grouped by `group` (an expression over `attempts`):
 * how many, how many answered 2xx, and their p50 and p95 durations. The database counts each
 * group's attempts by duration (one aggregate, where ranking every row took two sorts of the
 * window); the ranks are read from those counts here, exactly.
 */
async function attemptDurations(
  db: StoreDb,
  scope: ClientScope,
  group: ReturnType<typeof sql>,
  from: number,
  to: number,
): Promise<Map<string, Durations>> {
  const { rows } = await sql<{ g: string | number; d: number; n: number | string; ok: number | string }>`
    select ${group} as g, duration_ms as d, count(*) as n,
      sum(case when status_code between 200 and 299 and error is null then 1 else 0 end) as ok
    from attempts
    where at >= cast(${from} as bigint) and at < cast(${to} as bigint) and ${inScope(scope)}
    group by 1, 2
    order by 1, 2`.execute(db);
  const byGroup = new Map<string, { counts: [number, number][]; n: number; ok: number }>();
  for (const row of rows) {
    const key = String(row.g);
    const entry = byGroup.get(key) ?? { counts: [], n: 0, ok: 0 };
    entry.counts.push([Number(row.d), Number(row.n)]);
    entry.n += Number(row.n);
    entry.ok += Number(row.ok);
    byGroup.set(key, entry);
  }
  return new Map(
    [...byGroup].map(([key, { counts, n, ok }]) => [
      key,
      { n, ok, p50: nearestRank(counts, n, 50), p95: nearestRank(counts, n, 95) },
    ]),
  );
}

/** Each receiver's callbacks by state, from the (state, receiver, …) index alone. */
async function callbackCounts(
  db: StoreDb,
  scope: ClientScope,
): Promise<Map<string, Record<CallbackState, number>>> {
  const rows = await db
    .selectFrom('callbacks')
    .select((eb) => ['state', 'endpoint_key', eb.fn.countAll<number | string>().as('n')])
    .where(inScope(scope))
    .groupBy(['state', 'endpoint_key'])
    .execute();
  const counts = new Map<string, Record<CallbackState, number>>();
  for (const { state, endpoint_key, n } of rows) {
    const of =
      counts.get(endpoint_key) ??
      (Object.fromEntries(CALLBACK_STATES.map((s) => [s, 0])) as Record<CallbackState, number>);
    of[state] = Number(n);
    counts.set(endpoint_key, of);
  }
  return counts;
}

/** A receiver's latest attempt and latest failed one: two probes of its attempts' indexes. */
async function lastAttempts(
  db: StoreDb,
  scope: ClientScope,
  key: string,
): Promise<{ at: number | null; error: string | null }> {
  const row = await db
    .selectNoFrom((eb) => [
      eb
        .selectFrom('attempts')
        .select('at')
        .where('endpoint_key', '=', key)
        .where(inScope(scope))
        .orderBy('at', 'desc')
        .limit(1)
        .as('at'),
      eb
        .selectFrom('attempts')
        .select(sql<string>`coalesce(error, 'HTTP ' || cast(status_code as text))`.as('e'))
        .where('endpoint_key', '=', key)
        .where(FAILED)
        .where(inScope(scope))
        .orderBy('at', 'desc')
        .limit(1)
        .as('error'),
    ])
    .executeTakeFirstOrThrow();
  return { at: row.at === null ? null : Number(row.at), error: row.error ?? null };
}

const CIRCUIT_RANK: Record<CircuitState, number> = { open: 0, half_open: 1, closed: 2 };

/**
 * Worst first: an open circuit, then a half-open one; then the lowest success rate of the hour
 * (none counts as healthy); then the most callbacks dead or waiting for a retry; then by key.
 */
function worstFirst(a: EndpointHealth, b: EndpointHealth): number {
  const troubled = (e: EndpointHealth) => e.callbacks.dead + e.callbacks.retrying;
  return (
    CIRCUIT_RANK[a.circuit_state] - CIRCUIT_RANK[b.circuit_state] ||
    (a.success_rate_1h ?? 1) - (b.success_rate_1h ?? 1) ||
    troubled(b) - troubled(a) ||
    (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
  );
}

export async function selectEndpointHealth(
  db: StoreDb,
  scope: ClientScope,
  now: number,
): Promise<EndpointHealth[]> {
  const [counts, circuits, hour] = await Promise.all([
    callbackCounts(db, scope),
    db.selectFrom('endpoints').select(['key', 'circuit_state', 'open_until']).execute(),
    attemptDurations(db, scope, sql`endpoint_key`, now - HOUR_MS, now + 1),
  ]);
  const circuitOf = new Map(circuits.map((c) => [c.key, c]));
  // A client sees the receivers its own callbacks went to; every receiver's circuit is its own.
  const keys = [...new Set([...counts.keys(), ...(scope === ALL_CLIENTS ? circuitOf.keys() : [])])];
  const lasts = await Promise.all(keys.map((key) => lastAttempts(db, scope, key)));
  return keys
    .map((key, i): EndpointHealth => {
      const circuit = circuitOf.get(key);
      const recent = hour.get(key);
      const openUntil = circuit?.open_until == null ? null : Number(circuit.open_until);
      return {
        key,
        circuit_state: circuit ? circuitStateAt(circuit.circuit_state, openUntil, now) : 'closed',
        callbacks:
          counts.get(key) ??
          (Object.fromEntries(CALLBACK_STATES.map((s) => [s, 0])) as Record<CallbackState, number>),
        last_attempt_at: lasts[i]!.at === null ? null : isoTime(lasts[i]!.at!),
        last_error: lasts[i]!.error,
        success_rate_1h: recent ? recent.ok / recent.n : null,
        latency_ms:
          recent && recent.p50 !== null && recent.p95 !== null ? { p50: recent.p50, p95: recent.p95 } : null,
      };
    })
    .sort(worstFirst);
}

/** The window's buckets, aligned to their width, the last one holding `now`. */
export async function selectAttemptStats(
  db: StoreDb,
  scope: ClientScope,
  window: StatsWindow,
  now: number,
): Promise<StatsBucket[]> {
  const { span, bucket } = STATS_WINDOWS[window];
  const end = (Math.floor(now / bucket) + 1) * bucket;
  const start = end - span;
  const byBucket = await attemptDurations(
    db,
    scope,
    sql`(at - cast(${start} as bigint)) / cast(${bucket} as bigint)`,
    start,
    end,
  );
  return Array.from({ length: span / bucket }, (_, i) => {
    const b = byBucket.get(String(i));
    return {
      start: isoTime(start + i * bucket),
      delivered: b?.ok ?? 0,
      failed: b ? b.n - b.ok : 0,
      p50_ms: b?.p50 ?? null,
      p95_ms: b?.p95 ?? null,
    };
  });
}

/**
 * Queues again every `dead` callback of receiver `key` that ended at or after `since`, each as
 * a redelivery would; found through the (state, receiver, …) index.
 */
export async function recoverEndpointRows(
  trx: StoreDb,
  scope: ClientScope,
  key: string,
  since: number,
  now: number,
  events: WorkEvent[],
): Promise<number> {
  const result = await requeueQuery(trx, now)
    .where('state', '=', 'dead')
    .where('endpoint_key', '=', key)
    .where('finished_at', '>=', since)
    .where(inScope(scope))
    .executeTakeFirst();
  const requeued = Number(result.numUpdatedRows);
  if (requeued > 0) events.push({ kind: 'callback', id_gen: null });
  return requeued;
}

/** A receiver's circuit, for a scope that sent it a callback (any, for `ALL_CLIENTS`). */
export async function selectEndpointOf(
  db: StoreDb,
  scope: ClientScope,
  key: string,
): Promise<EndpointRecord | undefined> {
  if (scope !== ALL_CLIENTS) {
    const called = await db
      .selectFrom('callbacks')
      .select('id_gen')
      .where('endpoint_key', '=', key)
      .where(inScope(scope))
      .limit(1)
      .executeTakeFirst();
    if (called === undefined) return undefined;
  }
  return selectEndpoint(db, key);
}

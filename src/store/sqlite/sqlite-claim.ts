/**
 * The claim on SQLite. A claim runs in a write transaction, which on SQLite is the only one:
 * nothing changes between its statements, so it is made in plain steps (count what is in
 * flight, read the window, choose, take) instead of one statement whose correlated subqueries
 * over a materialised count cost SQLite more than all the rest of the claim. It chooses the
 * same rows as the PostgreSQL statement.
 */
import { type QueryCreator, sql } from 'kysely';
import { runCompiled } from '../compiled-query.ts';
import { type ClaimTables, dueList, dueWindow } from '../due-callbacks.ts';
import type { StoreDb } from '../operation-queries.ts';
import type { CallbackRow } from '../records.ts';

export interface SqliteClaim {
  now: number;
  /** When the leases taken run out. */
  expires: number;
  workerId: string;
  /** Callbacks of one receiver in flight at most, or undefined for no cap. */
  cap: number | undefined;
  /** How many of the oldest due callbacks the fair choice looks at. */
  scan: number;
  limit: number;
}

interface WindowRow {
  id_gen: string;
  endpoint_key: string;
}

/** A JSON array of texts as a one-column table, `value`: a list bound as one parameter. */
function jsonTable(json: string) {
  return sql<{ value: string }>`json_each(${json})`.as('j');
}

/** Callbacks in flight (leased, the lease running) per receiver. */
async function inFlightByReceiver(trx: StoreDb, now: number): Promise<Map<string, number>> {
  const rows = await runCompiled(
    trx,
    'claim:sqlite:in-flight',
    (v) =>
      trx
        .selectFrom('callbacks')
        .select((eb) => ['endpoint_key', eb.fn.countAll<number>().as('n')])
        .where('state', '=', 'delivering')
        .where('lease_expires_at', '>', v.now)
        .groupBy('endpoint_key'),
    { now },
  );
  return new Map(rows.map((r) => [r.endpoint_key, Number(r.n)]));
}

/**
 * The rows to take: the window's rows ranked per receiver (its first, second, … in the window),
 * those that keep the receiver within its cap, by rank and then in the window's order (the
 * oldest first), the first `limit` of them.
 */
function choose(window: readonly WindowRow[], inFlight: Map<string, number>, claim: SqliteClaim): string[] {
  const seen = new Map<string, number>();
  const ranked = window.map((row, position) => {
    const rank = (seen.get(row.endpoint_key) ?? 0) + 1;
    seen.set(row.endpoint_key, rank);
    return { id: row.id_gen, rank, position, key: row.endpoint_key };
  });
  return ranked
    .filter((r) => claim.cap === undefined || r.rank + (inFlight.get(r.key) ?? 0) <= claim.cap)
    .sort((a, b) => a.rank - b.rank || a.position - b.position)
    .slice(0, claim.limit)
    .map((r) => r.id);
}

/** Due callbacks, now `delivering` under the claim's lease; see `claimCallbackRows`. */
export async function claimOnSqlite(trx: StoreDb, claim: SqliteClaim): Promise<CallbackRow[]> {
  const inFlight =
    claim.cap === undefined ? new Map<string, number>() : await inFlightByReceiver(trx, claim.now);
  // A receiver already at its cap would only fill the window with rows nobody may take.
  const full = [...inFlight].filter(([, n]) => n >= (claim.cap ?? Infinity)).map(([key]) => key);
  const db = trx as unknown as QueryCreator<ClaimTables>;
  const window = await runCompiled(
    trx,
    'claim:sqlite:window',
    (v) =>
      dueWindow(
        db,
        (state) =>
          dueList(db, state, v.now, v.scan, (eb) =>
            eb('c.endpoint_key', 'not in', eb.selectFrom(jsonTable(v.full)).select('j.value')),
          ),
        v.scan,
      ).select(['d.id_gen', 'd.endpoint_key']),
    { now: claim.now, scan: claim.scan, full: JSON.stringify(full) },
  );
  const chosen = choose(window, inFlight, claim);
  if (chosen.length === 0) return [];
  return runCompiled(
    trx,
    'claim:sqlite:take',
    (v) =>
      trx
        .updateTable('callbacks')
        .set({ state: 'delivering', lease_owner: v.workerId, lease_expires_at: v.expires })
        .where('id_gen', 'in', (eb) => eb.selectFrom(jsonTable(v.ids)).select('j.value'))
        .returningAll(),
    { workerId: claim.workerId, expires: claim.expires, ids: JSON.stringify(chosen) },
  );
}

/**
 * The claim on SQLite. A claim runs in a write transaction, which on SQLite is the only one:
 * nothing changes between its statements, so it is made in plain steps (count what is in
 * flight, read the window, choose, take) instead of one statement whose correlated subqueries
 * over a materialised count cost SQLite more than all the rest of the claim. It chooses the
 * same rows as the PostgreSQL statement.
 */
import { expressionBuilder, type QueryCreator, sql } from 'kysely';
import { runCompiled } from '../compiled-query.ts';
import {
  type AdmitReceiver,
  type ClaimTables,
  type DueState,
  dueList,
  dueWindow,
  receiverDueList,
  WAITING_STATES,
  WALK_ROOM,
  cutWalks,
} from '../due-callbacks.ts';
import { halfOpenCircuits } from '../circuit.ts';
import type { ClaimValues } from '../dialect.ts';
import { type CallbackRow, type OperationRow, toCallbackRecord, toOperationRecord } from '../records.ts';
import type { StoreDb } from '../schema.ts';
import type { ClaimedCallback } from '../store.ts';

/** What the claim on SQLite uses of a claim: no other claim runs beside it, so it reads no deeper. */
type SqliteClaim = Omit<ClaimValues, 'depth'>;

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

interface ListedRow extends WindowRow {
  state: DueState;
  next_attempt_at: number | null;
}

/** Oldest first, as the window is ordered (by time, then id). */
function byAge(a: ListedRow, b: ListedRow): number {
  return Number(a.next_attempt_at) - Number(b.next_attempt_at) || (a.id_gen < b.id_gen ? -1 : 1);
}

/**
 * The window when some receivers are at their cap. Their callbacks may fill the head of a
 * state's time order, so each state's walk is bounded (`WALK_ROOM`); a state whose list comes
 * out short from a walk that was cut is listed again receiver by receiver, which reads none of
 * the full receivers' callbacks. Either way each list holds that state's oldest `scan` callbacks
 * let through, and the window is the oldest `scan` of the three, as without a cap.
 */
async function windowBesideFullReceivers(
  trx: StoreDb,
  claim: SqliteClaim,
  notFull: (list: string) => AdmitReceiver,
  full: string,
): Promise<WindowRow[]> {
  const db = trx as unknown as QueryCreator<ClaimTables>;
  const walk = claim.scan + WALK_ROOM;
  const listed = (state: DueState, list: ReturnType<typeof dueList>) =>
    db
      .selectFrom(list.as('l'))
      .select(['l.id_gen', 'l.endpoint_key', 'l.next_attempt_at', sql.lit(state).as('state')]);
  const rows = (await runCompiled(
    trx,
    'claim:sqlite:lists',
    (v) =>
      listed('pending', dueList(db, 'pending', v.now, v.scan, notFull(v.full), v.walk))
        .unionAll(listed('retrying', dueList(db, 'retrying', v.now, v.scan, notFull(v.full), v.walk)))
        .unionAll(listed('delivering', dueList(db, 'delivering', v.now, v.scan, notFull(v.full)))),
    { now: claim.now, scan: claim.scan, walk, full },
  )) as ListedRow[];
  const short = WAITING_STATES.filter((state) => rows.filter((r) => r.state === state).length < claim.scan);
  let lists = rows;
  if (short.length > 0) {
    const [cut] = await runCompiled(trx, 'claim:sqlite:cut', (v) => cutWalks(db, v.now, v.walk), {
      now: claim.now,
      walk,
    });
    for (const state of short.filter((s) => Boolean(cut?.[s]))) {
      const again = await runCompiled(
        trx,
        `claim:sqlite:by-receiver:${state}`,
        (v) => receiverDueList(db, false, state, v.now, v.scan, notFull(v.full)),
        { now: claim.now, scan: claim.scan, full },
      );
      lists = [...lists.filter((r) => r.state !== state), ...again.map((r) => ({ ...r, state }))];
    }
  }
  return lists.sort(byAge).slice(0, claim.scan);
}

/** Due callbacks, now `delivering` under the claim's lease; see `claimCallbackRows`. */
async function takeDueRows(trx: StoreDb, claim: SqliteClaim): Promise<CallbackRow[]> {
  const inFlight =
    claim.cap === undefined ? new Map<string, number>() : await inFlightByReceiver(trx, claim.now);
  // A receiver already at its cap would only fill the window with rows nobody may take.
  const full = [...inFlight].filter(([, n]) => n >= (claim.cap ?? Infinity)).map(([key]) => key);
  const db = trx as unknown as QueryCreator<ClaimTables>;
  const notFull = (list: string): AdmitReceiver => {
    const eb = expressionBuilder<ClaimTables, never>();
    return (key) => eb(key, 'not in', eb.selectFrom(jsonTable(list)).select('j.value'));
  };
  const window =
    full.length === 0
      ? await runCompiled(
          trx,
          'claim:sqlite:window',
          // No receiver is at its cap: every receiver whose circuit lets it through is admitted.
          (v) =>
            dueWindow(db, (state) => dueList(db, state, v.now, v.scan), v.scan).select([
              'd.id_gen',
              'd.endpoint_key',
            ]),
          { now: claim.now, scan: claim.scan },
        )
      : await windowBesideFullReceivers(trx, claim, notFull, JSON.stringify(full));
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

/** The operations of a list of ids, in no particular order, the ids bound as one JSON array. */
function selectOperationRows(db: StoreDb, ids: readonly string[]): Promise<OperationRow[]> {
  return runCompiled(
    db,
    'operations-by-id',
    (v) =>
      db
        .selectFrom('operations')
        .selectAll()
        .where('id_gen', 'in', (eb) => eb.selectFrom(jsonTable(v.ids)).select('j.value')),
    { ids: JSON.stringify(ids) },
  );
}

/** The claim on SQLite, in the caller's write transaction: the rows, their circuits, their operations. */
export async function claimOnSqlite(trx: StoreDb, claim: ClaimValues): Promise<ClaimedCallback[]> {
  const rows = await takeDueRows(trx, claim);
  if (rows.length === 0) return [];
  // A receiver whose circuit let these through because its pause is over is being probed.
  await halfOpenCircuits(trx, [...new Set(rows.map((r) => r.endpoint_key))], claim.now);
  const operations = await selectOperationRows(
    trx,
    rows.map((r) => r.id_gen),
  );
  const byId = new Map(operations.map((o) => [o.id_gen, toOperationRecord(o)]));
  return rows.map((r) => ({ callback: toCallbackRecord(r), operation: byId.get(r.id_gen)! }));
}

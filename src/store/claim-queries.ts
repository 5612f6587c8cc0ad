/**
 * Claiming due callbacks for delivery, shared by both databases: the one query a delivery
 * worker runs after nearly every delivery, so it is built to cost the same whatever the size of
 * the backlog, and compiled once.
 */
import type { ExpressionBuilder, QueryCreator } from 'kysely';
import { halfOpenCircuits } from './circuit.ts';
import { runCompiled } from './compiled-query.ts';
import type { Dialect, StoreDb } from './operation-queries.ts';
import { toCallbackRecord, toOperationRecord } from './records.ts';
import type { StoreSchema } from './schema.ts';
import type { ClaimCallbacksOptions, ClaimedCallback } from './store.ts';

/** The tables a claim reads, with the per-receiver counts a capped claim makes first. */
type ClaimTables = StoreSchema & { in_flight: { endpoint_key: string; n: number } };

/** Most callbacks one claim may take. */
export const MAX_CLAIM = 1000;

/** The largest fairness window: the most rows one claim ranks, and locks on PostgreSQL. */
const MAX_SCAN = 2000;

/**
 * Due callbacks, now `delivering` under `workerId`'s lease. Due means `pending`/`retrying` at
 * or past `next_attempt_at`, or `delivering` with a lapsed lease (its worker died). Receivers
 * whose circuit is open, or (with `perEndpointLimit`) who are at their cap, are passed over; an
 * open circuit whose pause is over lets its callbacks through and becomes half-open. The
 * batch takes receivers in turn (first callback of each, then second of each, …), so one
 * receiver's backlog does not crowd out the rest.
 *
 * On PostgreSQL the claim locks its window with SKIP LOCKED, so concurrent claimers split the
 * work instead of taking the same rows or queueing behind each other's locks.
 */
export async function claimCallbackRows(
  trx: StoreDb,
  dialect: Dialect,
  workerId: string,
  options: Required<Omit<ClaimCallbacksOptions, 'perEndpointLimit'>> & { perEndpointLimit?: number },
): Promise<ClaimedCallback[]> {
  const { now, leaseMs, perEndpointLimit } = options;
  const limit = Math.min(Math.max(Math.trunc(options.limit), 0), MAX_CLAIM);
  if (limit === 0) return [];
  // How far fairness looks past the oldest due callbacks: the window, every row of which a
  // claim on PostgreSQL also row-locks (a write), so it stays a small multiple of the batch. A
  // claim of one always takes the oldest row of the window (every row there is below its
  // receiver's cap, so each receiver's first passes `chosen`, and the oldest of those is the
  // oldest of all): a window of one row gives the same answer without reading and ranking a
  // hundred, and on PostgreSQL locks only that row. A worker with every slot busy claims one at
  // a time.
  const scan = limit === 1 ? 1 : Math.min(Math.max(limit * 10, 100), MAX_SCAN);
  // How many of the oldest due callbacks a claim on PostgreSQL may read to find its window
  // among those that concurrent claims do not hold locked: it passes over locked rows only
  // within these. A claim holds its whole window (up to 2000 rows) locked until it commits, a
  // few milliseconds, after which the rows it took are leased and no longer due. So the room
  // past the window is the largest window: a claim of one still finds its row beside one of the
  // largest claims, or a dozen claims of 16, under way at once. A claim that finds every row
  // locked takes nothing, and its worker looks again shortly. The rows are read in order and
  // only until the window is locked, so the room costs reads only when rows are locked.
  const depth = scan + MAX_SCAN;

  const capped = perEndpointLimit !== undefined;
  const values: ClaimValues = {
    now,
    expires: now + leaseMs,
    workerId,
    scan,
    limit,
    ...(dialect === 'postgres' ? { depth } : {}),
    ...(capped ? { cap: perEndpointLimit } : {}),
  };
  // Its SQL depends on the dialect and on whether there is a cap, nothing else: built and
  // compiled once for each, as a worker claims after nearly every delivery.
  const rows = await runCompiled(
    trx,
    `claim:${dialect}:${capped ? 'capped' : 'uncapped'}`,
    (v) => claimUpdate(trx, dialect, capped, v),
    values,
  );
  if (rows.length === 0) return [];
  // A receiver whose circuit let these through because its pause is over is being probed.
  await halfOpenCircuits(trx, [...new Set(rows.map((r) => r.endpoint_key))], now);

  const operations = await trx
    .selectFrom('operations')
    .selectAll()
    .where(
      'id_gen',
      'in',
      rows.map((r) => r.id_gen),
    )
    .execute();
  const byId = new Map(operations.map((o) => [o.id_gen, toOperationRecord(o)]));
  return rows
    .map((r) => ({ callback: toCallbackRecord(r), operation: byId.get(r.id_gen)! }))
    .sort(
      (a, b) =>
        (a.callback.next_attempt_at ?? 0) - (b.callback.next_attempt_at ?? 0) ||
        (a.callback.id_gen < b.callback.id_gen ? -1 : 1),
    );
}

type DueState = 'pending' | 'retrying' | 'delivering';

/** What one claim binds; the rest of its SQL follows from the dialect and whether it is capped. */
interface ClaimValues extends Record<string, string | number | undefined> {
  now: number;
  /** When the leases taken run out. */
  expires: number;
  workerId: string;
  /** Callbacks of one receiver in flight at most; only when capped. */
  cap?: number;
  /** How many of the oldest due callbacks the fair choice looks at. */
  scan: number;
  /** How many of the oldest due callbacks a claim reads to find its window; PostgreSQL only. */
  depth?: number;
  limit: number;
}

/** The claim itself: one UPDATE … RETURNING over the CTEs that choose the rows. */
function claimUpdate(trx: StoreDb, dialect: Dialect, capped: boolean, v: ClaimValues) {
  // With a cap, every row read is checked against its receiver's callbacks in flight (twice:
  // in the lists and in `chosen`). They are counted once per claim, in `in_flight`: the same
  // counts (every part of one statement reads the same snapshot, on PostgreSQL too), read once
  // instead of once per row, each such count reading every lease in flight.
  const start: QueryCreator<ClaimTables> = capped
    ? trx.with('in_flight', (db) =>
        db
          .selectFrom('callbacks')
          .select((eb) => ['endpoint_key', eb.fn.countAll<number>().as('n')])
          .where('state', '=', 'delivering')
          .where('lease_expires_at', '>', v.now)
          .groupBy('endpoint_key'),
      )
    : (trx as unknown as QueryCreator<ClaimTables>);

  // Due now: `pending`/`retrying` at their time, `delivering` once their lease has lapsed.
  const isDue = (
    eb: ExpressionBuilder<ClaimTables & { c: StoreSchema['callbacks'] }, 'c'>,
    state: DueState,
  ) =>
    state === 'delivering'
      ? eb.and([eb('c.state', '=', 'delivering'), eb('c.lease_expires_at', '<=', v.now)])
      : eb.and([eb('c.state', '=', state), eb('c.next_attempt_at', '<=', v.now)]);

  // The oldest due callbacks of one state that may be taken, oldest first. One state at a time,
  // each database walks `callbacks_due_idx` (state, next_attempt_at) in order and stops at the
  // LIMIT (lapsed leases, found by `callbacks_lease_idx`, are few and sorted), whereas an OR
  // over the states, or an IN on the first column of the index, makes both read every due row
  // and sort them all, a cost that grows with the backlog. The oldest `scan` of the three lists
  // are the oldest `scan` of all.
  const due = (db: QueryCreator<ClaimTables>, state: DueState) =>
    db
      .selectFrom('callbacks as c')
      .select(['c.id_gen', 'c.endpoint_key', 'c.next_attempt_at'])
      .where((eb) =>
        eb.and([
          isDue(eb, state),
          eb.not(
            eb.exists(
              eb
                .selectFrom('endpoints as e')
                .select('e.key')
                .whereRef('e.key', '=', 'c.endpoint_key')
                .where('e.circuit_state', '=', 'open')
                .where('e.open_until', '>', v.now),
            ),
          ),
        ]),
      )
      // A receiver already at its cap would only fill the window with rows nobody may take.
      .$if(capped, (qb) =>
        qb.where((eb) =>
          eb(
            eb.fn.coalesce(
              eb.selectFrom('in_flight as i').select('i.n').whereRef('i.endpoint_key', '=', 'c.endpoint_key'),
              eb.lit(0),
            ),
            '<',
            v.cap ?? 0,
          ),
        ),
      )
      .orderBy('c.next_attempt_at')
      .orderBy('c.id_gen')
      .limit(dialect === 'postgres' ? (v.depth ?? 0) : v.scan);

  // The oldest `n` of the three lists, merged in order (the plan reads no further).
  const lists = (db: QueryCreator<ClaimTables>, n: number | string) =>
    db
      .selectFrom((sub) =>
        sub
          .selectFrom(due(db, 'pending').as('p'))
          .selectAll()
          .unionAll(sub.selectFrom(due(db, 'retrying').as('r')).selectAll())
          .unionAll(sub.selectFrom(due(db, 'delivering').as('l')).selectAll())
          .as('d'),
      )
      .orderBy('d.next_attempt_at')
      .orderBy('d.id_gen')
      .limit(n as number);

  return start
    .with('locked', (db) =>
      dialect === 'postgres'
        ? // The first `scan` of the oldest `depth` listed rows that no concurrent claim holds,
          // locked. A locking clause cannot apply to a UNION, so those rows are joined to the
          // rows themselves. Where a concurrent claim committed after this statement began,
          // PostgreSQL locks the row's newest version and checks the query again on it (a row
          // that claim leased is no longer due and is passed over); with the lists a subquery of
          // their own (its LIMIT keeps it one), that check reuses the listed row instead of
          // reading the lists again for every such row. In the lists' order, the plan merges
          // them and stops once `scan` rows are locked.
          db
            .selectFrom(
              lists(db, v.depth ?? 0)
                .select(['d.id_gen', 'd.next_attempt_at'])
                .as('w'),
            )
            .innerJoin('callbacks as c', 'c.id_gen', 'w.id_gen')
            .select(['c.id_gen', 'c.endpoint_key', 'c.next_attempt_at'])
            .where((eb) => eb.or([isDue(eb, 'pending'), isDue(eb, 'retrying'), isDue(eb, 'delivering')]))
            .orderBy('w.next_attempt_at')
            .orderBy('w.id_gen')
            .limit(v.scan)
            .forUpdate('c')
            .skipLocked()
        : // SQLite has no row locks (a claim holds the only write lock): the window is read.
          lists(db, v.scan).select(['d.id_gen', 'd.endpoint_key', 'd.next_attempt_at']),
    )
    .with('ranked', (db) =>
      db.selectFrom('locked').select((eb) => [
        'locked.id_gen',
        'locked.endpoint_key',
        'locked.next_attempt_at',
        eb.fn
          .agg<number>('row_number')
          .over((ob) =>
            ob.partitionBy('locked.endpoint_key').orderBy('locked.next_attempt_at').orderBy('locked.id_gen'),
          )
          .as('endpoint_rank'),
      ]),
    )
    .with('chosen', (db) =>
      db
        .selectFrom('ranked')
        .select('ranked.id_gen')
        .$if(capped, (qb) =>
          qb.where((eb) =>
            eb(
              eb(
                'ranked.endpoint_rank',
                '+',
                eb.fn.coalesce(
                  eb
                    .selectFrom('in_flight as i')
                    .select('i.n')
                    .whereRef('i.endpoint_key', '=', 'ranked.endpoint_key'),
                  eb.lit(0),
                ),
              ),
              '<=',
              v.cap ?? 0,
            ),
          ),
        )
        .orderBy('ranked.endpoint_rank')
        .orderBy('ranked.next_attempt_at')
        .orderBy('ranked.id_gen')
        .limit(v.limit),
    )
    .updateTable('callbacks')
    .set({ state: 'delivering', lease_owner: v.workerId, lease_expires_at: v.expires })
    .where('id_gen', 'in', (eb) => eb.selectFrom('chosen').select('chosen.id_gen'))
    .returningAll();
}

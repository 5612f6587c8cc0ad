/**
 * The claim on PostgreSQL: one statement whose CTEs choose the rows and lock them with SKIP
 * LOCKED (so that concurrent claimers split the work instead of taking the same rows or queueing
 * behind each other's locks), lease them, half-open the circuits they probe, and return them
 * with their operations. One statement is one round trip and needs no transaction around it:
 * on a loaded server each round trip costs the worker's latency a fraction of a millisecond.
 */
import { expressionBuilder, type QueryCreator, sql } from 'kysely';
import { halfOpenCircuitsQuery } from '../circuit.ts';
import { MAX_SCAN, windowOf } from '../claim-queries.ts';
import { runCompiled } from '../compiled-query.ts';
import type { ClaimValues } from '../dialect.ts';
import {
  type AdmitReceiver,
  type ClaimTables,
  cutWalks,
  type DueRowList,
  type DueState,
  dueList,
  dueWindow,
  isDue,
  receiverDueList,
  WAITING_STATES,
  type WaitingState,
  WALK_ROOM,
} from '../due-callbacks.ts';
import { type OperationRow, toCallbackRecord, toOperationRecord } from '../records.ts';
import type { StoreDb } from '../schema.ts';
import type { ClaimedCallback } from '../store.ts';

/** What one claim binds; the rest of its SQL follows from whether it is capped. */
interface PostgresClaimValues extends Record<string, string | number | undefined> {
  now: number;
  /** When the leases taken run out. */
  expires: number;
  workerId: string;
  /** Callbacks of one receiver in flight at most; only when capped. */
  cap?: number;
  /** How many of the oldest due callbacks the fair choice looks at. */
  scan: number;
  /** How many of the oldest due callbacks a claim reads to find its window among unlocked rows. */
  depth: number;
  /** How many due rows of a waiting state a capped claim walks in time order at most. */
  walk?: number;
  limit: number;
}

/**
 * The claim statement; compiled once per shape by the caller. Each row: the callback and
 * `operation`, its operation's row as JSON. A capped claim walks each waiting state in time
 * order for `walk` rows at most (a receiver at its cap may have many more ahead of the others'
 * callbacks); `byReceiver` names the states to list receiver by receiver instead, for a claim
 * made again after one that came out short from a walk that was cut (see `claimOnPostgres`).
 */
function postgresClaim(
  trx: StoreDb,
  capped: boolean,
  v: PostgresClaimValues,
  byReceiver: readonly WaitingState[] = [],
) {
  // With a cap, every row read is checked against its receiver's callbacks in flight (twice:
  // in the lists and in `chosen`). They are counted once per claim, in `in_flight`: the same
  // counts (every part of one statement reads the same snapshot), read once instead of once per
  // row, each such count reading every lease in flight.
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

  // A receiver already at its cap would only fill the window with rows nobody may take.
  const belowCap: AdmitReceiver | undefined = capped
    ? (key) => {
        const eb = expressionBuilder<ClaimTables, never>();
        const n = eb.selectFrom('in_flight as i').select('i.n').where('i.endpoint_key', '=', key);
        return eb(eb.fn.coalesce(n, eb.lit(0)), '<', v.cap ?? 0);
      }
    : undefined;
  const list =
    (db: QueryCreator<ClaimTables>) =>
    (state: DueState): DueRowList =>
      state !== 'delivering' && byReceiver.includes(state)
        ? receiverDueList(db, true, state, v.now, v.depth, belowCap)
        : dueList(db, state, v.now, v.depth, belowCap, capped && state !== 'delivering' ? v.walk : undefined);

  return (
    start
      // The first `scan` of the oldest `depth` listed rows that no concurrent claim holds,
      // locked. A locking clause cannot apply to a UNION, so those rows are joined to the rows
      // themselves. Where a concurrent claim committed after this statement began, PostgreSQL
      // locks the row's newest version and checks the query again on it (a row that claim leased
      // is no longer due and is passed over); with the lists a subquery of their own (its LIMIT
      // keeps it one), that check reuses the listed row instead of reading the lists again for
      // every such row. In the lists' order, the plan merges them and stops once `scan` rows are
      // locked.
      .with('locked', (db) =>
        db
          .selectFrom(dueWindow(db, list(db), v.depth).select(['d.id_gen', 'd.next_attempt_at']).as('w'))
          .innerJoin('callbacks as c', 'c.id_gen', 'w.id_gen')
          .select(['c.id_gen', 'c.endpoint_key', 'c.next_attempt_at'])
          .where((eb) =>
            eb.or([
              isDue(eb, 'pending', v.now),
              isDue(eb, 'retrying', v.now),
              isDue(eb, 'delivering', v.now),
            ]),
          )
          .orderBy('w.next_attempt_at')
          .orderBy('w.id_gen')
          .limit(v.scan)
          .forUpdate('c')
          .skipLocked(),
      )
      .with('ranked', (db) =>
        db.selectFrom('locked').select((eb) => [
          'locked.id_gen',
          'locked.endpoint_key',
          'locked.next_attempt_at',
          eb.fn
            .agg<number>('row_number')
            .over((ob) =>
              ob
                .partitionBy('locked.endpoint_key')
                .orderBy('locked.next_attempt_at')
                .orderBy('locked.id_gen'),
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
      .with('claimed', (db) =>
        db
          .updateTable('callbacks')
          .set({ state: 'delivering', lease_owner: v.workerId, lease_expires_at: v.expires })
          .where('id_gen', 'in', (eb) => eb.selectFrom('chosen').select('chosen.id_gen'))
          // The lease alone is written here, and a lease lost to a crash of the server only
          // makes its callbacks due again (at-least-once, as a worker's crash does): its commit
          // need not wait for the WAL flush, which would put a disk sync between every enqueue
          // and its delivery. Local to this statement's own transaction: later commits on the
          // connection (the outbox's) are flushed as ever, and each flushes this one with it.
          .where(sql<boolean>`(SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL`)
          .returningAll(),
      )
      // A receiver whose circuit let these through because its pause is over is being probed.
      // A data-modifying CTE runs whether or not anything reads it.
      .with('probed', (db) =>
        halfOpenCircuitsQuery(trx, db.selectFrom('claimed').select('claimed.endpoint_key'), v.now).returning(
          'key',
        ),
      )
      .selectFrom('claimed')
      .innerJoin('operations as o', 'o.id_gen', 'claimed.id_gen')
      .selectAll('claimed')
      // The operation as one JSON value: its columns share names with the callback's. Its
      // times are JSON numbers, read as the same numbers as the bigint columns.
      .select(sql<OperationRow>`to_json(o)`.as('operation'))
  );
}

type PostgresRow = Awaited<ReturnType<typeof postgresClaimRows>>[number];

/** One claim statement on PostgreSQL; its SQL depends on the cap and `byReceiver` only. */
function postgresClaimRows(
  trx: StoreDb,
  values: PostgresClaimValues,
  byReceiver: readonly WaitingState[] = [],
) {
  const capped = values.cap !== undefined;
  const shape = `claim:postgres:${capped ? 'capped' : 'uncapped'}${byReceiver.map((s) => `:${s}`).join('')}`;
  return runCompiled(trx, shape, (v) => postgresClaim(trx, capped, v, byReceiver), values);
}

function claimedOf(rows: PostgresRow[]): ClaimedCallback[] {
  return rows.map(({ operation, ...callback }) => ({
    callback: toCallbackRecord(callback),
    operation: toOperationRecord(operation),
  }));
}

/**
 * The claim on PostgreSQL: one statement, built and compiled once per shape. A capped claim
 * walks each waiting state in time order for a bounded number of rows, so that a receiver at
 * its cap with a long backlog ahead of the others' callbacks is not read through at every
 * claim. When such a claim comes out short and a walk was cut, the states whose walk was cut
 * are listed receiver by receiver in a second statement, for what the first left of the limit.
 */
export async function claimOnPostgres(trx: StoreDb, claim: ClaimValues): Promise<ClaimedCallback[]> {
  const { cap, ...values } = claim;
  const walk = values.depth + WALK_ROOM;
  const first = claimedOf(
    await postgresClaimRows(trx, cap === undefined ? values : { ...values, cap, walk }),
  );
  if (cap === undefined || first.length >= values.limit) return first;
  const [cut] = await runCompiled(
    trx,
    'claim:postgres:cut',
    (v) => cutWalks(trx as unknown as QueryCreator<ClaimTables>, v.now, v.walk),
    { now: values.now, walk },
  );
  const byReceiver = WAITING_STATES.filter((state) => Boolean(cut?.[state]));
  if (byReceiver.length === 0) return first;
  const limit = values.limit - first.length;
  const scan = windowOf(limit);
  const again = await postgresClaimRows(
    trx,
    { ...values, limit, scan, depth: scan + MAX_SCAN, cap },
    byReceiver,
  );
  return [...first, ...claimedOf(again)];
}

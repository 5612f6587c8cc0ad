/**
 * Claiming due callbacks for delivery, shared by both databases: the one query a delivery
 * worker runs after nearly every delivery, so it is built to cost the same whatever the size of
 * the backlog, and compiled once.
 */
import type { QueryCreator } from 'kysely';
import { runCompiled } from './compiled-query.ts';
import { type Dialect, type StoreDb, skipLocked } from './operation-queries.ts';
import { toCallbackRecord, toOperationRecord } from './records.ts';
import type { StoreSchema } from './schema.ts';
import type { ClaimCallbacksOptions, ClaimedCallback } from './store.ts';

/** The tables a claim reads, with the per-receiver counts a claim on SQLite makes first. */
type ClaimTables = StoreSchema & { in_flight: { endpoint_key: string; n: number } };

/** Most callbacks one claim may take. */
export const MAX_CLAIM = 1000;

/**
 * Due callbacks, now `delivering` under `workerId`'s lease. Due means `pending`/`retrying` at
 * or past `next_attempt_at`, or `delivering` with a lapsed lease (its worker died). Receivers
 * whose circuit is open, or (with `perEndpointLimit`) who are at their cap, are passed over. The
 * batch takes receivers in turn (first callback of each, then second of each, …), so one
 * receiver's backlog does not crowd out the rest.
 *
 * On PostgreSQL the scan locks what it reads with SKIP LOCKED, so concurrent claimers split the
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
  // How far fairness looks past the oldest due callbacks. On PostgreSQL every row scanned is
  // also row-locked (a write), so the window stays a small multiple of the batch. A claim of
  // one always takes the oldest row of the window (every row there is below its receiver's
  // cap, so each receiver's first passes `chosen`, and the oldest of those is the oldest of
  // all): on SQLite, which locks no rows, a window of one row gives the same answer without
  // reading and ranking a hundred. A worker with every slot busy claims one at a time.
  const scan = limit === 1 && dialect === 'sqlite' ? 1 : Math.min(Math.max(limit * 10, 100), 2000);

  const capped = perEndpointLimit !== undefined;
  const values: ClaimValues = {
    now,
    expires: now + leaseMs,
    workerId,
    scan,
    limit,
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
  limit: number;
}

/** The claim itself: one UPDATE … RETURNING over the CTEs that choose the rows. */
function claimUpdate(trx: StoreDb, dialect: Dialect, capped: boolean, v: ClaimValues) {
  // With a cap, every row of the window is checked against its receiver's callbacks in flight
  // (twice: here and in `chosen`). SQLite, whose claims run one at a time in a write
  // transaction, counts them once per claim in `in_flight`: the same counts, read once instead
  // of once per row. PostgreSQL keeps the per-row count.
  const countOnce = dialect === 'sqlite' && capped;
  const start: QueryCreator<ClaimTables> = countOnce
    ? trx.with('in_flight', (db) =>
        db
          .selectFrom('callbacks')
          .select((eb) => ['endpoint_key', eb.fn.countAll<number>().as('n')])
          .where('state', '=', 'delivering')
          .where('lease_expires_at', '>', v.now)
          .groupBy('endpoint_key'),
      )
    : (trx as unknown as QueryCreator<ClaimTables>);

  // The oldest due callbacks that may be taken, `scan` at most: all of them, or those of one
  // state (`delivering` ones are due once their lease has lapsed).
  const due = (db: QueryCreator<ClaimTables>, which: 'any' | 'pending' | 'retrying' | 'delivering') =>
    db
      .selectFrom('callbacks as c')
      .select(['c.id_gen', 'c.endpoint_key', 'c.next_attempt_at'])
      .where((eb) =>
        eb.and([
          which === 'any'
            ? eb.or([
                eb.and([eb('c.state', 'in', ['pending', 'retrying']), eb('c.next_attempt_at', '<=', v.now)]),
                eb.and([eb('c.state', '=', 'delivering'), eb('c.lease_expires_at', '<=', v.now)]),
              ])
            : which === 'delivering'
              ? eb.and([eb('c.state', '=', 'delivering'), eb('c.lease_expires_at', '<=', v.now)])
              : eb.and([eb('c.state', '=', which), eb('c.next_attempt_at', '<=', v.now)]),
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
            countOnce
              ? eb.fn.coalesce(
                  eb
                    .selectFrom('in_flight as i')
                    .select('i.n')
                    .whereRef('i.endpoint_key', '=', 'c.endpoint_key'),
                  eb.lit(0),
                )
              : eb
                  .selectFrom('callbacks as f')
                  .select((f) => f.fn.countAll<number>().as('in_flight'))
                  .whereRef('f.endpoint_key', '=', 'c.endpoint_key')
                  .where('f.state', '=', 'delivering')
                  .where('f.lease_expires_at', '>', v.now),
            '<',
            v.cap ?? 0,
          ),
        ),
      )
      .orderBy('c.next_attempt_at')
      .orderBy('c.id_gen')
      .limit(v.scan);

  return start
    .with('locked', (db) =>
      dialect === 'postgres'
        ? skipLocked(dialect, due(db, 'any'))
        : // The same rows, found one state at a time: SQLite answers an OR over two indexes, or
          // an IN on the first column of one, by reading every due row and sorting them all, a
          // cost that grows with the backlog. One state at a time it walks (state,
          // next_attempt_at) in order and stops after `scan` rows; the oldest `scan` of the
          // three lists are the oldest `scan` of all.
          db
            .selectFrom((sub) =>
              sub
                .selectFrom(due(db, 'pending').as('p'))
                .selectAll()
                .unionAll(sub.selectFrom(due(db, 'retrying').as('r')).selectAll())
                .unionAll(sub.selectFrom(due(db, 'delivering').as('l')).selectAll())
                .as('d'),
            )
            .select(['d.id_gen', 'd.endpoint_key', 'd.next_attempt_at'])
            .orderBy('d.next_attempt_at')
            .orderBy('d.id_gen')
            .limit(v.scan),
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
                countOnce
                  ? eb.fn.coalesce(
                      eb
                        .selectFrom('in_flight as i')
                        .select('i.n')
                        .whereRef('i.endpoint_key', '=', 'ranked.endpoint_key'),
                      eb.lit(0),
                    )
                  : eb
                      .selectFrom('callbacks as f')
                      .select((f) => f.fn.countAll<number>().as('in_flight'))
                      .whereRef('f.endpoint_key', '=', 'ranked.endpoint_key')
                      .where('f.state', '=', 'delivering')
                      .where('f.lease_expires_at', '>', v.now),
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

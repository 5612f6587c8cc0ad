/**
 * Claiming due callbacks for delivery: the one query a delivery worker runs every round, so it
 * is built to cost the same whatever the size of the backlog, and compiled once. Each database
 * chooses its rows its own way (postgres/postgres-claim.ts, sqlite/sqlite-claim.ts); what the
 * claim means, and what follows it, is here.
 */
import type { QueryCreator } from 'kysely';
import { halfOpenCircuits } from './circuit.ts';
import { runCompiled } from './compiled-query.ts';
import { type Dialect, type StoreDb, selectOperationRows } from './operation-queries.ts';
import { postgresClaim, type PostgresClaimValues } from './postgres/postgres-claim.ts';
import { type ClaimTables, WAITING_STATES, type WaitingState, WALK_ROOM, cutWalks } from './due-callbacks.ts';
import { toCallbackRecord, toOperationRecord } from './records.ts';
import { claimOnSqlite } from './sqlite/sqlite-claim.ts';
import type { ClaimCallbacksOptions, ClaimedCallback } from './store.ts';

/** Most callbacks one claim may take. */
export const MAX_CLAIM = 1000;

/** The largest fairness window: the most rows one claim ranks, and locks on PostgreSQL. */
const MAX_SCAN = 2000;

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

/** What every claim statement on PostgreSQL binds; a capped one adds `cap` and `walk`. */
interface PostgresClaimBase extends Record<string, string | number | undefined> {
  now: number;
  expires: number;
  workerId: string;
  scan: number;
  depth: number;
  limit: number;
}

/**
 * The claim on PostgreSQL: one statement, built and compiled once per shape. A capped claim
 * walks each waiting state in time order for a bounded number of rows, so that a receiver at
 * its cap with a long backlog ahead of the others' callbacks is not read through at every
 * claim. When such a claim comes out short and a walk was cut, the states whose walk was cut
 * are listed receiver by receiver in a second statement, for what the first left of the limit.
 */
async function claimOnPostgres(
  trx: StoreDb,
  values: PostgresClaimBase,
  cap: number | undefined,
): Promise<ClaimedCallback[]> {
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

/** How far a claim of `limit` looks past the oldest due callbacks for fairness; see below. */
function windowOf(limit: number): number {
  return limit === 1 ? 1 : Math.min(limit * 10, MAX_SCAN);
}

/**
 * Due callbacks, now `delivering` under `workerId`'s lease. Due means `pending`/`retrying` at
 * or past `next_attempt_at`, or `delivering` with a lapsed lease (its worker died). Receivers
 * whose circuit is open, or (with `perEndpointLimit`) who are at their cap, are passed over; an
 * open circuit whose pause is over lets its callbacks through and becomes half-open. The
 * batch takes receivers in turn (first callback of each, then second of each, …), so one
 * receiver's backlog does not crowd out the rest.
 *
 * On PostgreSQL the claim locks its window with SKIP LOCKED, so concurrent claimers split the
 * work instead of taking the same rows or queueing behind each other's locks; it is one
 * statement, which needs no transaction around it. On SQLite a claim holds the database's only
 * write lock, for its several statements.
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
  // How far fairness looks past the oldest due callbacks: the window, ten times the batch. It
  // is read row by row (and on PostgreSQL each row is also locked, a write), so it stays a small
  // multiple of the batch: a worker claims every round for the slots that freed, often a few.
  // A claim of one always takes the oldest row of the window (every row there is below its
  // receiver's cap, so each receiver's first passes `chosen`, and the oldest of those is the
  // oldest of all): a window of one row gives the same answer without reading and ranking ten.
  const scan = windowOf(limit);
  // How many of the oldest due callbacks a claim on PostgreSQL may read to find its window
  // among those that concurrent claims do not hold locked: it passes over locked rows only
  // within these. A claim holds its whole window (up to 2000 rows) locked until it commits, a
  // few milliseconds, after which the rows it took are leased and no longer due. So the room
  // past the window is the largest window: a claim of one still finds its row beside one of the
  // largest claims, or a dozen claims of 16, under way at once. A claim that finds every row
  // locked takes nothing, and its worker looks again shortly. The rows are read in order and
  // only until the window is locked, so the room costs reads only when rows are locked.
  const depth = scan + MAX_SCAN;

  const expires = now + leaseMs;
  let claimed: ClaimedCallback[];
  if (dialect === 'postgres') {
    claimed = await claimOnPostgres(trx, { now, expires, workerId, scan, depth, limit }, perEndpointLimit);
  } else {
    const rows = await claimOnSqlite(trx, { now, expires, workerId, cap: perEndpointLimit, scan, limit });
    if (rows.length === 0) return [];
    // A receiver whose circuit let these through because its pause is over is being probed.
    await halfOpenCircuits(trx, [...new Set(rows.map((r) => r.endpoint_key))], now);
    const operations = await selectOperationRows(
      trx,
      dialect,
      rows.map((r) => r.id_gen),
    );
    const byId = new Map(operations.map((o) => [o.id_gen, toOperationRecord(o)]));
    claimed = rows.map((r) => ({ callback: toCallbackRecord(r), operation: byId.get(r.id_gen)! }));
  }
  return claimed.sort(
    (a, b) =>
      (a.callback.next_attempt_at ?? 0) - (b.callback.next_attempt_at ?? 0) ||
      (a.callback.id_gen < b.callback.id_gen ? -1 : 1),
  );
}

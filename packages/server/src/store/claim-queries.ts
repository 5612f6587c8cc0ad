/**
 * Claiming due callbacks for delivery: the one query a delivery worker runs every round, so it
 * is built to cost the same whatever the size of the backlog, and compiled once. Each database
 * chooses its rows its own way (its `StoreDialect.claimCallbacks`); what the claim means, how
 * far it looks, and the order it hands the callbacks out in, is here.
 */
import type { StoreDialect } from './dialect.ts';
import type { StoreDb } from './schema.ts';
import type { ClaimCallbacksOptions, ClaimedCallback } from './store.ts';

/** Most callbacks one claim may take. */
const MAX_CLAIM = 1000;

/** The largest fairness window: the most rows one claim ranks, and locks on PostgreSQL. */
export const MAX_SCAN = 2000;

/** How far a claim of `limit` looks past the oldest due callbacks for fairness; see below. */
export function windowOf(limit: number): number {
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
  dialect: StoreDialect,
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

  const claimed = await dialect.claimCallbacks(trx, {
    now,
    expires: now + leaseMs,
    workerId,
    cap: perEndpointLimit,
    scan,
    depth,
    limit,
  });
  return claimed.sort(
    (a, b) =>
      (a.callback.next_attempt_at ?? 0) - (b.callback.next_attempt_at ?? 0) ||
      (a.callback.id_gen < b.callback.id_gen ? -1 : 1),
  );
}

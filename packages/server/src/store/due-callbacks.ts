/**
 * What "due" means for a callback, as both databases' claims test it: the predicates and the
 * ordered lists of one state's oldest due callbacks, from which a claim chooses.
 */
import {
  type AliasedSelectQueryBuilder,
  type Expression,
  type ExpressionBuilder,
  expressionBuilder,
  type QueryCreator,
  type SqlBool,
  sql,
} from 'kysely';
import { openCircuits } from './circuit.ts';
import type { CallbacksTable, StoreSchema } from './schema.ts';

/** The tables a claim reads, with the per-receiver counts a capped claim may make first. */
export type ClaimTables = StoreSchema & { in_flight: { endpoint_key: string; n: number } };

export type DueState = 'pending' | 'retrying' | 'delivering';

/** The states whose callbacks wait for their time (`next_attempt_at`), by receiver too. */
export type WaitingState = 'pending' | 'retrying';
export const WAITING_STATES: readonly WaitingState[] = ['pending', 'retrying'];

/**
 * Due rows of one waiting state a claim's ordered walk reads beyond the rows it lists, at most,
 * before it stops: past that many rows of receivers it passes over, it is quicker to list the
 * state receiver by receiver (`receiverDueList`) than to read on.
 */
export const WALK_ROOM = 1000;

type CallbackBuilder = ExpressionBuilder<ClaimTables & { c: StoreSchema['callbacks'] }, 'c'>;

/** What a claim reads of a due callback. */
export type DueRow = Pick<CallbacksTable, 'id_gen' | 'endpoint_key' | 'next_attempt_at'>;

/** A list of due rows, oldest first, as a window merges it: any query of those columns. */
export interface DueRowList {
  as<A extends string>(alias: A): AliasedSelectQueryBuilder<DueRow, A>;
}

/**
 * A condition on a receiver, given its key as an expression of the enclosing query: whether
 * the claim may take its callbacks (below its cap, say). Builds on `expressionBuilder()`.
 */
export type AdmitReceiver = (key: Expression<string>) => Expression<SqlBool>;

/** Due now: `pending`/`retrying` at their time, `delivering` once their lease has lapsed. */
export function isDue(eb: CallbackBuilder, state: DueState, now: number) {
  return state === 'delivering'
    ? eb.and([eb('c.state', '=', 'delivering'), eb('c.lease_expires_at', '<=', now)])
    : eb.and([eb('c.state', '=', state), eb('c.next_attempt_at', '<=', now)]);
}

/** The receiver `key` does not have its circuit open at `now`. */
function circuitLetsThrough(key: Expression<string>, now: number): Expression<SqlBool> {
  const eb = expressionBuilder<ClaimTables, never>();
  return eb.not(eb.exists(openCircuits(now).select('endpoints.key').where('endpoints.key', '=', key)));
}

/** The conditions on a due row's receiver: its circuit, and `admit` when there is one. */
function admitted(key: Expression<string>, now: number, admit: AdmitReceiver | undefined) {
  const eb = expressionBuilder<ClaimTables, never>();
  return eb.and([circuitLetsThrough(key, now), ...(admit ? [admit(key)] : [])]);
}

/**
 * The oldest due callbacks of one state (whose receivers are let through), oldest first, at
 * most `limit`. One state at a time, each database walks `callbacks_due_idx` (state,
 * next_attempt_at) in order and stops at the LIMIT (lapsed leases, found by
 * `callbacks_lease_idx`, are few and sorted), whereas an OR over the states, or an IN on the
 * first column of the index, makes both read every due row and sort them all, a cost that grows
 * with the backlog. The oldest n of the three lists are the oldest n of all.
 *
 * With `walk`, the walk reads at most that many due rows, admitted or not: a receiver passed
 * over with a long backlog ahead of the others' rows (one at its cap) would otherwise be read
 * through at every claim. A list that comes out short while its walk was cut (`cutWalks`) is
 * then made receiver by receiver instead (`receiverDueList`).
 */
export function dueList(
  db: QueryCreator<ClaimTables>,
  state: DueState,
  now: number,
  limit: number,
  admit?: AdmitReceiver,
  walk?: number,
) {
  const due = db
    .selectFrom('callbacks as c')
    .select(['c.id_gen', 'c.endpoint_key', 'c.next_attempt_at'])
    .where((eb) => isDue(eb, state, now));
  const rows =
    walk === undefined
      ? due
      : db
          .selectFrom(due.orderBy('c.next_attempt_at').orderBy('c.id_gen').limit(walk).as('c'))
          .select(['c.id_gen', 'c.endpoint_key', 'c.next_attempt_at']);
  return rows
    .where((eb) => admitted(eb.ref('c.endpoint_key'), now, admit))
    .orderBy('c.next_attempt_at')
    .orderBy('c.id_gen')
    .limit(limit);
}

/**
 * For each waiting state, whether a walk of `walk` of its due rows stops before their end (it
 * reads `walk` of them): one row, a column per state. Read in the due index's order, so that it
 * is the index that is read, not the table.
 */
export function cutWalks(db: QueryCreator<ClaimTables>, now: number, walk: number) {
  const eb = expressionBuilder<ClaimTables, never>();
  const cut = (state: WaitingState) => {
    const walked = db
      .selectFrom('callbacks as c')
      .select('c.id_gen')
      .where((w) => isDue(w, state, now))
      .orderBy('c.next_attempt_at')
      .limit(walk);
    return eb(
      db.selectFrom(walked.as('w')).select((s) => s.fn.countAll<number>().as('n')),
      '>=',
      walk,
    );
  };
  return db.selectNoFrom(WAITING_STATES.map((state) => cut(state).as(state)));
}

/**
 * The receivers with callbacks in `state`, each once: a loose scan of
 * `callbacks_receiver_due_idx` (state, endpoint_key, next_attempt_at), one index probe per
 * receiver, however many callbacks each has.
 */
function receiversIn(state: WaitingState) {
  return sql<{ k: string }>`(with recursive rk(k) as (
      select (select endpoint_key from callbacks where state = ${state} order by endpoint_key limit 1)
      union all
      select (select endpoint_key from callbacks where state = ${state} and endpoint_key > rk.k
        order by endpoint_key limit 1) from rk where rk.k is not null)
    select k from rk where k is not null)`.as('rk');
}

/**
 * The same rows as `dueList` without `walk` (the oldest due of `state` whose receivers are let
 * through, at most `limit`), found receiver by receiver: the receivers with callbacks in that
 * state, those let through, the oldest `limit` due of each (`callbacks_receiver_due_idx`),
 * and the oldest `limit` of those. It costs a probe per receiver and reads no callback of a
 * receiver passed over, where a walk in time order reads all of them that come first.
 * PostgreSQL takes each receiver's rows with a LATERAL join, SQLite with a correlated IN.
 */
export function receiverDueList(
  db: QueryCreator<ClaimTables>,
  lateral: boolean,
  state: WaitingState,
  now: number,
  limit: number,
  admit?: AdmitReceiver,
) {
  const receivers = db.selectFrom(receiversIn(state)).where((eb) => admitted(eb.ref('rk.k'), now, admit));
  const oldest = (eb: ExpressionBuilder<ClaimTables & { rk: { k: string } }, 'rk'>) =>
    eb
      .selectFrom('callbacks as c')
      .where('c.state', '=', state)
      .whereRef('c.endpoint_key', '=', 'rk.k')
      .where('c.next_attempt_at', '<=', now)
      .orderBy('c.next_attempt_at')
      .orderBy('c.id_gen')
      .limit(limit);
  const rows = lateral
    ? receivers.innerJoinLateral(
        (eb) => oldest(eb).select(['c.id_gen', 'c.endpoint_key', 'c.next_attempt_at']).as('d'),
        (join) => join.onTrue(),
      )
    : receivers.innerJoin('callbacks as d', (join) =>
        join.on((eb) => eb('d.id_gen', 'in', oldest(eb).select('c.id_gen'))),
      );
  return rows
    .select(['d.id_gen', 'd.endpoint_key', 'd.next_attempt_at'])
    .orderBy('d.next_attempt_at')
    .orderBy('d.id_gen')
    .limit(limit);
}

/** The oldest `limit` of the three states' lists, merged in order (the plan reads no further). */
export function dueWindow(
  db: QueryCreator<ClaimTables>,
  list: (state: DueState) => DueRowList,
  limit: number,
) {
  return db
    .selectFrom((sub) =>
      sub
        .selectFrom(list('pending').as('p'))
        .selectAll()
        .unionAll(sub.selectFrom(list('retrying').as('r')).selectAll())
        .unionAll(sub.selectFrom(list('delivering').as('l')).selectAll())
        .as('d'),
    )
    .orderBy('d.next_attempt_at')
    .orderBy('d.id_gen')
    .limit(limit);
}

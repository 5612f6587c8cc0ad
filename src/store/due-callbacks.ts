/**
 * What "due" means for a callback, as both databases' claims test it: the predicates and the
 * ordered list of one state's oldest due callbacks, from which a claim chooses.
 */
import type { Expression, ExpressionBuilder, QueryCreator, SqlBool } from 'kysely';
import type { StoreSchema } from './schema.ts';

/** The tables a claim reads, with the per-receiver counts a capped claim may make first. */
export type ClaimTables = StoreSchema & { in_flight: { endpoint_key: string; n: number } };

export type DueState = 'pending' | 'retrying' | 'delivering';

/** The states a claim lists apart, each from its own index, oldest first. */
export const DUE_STATES: readonly DueState[] = ['pending', 'retrying', 'delivering'];

type CallbackBuilder = ExpressionBuilder<ClaimTables & { c: StoreSchema['callbacks'] }, 'c'>;

/** Due now: `pending`/`retrying` at their time, `delivering` once their lease has lapsed. */
export function isDue(eb: CallbackBuilder, state: DueState, now: number) {
  return state === 'delivering'
    ? eb.and([eb('c.state', '=', 'delivering'), eb('c.lease_expires_at', '<=', now)])
    : eb.and([eb('c.state', '=', state), eb('c.next_attempt_at', '<=', now)]);
}

/** The callback's receiver does not have its circuit open at `now`. */
export function circuitLetsThrough(eb: CallbackBuilder, now: number) {
  return eb.not(
    eb.exists(
      eb
        .selectFrom('endpoints as e')
        .select('e.key')
        .whereRef('e.key', '=', 'c.endpoint_key')
        .where('e.circuit_state', '=', 'open')
        .where('e.open_until', '>', now),
    ),
  );
}

/**
 * The oldest due callbacks of one state (that `admit` lets through), oldest first, at most
 * `limit`. One state at a time, each database walks `callbacks_due_idx` (state,
 * next_attempt_at) in order and stops at the LIMIT (lapsed leases, found by
 * `callbacks_lease_idx`, are few and sorted), whereas an OR over the states, or an IN on the
 * first column of the index, makes both read every due row and sort them all, a cost that grows
 * with the backlog. The oldest n of the three lists are the oldest n of all.
 */
export function dueList(
  db: QueryCreator<ClaimTables>,
  state: DueState,
  now: number,
  limit: number,
  admit?: (eb: CallbackBuilder) => Expression<SqlBool>,
) {
  return db
    .selectFrom('callbacks as c')
    .select(['c.id_gen', 'c.endpoint_key', 'c.next_attempt_at'])
    .where((eb) =>
      eb.and([isDue(eb, state, now), circuitLetsThrough(eb, now), ...(admit ? [admit(eb)] : [])]),
    )
    .orderBy('c.next_attempt_at')
    .orderBy('c.id_gen')
    .limit(limit);
}

/** The oldest `limit` of the three states' lists, merged in order (the plan reads no further). */
export function dueWindow(
  db: QueryCreator<ClaimTables>,
  list: (state: DueState) => ReturnType<typeof dueList>,
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

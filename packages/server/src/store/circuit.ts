/**
 * Receiver circuits: how attempts move a receiver's circuit, and writing that inside the
 * transaction that records the attempts, so that two workers settling attempts of one receiver
 * at once cannot lose a failure between a read and a write.
 */
import { type Expression, expressionBuilder, type OperandValueExpressionOrList, sql } from 'kysely';
import type { RowLocking } from './dialect.ts';
import type { StoreDb, StoreSchema } from './schema.ts';
import { selectEndpoint, upsertEndpoint } from './status-queries.ts';
import type { CircuitOutcome, CircuitPolicy, EndpointUpdate } from './store.ts';

export const DEFAULT_CIRCUIT_POLICY: Readonly<CircuitPolicy> = Object.freeze({
  failureThreshold: 5,
  openMs: 30_000,
  maxOpenMs: 30 * 60_000,
});

/**
 * The circuit after one more attempt. An answer closes it; a failure counts, and from the
 * threshold on opens it for a pause that doubles with every further opening. A failure while
 * the circuit is open already changes nothing: it is another attempt of the round that opened
 * it (sent before, or a probe beside the one that failed first), and one round, however many
 * callbacks it carried, doubles the pause once.
 *
 * @example
 * nextCircuit(closed, 'failed', DEFAULT_CIRCUIT_POLICY, Date.now()); // one failure counted
 */
export function nextCircuit(
  current: EndpointUpdate,
  outcome: CircuitOutcome,
  policy: CircuitPolicy,
  now: number,
): EndpointUpdate {
  if (outcome === 'answered') return { circuit_state: 'closed', consecutive_failures: 0, open_until: null };
  if (current.circuit_state === 'open') return current;
  const failures = current.consecutive_failures + 1;
  if (failures < policy.failureThreshold) return { ...current, consecutive_failures: failures };
  const openings = failures - policy.failureThreshold;
  const pause = Math.min(policy.maxOpenMs, policy.openMs * 2 ** Math.min(openings, 20));
  return { circuit_state: 'open', consecutive_failures: failures, open_until: now + pause };
}

const CLOSED: EndpointUpdate = { circuit_state: 'closed', consecutive_failures: 0, open_until: null };

function same(a: EndpointUpdate, b: EndpointUpdate): boolean {
  return (
    a.circuit_state === b.circuit_state &&
    a.consecutive_failures === b.consecutive_failures &&
    a.open_until === b.open_until
  );
}

/** Which receivers an UPDATE of circuits touches: keys, or a subquery of keys. */
type EndpointKeys = OperandValueExpressionOrList<StoreSchema, 'endpoints', 'key'>;

/**
 * Closes the circuits of `keys`, writing nothing for one closed already (the common case). On
 * PostgreSQL it also runs inside a larger statement, as a CTE (`keys` then a subquery of it).
 */
export function closeCircuitsQuery(db: StoreDb, keys: EndpointKeys, now: number) {
  return db
    .updateTable('endpoints')
    .set({ ...CLOSED, updated_at: now })
    .where('key', 'in', keys)
    .where((eb) => eb.or([eb('circuit_state', '!=', 'closed'), eb('consecutive_failures', '!=', 0)]));
}

/** Half-opens the circuits of `keys` whose pause is over at `now`. */
export function halfOpenCircuitsQuery(db: StoreDb, keys: EndpointKeys, now: number) {
  return db
    .updateTable('endpoints')
    .set({ circuit_state: 'half_open', updated_at: now })
    .where('key', 'in', keys)
    .where('circuit_state', '=', 'open')
    .where('open_until', '<=', now);
}

/**
 * The receivers whose circuit is open at `now` (their pause not over), to select from:
 * what a claim passes over, where a callback enqueued meanwhile is parked, and what an early
 * close unparks, all by this one test.
 */
export function openCircuits(now: number) {
  return expressionBuilder<StoreSchema, never>()
    .selectFrom('endpoints')
    .where('endpoints.circuit_state', '=', 'open')
    .where('endpoints.open_until', '>', now);
}

/**
 * Moves the waiting callbacks of a receiver whose circuit has just opened to the end of its
 * pause, where they would be tried first anyway. Left due, they would sit at the head of the
 * due index, and every claim and every next-due query would read past all of them (a receiver
 * down for hours may hold hundreds of thousands) before reaching another receiver's callbacks;
 * moved, they are read again when they can go. Only a speed-up: claims pass over a receiver
 * whose circuit is open whatever its callbacks' times.
 */
function parkCallbacksQuery(db: StoreDb, key: string, until: number) {
  return (
    db
      .updateTable('callbacks')
      .set({ next_attempt_at: until })
      .where('endpoint_key', '=', key)
      .where('state', 'in', ['pending', 'retrying'])
      // `+ 0` keeps the planner on the receiver's rows (endpoint_key, state) rather than walking
      // every due callback by time (callbacks_due_idx), which SQLite prefers otherwise.
      .where((eb) => eb(eb('next_attempt_at', '+', 0), '<', until))
  );
}

/**
 * Makes due now the parked first attempts (`pending` callbacks set to the end of the pause) of
 * those of `keys` whose circuit is open, for a circuit that closes before its pause is over (an
 * answer to an attempt sent before it opened). A `pending` callback is never due later than
 * its enqueueing but by parking, so those are the ones; parked retries keep the pause, which
 * their own schedule would have had them wait part of anyway. Run before the circuit is closed
 * (or, on PostgreSQL, in the statement that closes it): it reads the circuit as still open.
 */
export function unparkCallbacksQuery(db: StoreDb, keys: EndpointKeys, now: number) {
  return (
    db
      .updateTable('callbacks')
      .set({ next_attempt_at: now })
      .where(
        'endpoint_key',
        'in',
        openCircuits(now).select('endpoints.key').where('endpoints.key', 'in', keys),
      )
      .where('state', '=', 'pending')
      // As in parkCallbacksQuery: by receiver, not every parked callback by time.
      .where((eb) => eb(eb('next_attempt_at', '+', 0), '>', now))
  );
}

/**
 * When a callback enqueued at `now` for the receiver `endpointKey` (its key, or a column of the
 * enclosing query) is first due: now, or the end of its receiver's pause while its circuit is
 * open, where `parkCallbacksQuery` would have put it.
 */
export function firstDueAt(endpointKey: string | Expression<string>, now: number) {
  const pause = openCircuits(now).select('endpoints.open_until').where('endpoints.key', '=', endpointKey);
  return sql<number>`coalesce((${pause}), ${now})`;
}

/**
 * Applies attempts' outcomes, in order, to their receivers' circuits, in the caller's
 * transaction. A receiver that only answered is closed by one conditional UPDATE that
 * changes nothing (and writes nothing) when it is closed already, the common case; one with a
 * failure among them is read (locked, on PostgreSQL), folded and written once. A circuit that
 * opens parks its receiver's waiting callbacks; one closed early unparks them.
 */
export async function applyCircuitOutcomes(
  trx: StoreDb,
  locks: RowLocking,
  outcomes: ReadonlyMap<string, readonly CircuitOutcome[]>,
  policy: CircuitPolicy,
  now: number,
): Promise<void> {
  for (const [key, list] of outcomes) {
    if (!list.includes('failed')) {
      await unparkCallbacksQuery(trx, [key], now).execute();
      await closeCircuitsQuery(trx, [key], now).execute();
      continue;
    }
    const current = await selectEndpoint(trx, key, locks);
    const next = list.reduce<EndpointUpdate>(
      (state, outcome) => nextCircuit(state, outcome, policy, now),
      current,
    );
    if (same(next, current)) continue;
    if (current.circuit_state === 'open' && next.circuit_state !== 'open') {
      await unparkCallbacksQuery(trx, [key], now).execute();
    }
    await upsertEndpoint(trx, key, next, now);
    if (next.circuit_state === 'open' && next.open_until !== null && next.open_until !== current.open_until) {
      await parkCallbacksQuery(trx, key, next.open_until).execute();
    }
  }
}

/**
 * Circuits whose pause is over, among the receivers of callbacks just claimed: half-open, so
 * that what was claimed goes out as the probe and the circuit's next outcome decides.
 */
export async function halfOpenCircuits(trx: StoreDb, keys: readonly string[], now: number): Promise<void> {
  if (keys.length === 0) return;
  await halfOpenCircuitsQuery(trx, keys, now).execute();
}

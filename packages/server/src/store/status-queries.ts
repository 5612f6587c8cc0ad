/**
 * Small reads and writes around the queue: receiver circuits, queue depth for metrics, and when
 * the next thing becomes due (so an idle worker can sleep exactly that long).
 */
import { runCompiled } from './compiled-query.ts';
import type { RowLocking } from './dialect.ts';
import { toEndpointRecord } from './records.ts';
import { CALLBACK_STATES, CIRCUIT_STATES, OPERATION_STATES, type StoreDb } from './schema.ts';
import type { EndpointRecord, EndpointUpdate, QueueDepth } from './store.ts';
import { StoreError } from './store-error.ts';

/**
 * A receiver's circuit; closed when the store has no row for it. With `locks`, its row is held
 * until the caller's transaction ends, for a read that is then written.
 */
export async function selectEndpoint(db: StoreDb, key: string, locks?: RowLocking): Promise<EndpointRecord> {
  const query = db.selectFrom('endpoints').selectAll().where('key', '=', key);
  const row = await (locks ? locks.forUpdate(query) : query).executeTakeFirst();
  if (row === undefined) {
    return { key, circuit_state: 'closed', consecutive_failures: 0, open_until: null, updated_at: null };
  }
  return toEndpointRecord(row);
}

export async function upsertEndpoint(
  db: StoreDb,
  key: string,
  update: EndpointUpdate,
  now: number,
): Promise<EndpointRecord> {
  if (!CIRCUIT_STATES.includes(update.circuit_state)) {
    throw new StoreError('invalid_argument', `unknown circuit state ${update.circuit_state}`);
  }
  if (!Number.isSafeInteger(update.consecutive_failures) || update.consecutive_failures < 0) {
    throw new StoreError('invalid_argument', 'consecutive_failures must be a whole number');
  }
  const values = {
    circuit_state: update.circuit_state,
    consecutive_failures: update.consecutive_failures,
    open_until: update.open_until,
    updated_at: now,
  };
  const row = await db
    .insertInto('endpoints')
    .values({ key, ...values })
    .onConflict((oc) => oc.column('key').doUpdateSet(values))
    .returningAll()
    .executeTakeFirstOrThrow();
  return toEndpointRecord(row);
}

export async function selectQueueDepth(db: StoreDb): Promise<QueueDepth> {
  const [operations, callbacks] = await Promise.all([
    db
      .selectFrom('operations')
      .select((eb) => ['state', eb.fn.countAll<number>().as('n')])
      .groupBy('state')
      .execute(),
    db
      .selectFrom('callbacks')
      .select((eb) => ['state', eb.fn.countAll<number>().as('n')])
      .groupBy('state')
      .execute(),
  ]);
  const depth: QueueDepth = {
    operations: Object.fromEntries(OPERATION_STATES.map((s) => [s, 0])) as QueueDepth['operations'],
    callbacks: Object.fromEntries(CALLBACK_STATES.map((s) => [s, 0])) as QueueDepth['callbacks'],
  };
  for (const { state, n } of operations) depth.operations[state] = Number(n);
  for (const { state, n } of callbacks) depth.callbacks[state] = Number(n);
  return depth;
}

/**
 * The earliest time anything of `kind` (both by default) becomes due or has its lease run out;
 * null when nothing will. A callback of a receiver whose circuit is open counts from when the
 * circuit may close, so a worker does not wake up for work it would pass over.
 *
 * Each part is a read that an index answers from its first rows, so the cost does not grow
 * with the backlog (a worker asks this every time it waits): the first due callback of each
 * state whose receiver lets it through, and the earliest reopening of a circuit that holds a
 * callback back. Only the parts of `kind` are read.
 */
export async function selectNextDueAt(db: StoreDb, kind?: 'operation' | 'callback'): Promise<number | null> {
  const callbacks = kind !== 'operation';
  const operations = kind !== 'callback';
  // A waiting worker asks this after nearly every claim; it binds no values, so it is built
  // and compiled once for each kind (and each database: see runCompiled).
  const [row] = await runCompiled(
    db,
    `next-due:${kind ?? 'any'}`,
    () =>
      db.selectNoFrom((eb) => {
        // Due at its own time: its receiver's circuit is not open past that time.
        const firstDue = (state: 'pending' | 'retrying') =>
          eb
            .selectFrom('callbacks as c')
            .select('c.next_attempt_at')
            .where('c.state', '=', state)
            .where('c.next_attempt_at', 'is not', null)
            .where((w) =>
              w.not(
                w.exists(
                  w
                    .selectFrom('endpoints as e')
                    .select('e.key')
                    .whereRef('e.key', '=', 'c.endpoint_key')
                    .where('e.circuit_state', '=', 'open')
                    .whereRef('e.open_until', '>', 'c.next_attempt_at'),
                ),
              ),
            )
            .orderBy('c.next_attempt_at')
            .limit(1);
        const parts = [
          firstDue('pending').as('callback_pending'),
          firstDue('retrying').as('callback_retrying'),
          // Due when its receiver's circuit may close, the circuit being open past the time of one
          // of its callbacks. Each open circuit looks at its own receiver's callbacks only
          // (endpoint_key, state); `+ 0` keeps the planner from walking every due callback by
          // time instead, which SQLite prefers when the time is compared to an index column.
          eb
            .selectFrom('endpoints as e')
            .select((s) => s.fn.min('e.open_until').as('t'))
            .where('e.circuit_state', '=', 'open')
            .where((w) =>
              w.exists(
                w
                  .selectFrom('callbacks as c')
                  .select('c.id_gen')
                  .whereRef('c.endpoint_key', '=', 'e.key')
                  .where('c.state', 'in', ['pending', 'retrying'])
                  .where((x) => x(x('c.next_attempt_at', '+', 0), '<', x.ref('e.open_until'))),
              ),
            )
            .as('callback_held'),
          eb
            .selectFrom('callbacks')
            .select((s) => s.fn.min('lease_expires_at').as('t'))
            .where('state', '=', 'delivering')
            .as('callback_lease'),
          eb
            .selectFrom('operations')
            .select((s) => s.fn.min('created_at').as('t'))
            .where('state', '=', 'queued')
            .as('operation_due'),
          eb
            .selectFrom('operations')
            .select((s) => s.fn.min('lease_expires_at').as('t'))
            .where('state', '=', 'running')
            .as('operation_lease'),
        ];
        return [...(callbacks ? parts.slice(0, 4) : []), ...(operations ? parts.slice(4) : [])];
      }),
    {},
  );
  const times = Object.values(row ?? {})
    .filter((t) => t !== null && t !== undefined)
    .map(Number);
  return times.length === 0 ? null : Math.min(...times);
}

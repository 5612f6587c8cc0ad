/**
 * Queries on the outbox (callbacks and their attempts), shared by both databases. Every state
 * change is one conditional UPDATE whose WHERE states the transition it expects, so a row that
 * moved meanwhile is left alone and the caller learns so.
 */
import { recordValues } from './attempt-values.ts';
import type { StoreDialect } from './dialect.ts';
import type { ClientScope } from './client-store.ts';
import { selectOperationRow } from './operation-queries.ts';
import { toCallbackRecord } from './records.ts';
import { type CallbackState, FINAL_CALLBACK_STATES, type StoreDb } from './schema.ts';
import type { AttemptInput, CallbackRecord, NextCallbackState, ReleasedLeases, WorkEvent } from './store.ts';
import { StoreError } from './store-error.ts';

/**
 * Appends one attempt and moves the callback on, provided `workerId` still holds it: a worker
 * whose lease lapsed and was taken over must not overwrite the newer worker's progress.
 * `closeCircuit` (the receiver answered; only where `dialect.closesCircuitsInRecord`) also
 * closes the receiver's circuit.
 */
export async function recordAttemptRows(
  trx: StoreDb,
  dialect: StoreDialect,
  idGen: string,
  workerId: string,
  attempt: AttemptInput,
  next: NextCallbackState,
  now: number,
  events: WorkEvent[],
  closeCircuit = false,
): Promise<CallbackRecord> {
  const values = recordValues(idGen, workerId, attempt, next, now);
  const row = await dialect.recordAttempt(trx, { ...values, now, closeCircuit });
  if (row === undefined) {
    const current = await trx
      .selectFrom('callbacks')
      .select('state')
      .where('id_gen', '=', idGen)
      .executeTakeFirst();
    if (current === undefined) throw new StoreError('not_found', `no callback ${idGen}`);
    throw new StoreError(
      'lease_lost',
      `worker ${workerId} no longer holds callback ${idGen} (${current.state})`,
    );
  }
  if (next.state === 'retrying' && next.next_attempt_at <= now)
    events.push({ kind: 'callback', id_gen: idGen });
  return toCallbackRecord(row);
}

/**
 * Leases back to due now: those of one worker, or all of them (`workerId` null). A callback
 * returns to `pending` if it was never tried in this round, else to `retrying`.
 */
export async function releaseLeaseRows(
  trx: StoreDb,
  workerId: string | null,
  now: number,
  events: WorkEvent[],
): Promise<ReleasedLeases> {
  const callbacks = await trx
    .updateTable('callbacks')
    .set((eb) => ({
      state: eb
        .case()
        .when('round_attempt_count', '=', 0)
        .then('pending')
        .else('retrying')
        .end()
        .$castTo<CallbackState>(),
      next_attempt_at: now,
      lease_owner: null,
      lease_expires_at: null,
    }))
    .where('state', '=', 'delivering')
    .$if(workerId !== null, (qb) => qb.where('lease_owner', '=', workerId))
    .executeTakeFirst();
  const operations = await trx
    .updateTable('operations')
    .set({ state: 'queued', lease_owner: null, lease_expires_at: null })
    .where('state', '=', 'running')
    .$if(workerId !== null, (qb) => qb.where('lease_owner', '=', workerId))
    .executeTakeFirst();
  const released = {
    operations: Number(operations.numUpdatedRows),
    callbacks: Number(callbacks.numUpdatedRows),
  };
  if (released.callbacks > 0) events.push({ kind: 'callback', id_gen: null });
  if (released.operations > 0) events.push({ kind: 'operation', id_gen: null });
  return released;
}

/**
 * An UPDATE that queues callbacks again, due now, as `redeliverRow` describes; the caller says
 * which and in what states.
 */
export function requeueQuery(db: StoreDb, now: number) {
  return db.updateTable('callbacks').set((eb) => {
    const tried = eb('round_attempt_count', '>', 0);
    return {
      state: eb.case().when(tried).then('pending').else(eb.ref('state')).end().$castTo<CallbackState>(),
      next_attempt_at: now,
      finished_at: null,
      round: eb
        .case()
        .when(tried)
        .then(eb('round', '+', 1))
        .else(eb.ref('round'))
        .end(),
      round_attempt_count: 0,
    };
  });
}

/**
 * Queues a callback again, due now, in a new round: its retry schedule restarts, its attempts
 * so far stay. That holds for one still waiting for a retry too, so that asking for a delivery
 * now never costs it the tries its schedule had left; one not tried in its round yet is just
 * made due now. One being delivered, or an operation not finished yet, is a conflict.
 */
export async function redeliverRow(
  trx: StoreDb,
  scope: ClientScope,
  idGen: string,
  now: number,
  events: WorkEvent[],
): Promise<CallbackRecord> {
  const op = await selectOperationRow(trx, scope, idGen);
  if (op === undefined) throw new StoreError('not_found', `no operation ${idGen}`);
  const current = await trx
    .selectFrom('callbacks')
    .select('state')
    .where('id_gen', '=', idGen)
    .executeTakeFirst();
  if (current === undefined) {
    throw new StoreError('conflict', `operation ${idGen} is ${op.state}: it has no callback yet`);
  }
  if (current.state === 'delivering') {
    throw new StoreError('conflict', `callback ${idGen} is being delivered right now`);
  }
  const row = await requeueQuery(trx, now)
    .where('id_gen', '=', idGen)
    .where('state', 'in', [...FINAL_CALLBACK_STATES, 'pending', 'retrying'])
    .returningAll()
    .executeTakeFirst();
  if (row === undefined) throw new StoreError('conflict', `callback ${idGen} changed meanwhile; try again`);
  events.push({ kind: 'callback', id_gen: idGen });
  return toCallbackRecord(row);
}

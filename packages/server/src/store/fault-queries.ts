/**
 * Work given back because of a fault of the service's own (the blob store, the disk, a
 * generator that cannot start): due again after a pause, nothing counted against it, and the
 * fault shown on its operation until the work goes on.
 */
import type { StoreDb } from './schema.ts';
import type { FaultInput, WorkEvent } from './store.ts';
import { StoreError } from './store-error.ts';

/** The running operation, its lease let go, due at `fault.next_try_at`. */
export async function deferOperationRow(
  trx: StoreDb,
  idGen: string,
  workerId: string,
  fault: FaultInput,
): Promise<void> {
  const result = await trx
    .updateTable('operations')
    .set({
      lease_owner: null,
      lease_expires_at: fault.next_try_at,
      fault_message: fault.message,
      fault_since: fault.since,
    })
    .where('id_gen', '=', idGen)
    .where('state', '=', 'running')
    .where('lease_owner', '=', workerId)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n)
    throw new StoreError('lease_lost', `operation ${idGen} is not held by ${workerId}`);
}

/** The callback being delivered back to `retrying` at `fault.next_try_at`, unsent. */
export async function deferCallbackRow(
  trx: StoreDb,
  idGen: string,
  workerId: string,
  fault: FaultInput,
  events: WorkEvent[],
): Promise<void> {
  const result = await trx
    .updateTable('callbacks')
    .set({ state: 'retrying', next_attempt_at: fault.next_try_at, lease_owner: null, lease_expires_at: null })
    .where('id_gen', '=', idGen)
    .where('state', '=', 'delivering')
    .where('lease_owner', '=', workerId)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n)
    throw new StoreError('lease_lost', `callback ${idGen} is not held by ${workerId}`);
  await trx
    .updateTable('operations')
    .set({ fault_message: fault.message, fault_since: fault.since })
    .where('id_gen', '=', idGen)
    .execute();
  events.push({ kind: 'callback', id_gen: idGen });
}

/** The fault is over: the work went on. */
export async function clearFaultRow(db: StoreDb, idGen: string): Promise<void> {
  await db
    .updateTable('operations')
    .set({ fault_message: null, fault_since: null })
    .where('id_gen', '=', idGen)
    .execute();
}

/**
 * Settling a worker's finished attempts: each recorded, and the receivers' circuits moved by
 * what the attempts say about them.
 */
import { recordAttemptRows } from './callback-queries.ts';
import { applyCircuitOutcomes } from './circuit.ts';
import { clearFaultRow } from './fault-queries.ts';
import type { StoreDialect } from './dialect.ts';
import type { StoreDb } from './schema.ts';
import type { CircuitOutcome, CircuitPolicy, Settlement, SettleResult, WorkEvent } from './store.ts';
import { StoreError } from './store-error.ts';

/**
 * Whether these settlements can close their receivers' circuits in the statements that record
 * them (where the dialect can, PostgreSQL): when none failed, every circuit they touch only closes, one idempotent
 * UPDATE each, in whatever order. A failure is folded with the others of its receiver under a
 * lock, by `applyCircuitOutcomes`, and then all of them go that way.
 */
export function closesInRecord(dialect: StoreDialect, settlements: readonly Settlement[]): boolean {
  return dialect.closesCircuitsInRecord && !settlements.some((s) => s.circuit === 'failed');
}

/**
 * Records `settlements` in order and applies their circuit outcomes, in the caller's
 * transaction, or with none when `closesInRecord` and there is one settlement (its one
 * statement is atomic alone). Each is checked as `recordAttempt` checks it; one refused by the
 * store (`lease_lost`, `not_found`) is reported in its place and the rest go ahead.
 */
export async function settleRows(
  db: StoreDb,
  dialect: StoreDialect,
  workerId: string,
  settlements: readonly Settlement[],
  policy: CircuitPolicy,
  now: number,
  events: WorkEvent[],
): Promise<SettleResult['settled']> {
  const inRecord = closesInRecord(dialect, settlements);
  const settled: SettleResult['settled'] = [];
  const circuits = new Map<string, CircuitOutcome[]>();
  for (const { id_gen, attempt, next, circuit, clearsFault } of settlements) {
    try {
      const close = inRecord && circuit === 'answered';
      const record = await recordAttemptRows(
        db,
        dialect,
        id_gen,
        workerId,
        attempt,
        next,
        now,
        events,
        close,
      );
      settled.push(record);
      if (clearsFault) await clearFaultRow(db, id_gen);
      if (circuit !== null && !inRecord) {
        const list = circuits.get(record.endpoint_key) ?? [];
        list.push(circuit);
        circuits.set(record.endpoint_key, list);
      }
    } catch (error) {
      // A refusal found by reading (no row changed), so the transaction goes on, on
      // PostgreSQL too; anything else is a real failure of the whole settlement.
      if (!(error instanceof StoreError)) throw error;
      settled.push(error);
    }
  }
  await applyCircuitOutcomes(db, dialect, circuits, policy, now);
  return settled;
}

/**
 * Recording an attempt on PostgreSQL in one statement: the callback moved on (if its lease is
 * still held), the attempt appended after it, and, for an attempt its receiver answered, the
 * receiver's circuit closed: one round trip instead of three.
 */
import { sql } from 'kysely';
import { moveOnQuery, type RecordValues } from '../attempt-values.ts';
import { closeCircuitsQuery, unparkCallbacksQuery } from '../circuit.ts';
import { runCompiled } from '../compiled-query.ts';
import type { AttemptValues } from '../dialect.ts';
import type { CallbackRow } from '../records.ts';
import type { StoreDb } from '../schema.ts';

/**
 * The moved callback's row, or none when the lease was lost (and nothing is written). With
 * `v.closeCircuit` 1, the receiver answered: its circuit is closed by the UPDATE
 * `applyCircuitOutcomes` runs, which writes nothing when it is closed already.
 */
function postgresRecordAttempt(outer: StoreDb, v: RecordValues & { now: number; closeCircuit: number }) {
  return (
    outer
      .with('moved', () => moveOnQuery(outer, v))
      // Reads the circuit as it was before `closed` (every part of a statement reads the same
      // snapshot), so it unparks only for a circuit this statement closes while still open.
      .with('unparked', (db) =>
        unparkCallbacksQuery(outer, db.selectFrom('moved').select('moved.endpoint_key'), v.now)
          .where(sql<boolean>`${v.closeCircuit} = 1`)
          .returning('id_gen'),
      )
      .with('closed', (db) =>
        closeCircuitsQuery(outer, db.selectFrom('moved').select('moved.endpoint_key'), v.now)
          .where(sql<boolean>`${v.closeCircuit} = 1`)
          .returning('key'),
      )
      // A data-modifying CTE runs whether or not anything reads it. The values of an
      // INSERT … SELECT are not typed by their columns, hence the casts.
      .with('logged', (db) =>
        db
          .insertInto('attempts')
          .columns([
            'id_gen',
            'seq',
            'round',
            'at',
            'duration_ms',
            'status_code',
            'error',
            'response_head',
            'worker_id',
            'endpoint_key',
            'request_headers',
            'response_headers',
          ])
          .expression((eb) =>
            eb
              .selectFrom('moved')
              .select([
                'moved.id_gen',
                'moved.attempt_count',
                'moved.round',
                sql<number>`cast(${v.at} as bigint)`.as('at'),
                sql<number>`cast(${v.durationMs} as integer)`.as('duration_ms'),
                sql<number | null>`cast(${v.statusCode} as integer)`.as('status_code'),
                sql<string | null>`cast(${v.error} as text)`.as('error'),
                sql<string | null>`cast(${v.responseHead} as text)`.as('response_head'),
                sql<string>`cast(${v.workerId} as text)`.as('worker_id'),
                'moved.endpoint_key',
                sql<string | null>`cast(${v.requestHeaders} as text)`.as('request_headers'),
                sql<string | null>`cast(${v.responseHeaders} as text)`.as('response_headers'),
              ]),
          ),
      )
      .selectFrom('moved')
      .selectAll('moved')
  );
}

/** The attempt recorded in one statement, built and compiled once, then only bound. */
export async function recordAttemptOnPostgres(
  db: StoreDb,
  v: AttemptValues,
): Promise<CallbackRow | undefined> {
  const [row] = await runCompiled(db, 'record-attempt:postgres', (b) => postgresRecordAttempt(db, b), {
    ...v,
    closeCircuit: v.closeCircuit ? 1 : 0,
  });
  return row;
}

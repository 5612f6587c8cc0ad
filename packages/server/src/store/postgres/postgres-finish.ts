/**
 * A finish on PostgreSQL in one statement: the operation's final state, its callback row and
 * the wake-up NOTIFY. One statement is atomic without a transaction around it, so the outbox
 * write keeps its promise (both rows or neither, and a wake-up only for what committed) in one
 * round trip instead of five (BEGIN, UPDATE, INSERT, NOTIFY, COMMIT): the first part of every
 * callback's latency.
 */
import { sql } from 'kysely';
import { firstDueAt } from '../circuit.ts';
import { runCompiled } from '../compiled-query.ts';
import { finishChangedNothing, finishedColumns, outcomeValues } from '../operation-queries.ts';
import { toOperationRecord } from '../records.ts';
import type { StoreDb } from '../schema.ts';
import type { FinishResult, OperationOutcome } from '../store.ts';
import { encodeWorkEvent } from './notification-listener.ts';

/** See `finishOperationRows`, which does the same in the caller's transaction. */
export async function finishOperationOnPostgres(
  db: StoreDb,
  idGen: string,
  outcome: OperationOutcome,
  now: number,
  channel: string,
): Promise<FinishResult> {
  const [row] = await runCompiled(
    db,
    'finish-operation:postgres',
    (v) =>
      db
        .with('finished', (db) =>
          db
            .updateTable('operations')
            .set(finishedColumns(v))
            .where('id_gen', '=', v.idGen)
            .where('state', 'in', ['queued', 'running'])
            .returningAll(),
        )
        .with('enqueued', (db) =>
          db
            .insertInto('callbacks')
            .columns([
              'id_gen',
              'state',
              'next_attempt_at',
              'attempt_count',
              'round',
              'round_attempt_count',
              'endpoint_key',
              'created_at',
            ])
            .expression((eb) =>
              eb
                .selectFrom('finished')
                .select([
                  'finished.id_gen',
                  sql.lit('pending').as('state'),
                  firstDueAt(sql.ref('finished.endpoint_key'), v.now).as('next_attempt_at'),
                  sql.lit(0).as('attempt_count'),
                  sql.lit(1).as('round'),
                  sql.lit(0).as('round_attempt_count'),
                  'finished.endpoint_key',
                  sql<number>`finished.finished_at`.as('created_at'),
                ]),
            )
            .returning('id_gen'),
        )
        // A CTE that nothing reads is not run unless it modifies data: the count reads it.
        .with('woken', (db) =>
          db.selectFrom('enqueued').select(sql<string>`pg_notify(${v.channel}, ${v.wakeUp})`.as('notified')),
        )
        .selectFrom('finished')
        .selectAll('finished')
        .select((eb) => eb.selectFrom('woken').select(eb.fn.countAll<number>().as('n')).as('woken')),
    {
      ...outcomeValues(outcome),
      now,
      idGen,
      channel,
      wakeUp: encodeWorkEvent({ kind: 'callback', id_gen: idGen }),
    },
  );
  if (row === undefined) return finishChangedNothing(db, idGen);
  const { woken: _, ...operation } = row;
  return { operation: toOperationRecord(operation), changed: true };
}

/**
 * Recording an attempt on SQLite: the callback moved on, then the attempt's row appended, in
 * the caller's write transaction (SQLite's only one, so nothing runs between the two).
 */
import { moveOnQuery, moveOnValues } from '../attempt-values.ts';
import { runCompiled } from '../compiled-query.ts';
import type { AttemptValues } from '../dialect.ts';
import type { CallbackRow } from '../records.ts';
import type { StoreDb } from '../schema.ts';

/** The moved callback's row, or undefined when the lease was lost (and nothing is written). */
export async function recordAttemptOnSqlite(
  trx: StoreDb,
  v: AttemptValues,
): Promise<CallbackRow | undefined> {
  // Run for every attempt: built and compiled once, then only bound.
  const [row] = await runCompiled(trx, 'record-attempt:update', (b) => moveOnQuery(trx, b), moveOnValues(v));
  if (row === undefined) return undefined;
  await runCompiled(trx, 'record-attempt:insert', (b) => trx.insertInto('attempts').values(b), {
    id_gen: v.idGen,
    seq: row.attempt_count,
    round: row.round,
    at: v.at,
    duration_ms: v.durationMs,
    status_code: v.statusCode,
    error: v.error,
    response_head: v.responseHead,
    worker_id: v.workerId,
    endpoint_key: row.endpoint_key,
    request_headers: v.requestHeaders,
    response_headers: v.responseHeaders,
  });
  return row;
}

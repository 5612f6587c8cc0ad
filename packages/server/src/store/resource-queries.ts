/**
 * Reads that build the operation resource (see the API section of docs/service.md): one query
 * for operations with their outbox rows, one for all their attempts, whatever the number of
 * operations.
 */
import { ALL_CLIENTS, type ClientScope } from './client-store.ts';
import type { StoreDb } from './schema.ts';
import { type ResourceAttemptRow, toOperationResource } from './records.ts';
import type { ListOperationsOptions, OperationResource } from './store.ts';
import { StoreError } from './store-error.ts';

/** Most operations one list returns. */
const MAX_LIST = 500;

/** Operations of `scope` with their outbox rows and circuits: every read of resources starts here. */
function baseQuery(db: StoreDb, scope: ClientScope) {
  return db
    .selectFrom('operations as o')
    .$if(scope !== ALL_CLIENTS, (qb) => qb.where('o.client', '=', scope as string))
    .leftJoin('callbacks as c', 'c.id_gen', 'o.id_gen')
    .leftJoin('endpoints as e', 'e.key', 'c.endpoint_key')
    .selectAll('o')
    .select([
      'c.state as callback_state',
      'c.next_attempt_at as callback_next_attempt_at',
      'e.circuit_state as circuit_state',
      'e.open_until as circuit_open_until',
    ]);
}

type Row = Awaited<ReturnType<ReturnType<typeof baseQuery>['execute']>>[number];

async function withAttempts(db: StoreDb, rows: Row[]): Promise<OperationResource[]> {
  if (rows.length === 0) return [];
  const attempts = await db
    .selectFrom('attempts')
    .select([
      'id_gen',
      'at',
      'duration_ms',
      'status_code',
      'error',
      'response_head',
      'request_headers',
      'response_headers',
    ])
    .where(
      'id_gen',
      'in',
      rows.map((r) => r.id_gen),
    )
    .orderBy('id_gen')
    .orderBy('seq')
    .execute();
  const byId = new Map<string, ResourceAttemptRow[]>();
  for (const attempt of attempts) {
    const list = byId.get(attempt.id_gen) ?? [];
    list.push(attempt);
    byId.set(attempt.id_gen, list);
  }
  return rows.map((row) =>
    toOperationResource(
      row,
      row.callback_state === null
        ? undefined
        : { state: row.callback_state, next_attempt_at: nextAttemptOf(row) },
      byId.get(row.id_gen) ?? [],
    ),
  );
}

/**
 * When the next attempt can go out: its due time, or later while its receiver's circuit is
 * open, as the attempt then waits for the pause to end.
 */
function nextAttemptOf(row: Row): number | null {
  const due = row.callback_next_attempt_at;
  const openUntil = row.circuit_state === 'open' ? row.circuit_open_until : null;
  // PostgreSQL hands BIGINT columns over as strings.
  if (due === null || openUntil === null) return due === null ? null : Number(due);
  return Math.max(Number(due), Number(openUntil));
}

export async function selectOperationResource(
  db: StoreDb,
  scope: ClientScope,
  idGen: string,
): Promise<OperationResource | undefined> {
  const row = await baseQuery(db, scope).where('o.id_gen', '=', idGen).executeTakeFirst();
  if (row === undefined) return undefined;
  const [resource] = await withAttempts(db, [row]);
  return resource;
}

/**
 * Operations newest first, filtered. `callbackState` matches outbox rows only: an operation
 * still queued or running has none, although its resource shows `pending`.
 */
export async function selectOperationResources(
  db: StoreDb,
  scope: ClientScope,
  options: ListOperationsOptions,
): Promise<OperationResource[]> {
  const limit = Math.trunc(options.limit);
  if (!(limit >= 1 && limit <= MAX_LIST)) {
    throw new StoreError('invalid_argument', `limit must be 1 to ${MAX_LIST}`);
  }
  const { state, family, endpoint, callbackState, before } = options;
  const rows = await baseQuery(db, scope)
    .$if(state !== undefined, (qb) => qb.where('o.state', '=', state!))
    .$if(family !== undefined, (qb) => qb.where('o.family', '=', family!))
    .$if(endpoint !== undefined, (qb) => qb.where('o.endpoint_key', '=', endpoint!))
    .$if(callbackState !== undefined, (qb) => qb.where('c.state', '=', callbackState!))
    .$if(before !== undefined, (qb) => qb.where('o.id_gen', '<', before!))
    .orderBy('o.id_gen', 'desc')
    .limit(limit)
    .execute();
  return withAttempts(db, rows);
}

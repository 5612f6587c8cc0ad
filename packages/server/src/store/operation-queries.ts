/**
 * Queries on operations, shared by both databases. Each takes the connection or transaction to
 * run on; the caller decides the transaction, these decide the SQL (bound parameters only).
 */
import { FAMILIES, type MediaType } from 'mediahook/protocol';
import { firstDueAt } from './circuit.ts';
import { ALL_CLIENTS, CLIENT_NAME, type ClientScope } from './client-store.ts';
import { runCompiled } from './compiled-query.ts';
import type { RowLocking } from './dialect.ts';
import { endpointKeyOf } from './endpoint-key.ts';
import { type OperationRow, toOperationRecord } from './records.ts';
import { OPERATION_KINDS, type OperationState, type StoreDb } from './schema.ts';
import type { FinishResult, NewOperation, OperationOutcome, OperationRecord, WorkEvent } from './store.ts';
import { StoreError } from './store-error.ts';

/** Largest `id_gen` accepted, in bytes (see the API section of docs/service.md). */
const MAX_ID_GEN_BYTES = 256;

/**
 * Refuses text holding U+0000 on both databases alike: PostgreSQL's `text` cannot store it (and
 * fails any statement binding it), so SQLite must not accept what PostgreSQL would refuse.
 */
export function checkText(name: string, text: string | null | undefined): void {
  if (typeof text === 'string' && text.includes('\u0000')) {
    throw new StoreError('invalid_argument', `${name} contains a NUL character (U+0000)`);
  }
}

export function checkIdGen(idGen: string): void {
  if (typeof idGen !== 'string' || idGen.length === 0 || Buffer.byteLength(idGen) > MAX_ID_GEN_BYTES) {
    throw new StoreError('invalid_argument', `id_gen must be 1 to ${MAX_ID_GEN_BYTES} bytes of text`);
  }
  checkText('id_gen', idGen);
}

/** A client's name: 1 to 64 of `A-Z a-z 0-9 . _ -`, as `mediahook keys create --client` takes it. */
export function checkClient(client: string): void {
  if (typeof client !== 'string' || !CLIENT_NAME.test(client)) {
    throw new StoreError('invalid_argument', `client must be 1 to 64 of A-Z a-z 0-9 . _ -`);
  }
}

function checkNewOperation(op: NewOperation): void {
  checkIdGen(op.id_gen);
  checkClient(op.client);
  if (!OPERATION_KINDS.includes(op.kind)) throw new StoreError('invalid_argument', `unknown kind ${op.kind}`);
  if (!FAMILIES.includes(op.family)) throw new StoreError('invalid_argument', `unknown family ${op.family}`);
  if (typeof op.webhook_url !== 'string' || op.webhook_url.length === 0) {
    throw new StoreError('invalid_argument', 'webhook_url is required');
  }
  if (typeof op.prompt !== 'string') throw new StoreError('invalid_argument', 'prompt must be text');
  checkText('webhook_url', op.webhook_url);
  checkText('prompt', op.prompt);
  checkText('fail_with', op.fail_with);
  checkText('status_text', op.status_text);
}

export async function insertOperation(db: StoreDb, op: NewOperation, now: number): Promise<OperationRecord> {
  checkNewOperation(op);
  const row = await db
    .insertInto('operations')
    .values({
      id_gen: op.id_gen,
      client: op.client,
      kind: op.kind,
      family: op.family,
      state: 'queued',
      webhook_url: op.webhook_url,
      endpoint_key: endpointKeyOf(op.webhook_url),
      prompt: op.prompt,
      fail_with: op.fail_with ?? null,
      status_text: op.status_text ?? null,
      created_at: now,
      runs: 0,
    })
    .onConflict((oc) => oc.column('id_gen').doNothing())
    .returningAll()
    .executeTakeFirst();
  if (row === undefined) throw new StoreError('conflict', `operation ${op.id_gen} already exists`);
  return toOperationRecord(row);
}

export async function selectOperationRow(
  db: StoreDb,
  scope: ClientScope,
  idGen: string,
): Promise<OperationRow | undefined> {
  return db
    .selectFrom('operations')
    .selectAll()
    .where('id_gen', '=', idGen)
    .$if(scope !== ALL_CLIENTS, (qb) => qb.where('client', '=', scope as string))
    .executeTakeFirst();
}

/** The oldest queued operation, or one whose worker let its lease run out, now running. */
export async function claimOperationRow(
  db: StoreDb,
  locks: RowLocking,
  workerId: string,
  leaseMs: number,
  now: number,
): Promise<OperationRecord | undefined> {
  // The oldest queued operation (`operations_queued_idx`) and the oldest running one whose lease
  // lapsed, each the first row of its own ordered list, and the older of the two. An OR over
  // both states made each database read and sort every queued operation: 8 ms per claim on
  // SQLite with 50,000 queued. Each list locks its row on PostgreSQL, so a concurrent claim
  // passes over it; the one not taken is free again when the statement ends.
  const first = (state: 'queued' | 'running') =>
    locks.skipLocked(
      db
        .selectFrom('operations')
        .select('id_gen')
        .where('state', '=', state)
        .$if(state === 'running', (qb) => qb.where('lease_expires_at', '<=', now))
        .orderBy('id_gen')
        .limit(1),
    );
  const candidate = db
    .selectFrom((sub) =>
      sub
        .selectFrom(first('queued').as('q'))
        .select('q.id_gen')
        .unionAll(sub.selectFrom(first('running').as('r')).select('r.id_gen'))
        .as('c'),
    )
    .select((eb) => eb.fn.min('c.id_gen').as('id_gen'));
  const row = await db
    .updateTable('operations')
    .set((eb) => ({
      state: 'running',
      started_at: now,
      lease_owner: workerId,
      lease_expires_at: now + leaseMs,
      runs: eb('runs', '+', 1),
    }))
    .where('id_gen', 'in', candidate)
    .returningAll()
    .executeTakeFirst();
  return row === undefined ? undefined : toOperationRecord(row);
}

/** The state a row of each leased table is in while its lease is held. */
const LEASED_STATE = { operations: 'running', callbacks: 'delivering' } as const;

/**
 * Extends the lease on a running operation or a callback being delivered; false when `workerId`
 * no longer holds it. A generation or a send may outlast any lease fixed in advance: its worker
 * renews the lease meanwhile, so that no claim, its own included, takes over the work in hand.
 */
export async function renewLeaseRow(
  db: StoreDb,
  table: keyof typeof LEASED_STATE,
  idGen: string,
  workerId: string,
  leaseMs: number,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable(table)
    .set({ lease_expires_at: now + leaseMs })
    .where('id_gen', '=', idGen)
    .where('state', '=', LEASED_STATE[table])
    .where('lease_owner', '=', workerId)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

function checkOutcome(outcome: OperationOutcome): void {
  if (outcome.state === 'succeeded') {
    const { key, media_type, bytes } = outcome.result ?? {};
    if (typeof key !== 'string' || key.length === 0)
      throw new StoreError('invalid_argument', 'result key required');
    if (media_type !== 'image/jpeg' && media_type !== 'video/mp4') {
      throw new StoreError('invalid_argument', `unknown media type ${media_type}`);
    }
    if (!Number.isSafeInteger(bytes) || (bytes as number) < 0) {
      throw new StoreError('invalid_argument', 'result bytes must be a whole number');
    }
  } else if (outcome.state === 'failed') {
    if (typeof outcome.message !== 'string')
      throw new StoreError('invalid_argument', 'failure message required');
    checkText('message', outcome.message);
  } else {
    throw new StoreError('invalid_argument', 'an outcome is succeeded or failed');
  }
}

/** What a finish binds: the outcome, checked, as the values of the operation's columns. */
export function outcomeValues(outcome: OperationOutcome) {
  checkOutcome(outcome);
  const succeeded = outcome.state === 'succeeded';
  return {
    state: outcome.state,
    resultKey: succeeded ? outcome.result.key : null,
    mediaType: succeeded ? outcome.result.media_type : null,
    bytes: succeeded ? outcome.result.bytes : null,
    message: succeeded ? null : outcome.message,
  };
}

/** The columns a finish sets, from `outcomeValues` and `now` (markers, when compiling). */
export function finishedColumns(v: ReturnType<typeof outcomeValues> & { now: number }) {
  return {
    state: v.state as OperationState,
    finished_at: v.now,
    result_key: v.resultKey,
    result_media_type: v.mediaType as MediaType | null,
    result_bytes: v.bytes,
    error_message: v.message,
    lease_owner: null,
    lease_expires_at: null,
  };
}

/** A finish that found its operation finished already (or missing): the operation as it is. */
export async function finishChangedNothing(db: StoreDb, idGen: string): Promise<FinishResult> {
  const existing = await selectOperationRow(db, ALL_CLIENTS, idGen);
  if (existing === undefined) throw new StoreError('not_found', `no operation ${idGen}`);
  return { operation: toOperationRecord(existing), changed: false };
}

/**
 * The outbox write: the operation's final state and its callback row, in the caller's
 * transaction, so that either both exist or neither does. The first finish wins; a second
 * (a worker that lost its lease, a retried request) changes nothing and says so.
 */
export async function finishOperationRows(
  trx: StoreDb,
  idGen: string,
  outcome: OperationOutcome,
  now: number,
  events: WorkEvent[],
): Promise<FinishResult> {
  // Run for every operation: built and compiled once, then only bound.
  const [row] = await runCompiled(
    trx,
    'finish-operation:update',
    (v) =>
      trx
        .updateTable('operations')
        .set(finishedColumns(v))
        .where('id_gen', '=', v.idGen)
        .where('state', 'in', ['queued', 'running'])
        .returningAll(),
    { ...outcomeValues(outcome), now, idGen },
  );
  if (row === undefined) return finishChangedNothing(trx, idGen);
  await runCompiled(
    trx,
    'finish-operation:enqueue',
    (v) =>
      trx.insertInto('callbacks').values({
        id_gen: v.idGen,
        state: 'pending',
        next_attempt_at: firstDueAt(v.endpointKey, v.now),
        attempt_count: 0,
        round: 1,
        round_attempt_count: 0,
        endpoint_key: v.endpointKey,
        created_at: v.now,
      }),
    { idGen, now, endpointKey: row.endpoint_key },
  );
  events.push({ kind: 'callback', id_gen: idGen });
  return { operation: toOperationRecord(row), changed: true };
}

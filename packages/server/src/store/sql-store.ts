/**
 * The store over Kysely, the same for every database. A backend supplies its `StoreDialect`
 * (the statements each database does its own way), and as a subclass the connection, how
 * wake-ups travel, and how migrations find their bookkeeping tables; everything else, the SQL
 * included, lives here and in the query modules once.
 */
import type { Kysely } from 'kysely';
import { recordAttemptRows, redeliverRow, releaseLeaseRows } from './callback-queries.ts';
import { claimCallbackRows } from './claim-queries.ts';
import {
  checkScope,
  claimIdempotencyRow,
  insertApiKey,
  insertClientSecret,
  purgeIdempotencyRows,
  revokeApiKeyRow,
  rotateClientSecretRow,
  selectApiKeys,
  selectClientSecret,
  settleIdempotencyRow,
  touchApiKeyRows,
} from './client-queries.ts';
import type {
  ApiKeyRecord,
  ClientScope,
  ClientSecretRecord,
  IdempotencyClaim,
  IdempotencyOptions,
  NewApiKey,
} from './client-store.ts';
import { migrateToLatest } from './migrations.ts';
import type { StoreDialect } from './dialect.ts';
import {
  checkIdGen,
  checkText,
  claimOperationRow,
  finishOperationRows,
  insertOperation,
  renewLeaseRow,
  selectOperationRow,
} from './operation-queries.ts';
import { toAttemptRecord, toCallbackRecord, toOperationRecord } from './records.ts';
import type { StoreDb } from './schema.ts';
import { selectOperationResource, selectOperationResources } from './resource-queries.ts';
import { closesInRecord, settleRows } from './settle-queries.ts';
import {
  recoverEndpointRows,
  selectAttemptStats,
  selectEndpointHealth,
  selectEndpointOf,
} from './operator-queries.ts';
import type { EndpointHealth, StatsBucket, StatsWindow } from './operator-view.ts';
import { selectEndpoint, selectNextDueAt, selectQueueDepth, upsertEndpoint } from './status-queries.ts';
import type {
  AttemptInput,
  AttemptRecord,
  CallbackRecord,
  ClaimCallbacksOptions,
  ClaimedCallback,
  EndpointRecord,
  EndpointUpdate,
  FinishResult,
  ListOperationsOptions,
  NewOperation,
  NextCallbackState,
  OperationOutcome,
  OperationRecord,
  OperationResource,
  QueueDepth,
  ReleasedLeases,
  SettleOptions,
  SettleResult,
  Settlement,
  Store,
  WorkEvent,
  WorkListener,
  WorkSubscription,
  SubmittedOperation,
} from './store.ts';
import { StoreError } from './store-error.ts';
import { insertSubmittedOperation } from './submitted-operations.ts';

/** What every backend accepts besides its connection. */
export interface StoreOptions {
  /** The store's clock, Unix milliseconds; `Date.now` by default (tests move time by hand). */
  clock?: () => number;
  /**
   * Errors no call can return: a wake-up listener threw, the LISTEN connection dropped, the
   * SQLite checkpoint thread failed. A process warning by default.
   */
  onBackgroundError?: (error: unknown) => void;
}

function checkWorker(workerId: string): void {
  if (typeof workerId !== 'string' || workerId.length === 0) {
    throw new StoreError('invalid_argument', 'a worker id is required');
  }
}

function checkDuration(name: string, ms: number): void {
  if (!Number.isSafeInteger(ms) || ms <= 0)
    throw new StoreError('invalid_argument', `${name} must be positive ms`);
}

export abstract class SqlStore implements Store {
  readonly dialect: string;
  readonly sharedByProcesses: boolean;
  protected readonly db: StoreDb;
  protected readonly clock: () => number;
  readonly #sql: StoreDialect;
  #idempotencyPurgedAt = 0;

  protected constructor(db: StoreDb, dialect: StoreDialect, options: StoreOptions) {
    this.db = db;
    this.#sql = dialect;
    this.dialect = dialect.name;
    this.sharedByProcesses = dialect.sharedByProcesses;
    this.clock = options.clock ?? Date.now;
  }

  /** Sends wake-ups from inside the transaction that made the work due (PostgreSQL: NOTIFY). */
  protected abstract announceInTransaction(trx: StoreDb, events: readonly WorkEvent[]): Promise<void>;
  /** Sends wake-ups once that transaction has committed (in-process listeners). */
  protected abstract announceAfterCommit(events: readonly WorkEvent[]): void;
  /** The schema where migration bookkeeping lives; undefined for the database's only one. */
  protected abstract migrationSchema(): string | undefined;
  protected abstract prepare(): Promise<void>;
  abstract onWork(listener: WorkListener): WorkSubscription;
  abstract close(): Promise<void>;

  /**
   * Runs `work` in one write transaction (SQLite: BEGIN IMMEDIATE). Wake-ups it collects go out
   * with the commit and never for a transaction that rolled back.
   */
  protected async write<T>(work: (trx: StoreDb, events: WorkEvent[]) => Promise<T>): Promise<T> {
    const events: WorkEvent[] = [];
    const result = await this.db.transaction().execute(async (trx) => {
      const value = await work(trx, events);
      if (events.length > 0) await this.announceInTransaction(trx, events);
      return value;
    });
    if (events.length > 0) this.announceAfterCommit(events);
    return result;
  }

  async migrate(): Promise<void> {
    await this.prepare();
    try {
      await migrateToLatest(this.db as unknown as Kysely<unknown>, { schema: this.migrationSchema() });
    } catch (error) {
      throw new StoreError('migration_failed', `migrating the store failed: ${String(error)}`, {
        cause: error,
      });
    }
  }

  createOperation(operation: NewOperation): Promise<OperationRecord> {
    return this.write(async (trx, events) => {
      const record = await insertOperation(trx, operation, this.clock());
      events.push({ kind: 'operation', id_gen: record.id_gen });
      return record;
    });
  }

  async getOperation(scope: ClientScope, idGen: string): Promise<OperationResource | undefined> {
    checkScope(scope);
    checkText('id_gen', idGen);
    return selectOperationResource(this.db, scope, idGen);
  }

  async getOperationRecord(scope: ClientScope, idGen: string): Promise<OperationRecord | undefined> {
    checkScope(scope);
    checkText('id_gen', idGen);
    const row = await selectOperationRow(this.db, scope, idGen);
    return row === undefined ? undefined : toOperationRecord(row);
  }

  async listOperations(scope: ClientScope, options: ListOperationsOptions): Promise<OperationResource[]> {
    checkScope(scope);
    checkText('endpoint', options.endpoint);
    checkText('before', options.before);
    return selectOperationResources(this.db, scope, options);
  }

  addApiKey(key: NewApiKey): Promise<ApiKeyRecord> {
    return this.write((trx) => insertApiKey(trx, key, this.clock()));
  }

  async findApiKey(hash: string): Promise<ApiKeyRecord | undefined> {
    return (await selectApiKeys(this.db, hash))[0];
  }

  listApiKeys(): Promise<ApiKeyRecord[]> {
    return selectApiKeys(this.db);
  }

  revokeApiKey(keyId: string): Promise<ApiKeyRecord> {
    return this.write((trx) => revokeApiKeyRow(trx, keyId, this.clock()));
  }

  touchApiKeys(keyIds: readonly string[], at: number): Promise<void> {
    return touchApiKeyRows(this.db, keyIds, at);
  }

  getClientSecret(client: string): Promise<ClientSecretRecord | undefined> {
    return selectClientSecret(this.db, client);
  }

  addClientSecret(client: string, secret: string): Promise<ClientSecretRecord> {
    return this.write((trx) => insertClientSecret(trx, client, secret, this.clock()));
  }

  rotateClientSecret(client: string, secret: string, previousUntil: number): Promise<ClientSecretRecord> {
    return this.write((trx) => rotateClientSecretRow(trx, client, secret, previousUntil, this.clock()));
  }

  async claimIdempotencyKey(
    client: string,
    key: string,
    requestSha256: string,
    options: IdempotencyOptions,
  ): Promise<IdempotencyClaim> {
    const now = this.clock();
    // Keys past keeping go as new ones come: no sweeper to run.
    if (now - this.#idempotencyPurgedAt >= 60_000) {
      this.#idempotencyPurgedAt = now;
      await purgeIdempotencyRows(this.db, now - options.keepMs);
    }
    return claimIdempotencyRow(this.db, client, key, requestSha256, options, now);
  }

  completeIdempotencyKey(client: string, key: string, status: number, body: string): Promise<void> {
    return settleIdempotencyRow(this.db, client, key, { status, body });
  }

  releaseIdempotencyKey(client: string, key: string): Promise<void> {
    return settleIdempotencyRow(this.db, client, key, null);
  }

  async countApiKeys(): Promise<number> {
    const row = await this.db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  claimOperation(workerId: string, leaseMs: number): Promise<OperationRecord | undefined> {
    checkWorker(workerId);
    checkDuration('leaseMs', leaseMs);
    return this.write((trx) => claimOperationRow(trx, this.#sql, workerId, leaseMs, this.clock()));
  }

  renewOperationLease(idGen: string, workerId: string, leaseMs: number): Promise<boolean> {
    checkDuration('leaseMs', leaseMs);
    return renewLeaseRow(this.db, 'operations', idGen, workerId, leaseMs, this.clock());
  }

  finishOperation(idGen: string, outcome: OperationOutcome): Promise<FinishResult> {
    checkIdGen(idGen);
    if (this.#sql.finishOperation) return this.#sql.finishOperation(this.db, idGen, outcome, this.clock());
    return this.write((trx, events) => finishOperationRows(trx, idGen, outcome, this.clock(), events));
  }

  submitOperation(operation: SubmittedOperation): Promise<void> {
    return this.write((trx, events) => insertSubmittedOperation(trx, operation, this.clock(), events));
  }

  async getCallback(idGen: string): Promise<CallbackRecord | undefined> {
    checkText('id_gen', idGen);
    const row = await this.db
      .selectFrom('callbacks')
      .selectAll()
      .where('id_gen', '=', idGen)
      .executeTakeFirst();
    return row === undefined ? undefined : toCallbackRecord(row);
  }

  async listAttempts(idGen: string): Promise<AttemptRecord[]> {
    checkText('id_gen', idGen);
    const rows = await this.db
      .selectFrom('attempts')
      .selectAll()
      .where('id_gen', '=', idGen)
      .orderBy('seq')
      .execute();
    return rows.map(toAttemptRecord);
  }

  claimCallbacks(workerId: string, options: ClaimCallbacksOptions): Promise<ClaimedCallback[]> {
    checkWorker(workerId);
    checkDuration('leaseMs', options.leaseMs);
    const now = options.now ?? this.clock();
    return this.#claim(workerId, { ...options, now });
  }

  /** A claim on its own: where it is one statement, with no transaction (and its round trips) around it. */
  #claim(workerId: string, options: Parameters<typeof claimCallbackRows>[3]): Promise<ClaimedCallback[]> {
    if (this.#sql.claimsAlone) return claimCallbackRows(this.db, this.#sql, workerId, options);
    return this.write((trx) => claimCallbackRows(trx, this.#sql, workerId, options));
  }

  recordAttempt(
    idGen: string,
    workerId: string,
    attempt: AttemptInput,
    next: NextCallbackState,
  ): Promise<CallbackRecord> {
    checkWorker(workerId);
    return this.write((trx, events) =>
      recordAttemptRows(trx, this.#sql, idGen, workerId, attempt, next, this.clock(), events),
    );
  }

  settleCallbacks(
    workerId: string,
    settlements: readonly Settlement[],
    options: SettleOptions,
  ): Promise<SettleResult> {
    checkWorker(workerId);
    if (options.claim) checkDuration('leaseMs', options.claim.leaseMs);
    const claim = options.claim;
    // An idle worker's round after a wake-up (the claim alone), or one attempt to record.
    if (settlements.length <= 1 && closesInRecord(this.#sql, settlements)) {
      return this.#settleOneAtOnce(workerId, settlements, options);
    }
    return this.write(async (trx, events) => {
      const now = this.clock();
      const settled = await settleRows(trx, this.#sql, workerId, settlements, options.circuit, now, events);
      const claimed = claim
        ? await claimCallbackRows(trx, this.#sql, workerId, { ...claim, now: claim.now ?? now })
        : [];
      return { settled, claimed };
    });
  }

  /**
   * At most one attempt, whose record is one statement (`closesInRecord`: no failure to fold), then
   * the claim, each atomic alone: two round trips, where a transaction around them would add
   * two more.
   */
  async #settleOneAtOnce(
    workerId: string,
    settlements: readonly Settlement[],
    { circuit, claim }: SettleOptions,
  ): Promise<SettleResult> {
    const events: WorkEvent[] = [];
    const now = this.clock();
    const settled = await settleRows(this.db, this.#sql, workerId, settlements, circuit, now, events);
    // Written already: what it made due is announced after it, as a commit would.
    if (events.length > 0) await this.announceInTransaction(this.db, events);
    const claimed = claim ? await this.#claim(workerId, { ...claim, now: claim.now ?? now }) : [];
    return { settled, claimed };
  }

  releaseLeases(workerId: string): Promise<ReleasedLeases> {
    checkWorker(workerId);
    return this.write((trx, events) => releaseLeaseRows(trx, workerId, this.clock(), events));
  }

  renewCallbackLease(idGen: string, workerId: string, leaseMs: number): Promise<boolean> {
    checkWorker(workerId);
    checkDuration('leaseMs', leaseMs);
    return renewLeaseRow(this.db, 'callbacks', idGen, workerId, leaseMs, this.clock());
  }

  recoverLeases(): Promise<ReleasedLeases> {
    return this.write((trx, events) => releaseLeaseRows(trx, null, this.clock(), events));
  }

  async redeliver(scope: ClientScope, idGen: string): Promise<CallbackRecord> {
    checkScope(scope);
    checkText('id_gen', idGen);
    return this.write((trx, events) => redeliverRow(trx, scope, idGen, this.clock(), events));
  }

  nextDueAt(kind?: 'operation' | 'callback'): Promise<number | null> {
    return selectNextDueAt(this.db, kind);
  }

  async getEndpoint(key: string): Promise<EndpointRecord> {
    checkText('key', key);
    return selectEndpoint(this.db, key);
  }

  updateEndpoint(key: string, update: EndpointUpdate): Promise<EndpointRecord> {
    return upsertEndpoint(this.db, key, update, this.clock());
  }

  queueDepth(): Promise<QueueDepth> {
    return selectQueueDepth(this.db);
  }

  async listEndpointHealth(scope: ClientScope): Promise<EndpointHealth[]> {
    checkScope(scope);
    return selectEndpointHealth(this.db, scope, this.clock());
  }

  async attemptStats(scope: ClientScope, window: StatsWindow): Promise<StatsBucket[]> {
    checkScope(scope);
    return selectAttemptStats(this.db, scope, window, this.clock());
  }

  async endpointCircuit(scope: ClientScope, key: string): Promise<EndpointRecord | undefined> {
    checkScope(scope);
    checkText('key', key);
    return selectEndpointOf(this.db, scope, key);
  }

  async recoverEndpoint(scope: ClientScope, key: string, since: number): Promise<number> {
    checkScope(scope);
    checkText('key', key);
    if (!Number.isFinite(since)) throw new StoreError('invalid_argument', 'since must be a time in ms');
    return this.write((trx, events) => recoverEndpointRows(trx, scope, key, since, this.clock(), events));
  }
}

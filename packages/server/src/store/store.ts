/**
 * What the service needs from its durable store, whichever database is behind it. Times are
 * Unix milliseconds in records and RFC 3339 UTC text in the operation resource.
 */
import type { Family, MediaType } from 'mediahook/protocol';
import type { ApiKeyStore, ClientScope, ClientSecretStore, IdempotencyStore } from './client-store.ts';
import type { Operation } from '../client/api-types.ts';
import type { OperatorViewStore } from './operator-view.ts';
import type { CallbackState, CallbacksTable, CircuitState, OperationKind, OperationState } from './schema.ts';
import type { StoreError } from './store-error.ts';

/** An operation as the caller submits it; `id_gen` is a UUIDv7 the caller made. */
export interface NewOperation {
  id_gen: string;
  /** The client whose key creates it. */
  client: string;
  kind: OperationKind;
  family: Family;
  webhook_url: string;
  prompt: string;
  fail_with?: string | null;
  status_text?: string | null;
}

/** Where a finished operation's file is kept. */
export interface OperationResult {
  key: string;
  media_type: MediaType;
  bytes: number;
}

/** The whole stored operation, for the generator and the sender. */
export interface OperationRecord {
  id_gen: string;
  /** The client whose key created it: its secret signs the callback. */
  client: string;
  kind: OperationKind;
  family: Family;
  state: OperationState;
  webhook_url: string;
  endpoint_key: string;
  prompt: string;
  fail_with: string | null;
  status_text: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  result: OperationResult | null;
  error_message: string | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  runs: number;
  /** For an outcome handed in: its `time_gen` as given, else null. */
  time_gen: string | null;
  /** For an outcome handed in: the hash a repeat must match; null for a generated operation. */
  submission_sha256: string | null;
  /** A fault of the service's own holding the operation up (see `deferOperation`), or null. */
  fault: { message: string; since: number } | null;
}

/** A fault that holds work up: what it is, since when, and when the work is tried again. */
export interface FaultInput {
  message: string;
  since: number;
  next_try_at: number;
}

/** How a generation ended. */
export type OperationOutcome =
  { state: 'succeeded'; result: OperationResult } | { state: 'failed'; message: string };

/** An outcome handed in: what `submitOperation` records. */
export interface SubmittedOperation {
  id_gen: string;
  /** The client whose key hands it in. */
  client: string;
  family: Family;
  webhook_url: string;
  /** The callback's `status`, or null for `success` / `error`. */
  status_text: string | null;
  /** The callback's `time_gen` exactly as handed in, or null to send `finished_at`. */
  time_gen: string | null;
  finished_at: number;
  /** SHA-256 of everything handed in: a repeat of the same id must match it. */
  submission_sha256: string;
  outcome: OperationOutcome;
}

export interface FinishResult {
  operation: OperationRecord;
  /** False when the operation had already finished: the call changed nothing. */
  changed: boolean;
}

/** The outbox row of one operation: the `callbacks` table's columns, as numbers on every database. */
export type CallbackRecord = CallbacksTable;

/** A callback claimed for delivery, with the operation it reports on. */
export interface ClaimedCallback {
  callback: CallbackRecord;
  operation: OperationRecord;
}

/** One delivery attempt as the sender reports it. */
export interface AttemptInput {
  at: number;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  /** The first bytes of the answer, as text; the store keeps at most `RESPONSE_HEAD_CHARS`. */
  response_head?: string | null;
  /** The headers sent; null when nothing was sent. The store keeps `HEADERS_CHARS` of them. */
  request_headers?: Readonly<Record<string, string>> | null;
  /** The answer's headers; null without an answer. */
  response_headers?: Readonly<Record<string, string>> | null;
}

export interface AttemptRecord extends Required<AttemptInput> {
  id_gen: string;
  endpoint_key: string | null;
  seq: number;
  round: number;
  worker_id: string | null;
}

/** Where a callback goes after an attempt. */
export type NextCallbackState =
  | { state: 'delivered' }
  | { state: 'gone' }
  | { state: 'dead' }
  | {
      state: 'retrying';
      next_attempt_at: number;
      /**
       * Whether the attempt takes the callback a step along its retry schedule (default true).
       * False for one that never had its chance: a send cut off by the worker's own stop.
       */
      advances_schedule?: boolean;
    };

export interface ClaimCallbacksOptions {
  limit: number;
  leaseMs: number;
  /** The claim's notion of now; the store's clock by default. */
  now?: number;
  /**
   * At most this many callbacks of one receiver in flight, counting those already being
   * delivered. Exact on SQLite; on PostgreSQL a bound per claim (concurrent claims each count
   * what was in flight when they started).
   */
  perEndpointLimit?: number;
}

/** One finished attempt as a worker hands it in: what happened and where the callback goes. */
export interface Settlement {
  id_gen: string;
  attempt: AttemptInput;
  next: NextCallbackState;
  /**
   * What the attempt says about the receiver's circuit, keyed by the callback's endpoint; null
   * leaves the circuit alone (the attempt never reached the receiver: refused, cancelled).
   */
  circuit: CircuitOutcome | null;
  /** The operation had a fault (see `deferCallback`): this attempt, made, clears it. */
  clearsFault?: boolean;
}

export interface SettleOptions {
  circuit: CircuitPolicy;
  /**
   * Also claim due callbacks once the settlements are written: in the same transaction, except
   * on PostgreSQL for a lone settlement with no failure, whose one statement and the claim's are
   * each atomic alone.
   */
  claim?: ClaimCallbacksOptions;
}

export interface SettleResult {
  /**
   * One entry per settlement, in order: the callback as it now is, or the StoreError that
   * kept this one from being recorded (`lease_lost`, `not_found`); the others are recorded.
   */
  settled: (CallbackRecord | StoreError)[];
  claimed: ClaimedCallback[];
}

export interface ListOperationsOptions {
  state?: OperationState | undefined;
  family?: Family | undefined;
  /** `host:port` of the webhook URL. */
  endpoint?: string | undefined;
  callbackState?: CallbackState | undefined;
  /** At most 500. */
  limit: number;
  /** An `id_gen` cursor: only operations created before it (the list is newest first). */
  before?: string | undefined;
}

/** The operation resource of `GET /v1/operations/{id_gen}`: the API's own type. */
export type OperationResource = Operation;

export interface EndpointRecord {
  key: string;
  circuit_state: CircuitState;
  consecutive_failures: number;
  open_until: number | null;
  /** Null for a receiver the store has no row for (it is then closed). */
  updated_at: number | null;
}

export type EndpointUpdate = Pick<EndpointRecord, 'circuit_state' | 'consecutive_failures' | 'open_until'>;

/** How attempts move a receiver's circuit (see `nextCircuit`). */
export interface CircuitPolicy {
  /** Consecutive failures of one receiver that open its circuit. */
  failureThreshold: number;
  /** How long the first opening lasts; each further one doubles it, up to `maxOpenMs`. */
  openMs: number;
  maxOpenMs: number;
}

/** What one attempt says about its receiver: it answered, or it failed (no answer, 5xx, …). */
export type CircuitOutcome = 'answered' | 'failed';

/** Why a worker should look for work: something became due. */
export interface WorkEvent {
  kind: 'operation' | 'callback';
  /** The item that became due; null when several did or the store cannot tell which. */
  id_gen: string | null;
}

export type WorkListener = (event: WorkEvent) => void;

/** Stops a wake-up subscription when called. */
export interface WorkSubscription {
  (): void;
  /** Resolves once wake-ups are actually received (on PostgreSQL: LISTEN is active). */
  readonly ready: Promise<void>;
}

export interface ReleasedLeases {
  operations: number;
  callbacks: number;
}

export interface QueueDepth {
  operations: Record<OperationState, number>;
  callbacks: Record<CallbackState, number>;
}

/** Operations: created through the API, claimed and finished by generation workers. */
export interface OperationStore {
  createOperation(operation: NewOperation): Promise<OperationRecord>;
  /**
   * The resource of `GET /v1/operations/{id_gen}` (docs/service.md); undefined for an unknown
   * id and for another client's than `scope`'s.
   */
  getOperation(scope: ClientScope, idGen: string): Promise<OperationResource | undefined>;
  getOperationRecord(scope: ClientScope, idGen: string): Promise<OperationRecord | undefined>;
  /** Newest first, `scope`'s only. */
  listOperations(scope: ClientScope, options: ListOperationsOptions): Promise<OperationResource[]>;
  /** One queued (or abandoned running) operation, now running under a lease of `workerId`. */
  claimOperation(workerId: string, leaseMs: number): Promise<OperationRecord | undefined>;
  /** Extends the lease of a running operation; false when the worker no longer holds it. */
  renewOperationLease(idGen: string, workerId: string, leaseMs: number): Promise<boolean>;
  /** Finishes the operation and enqueues its callback in one transaction; idempotent. */
  finishOperation(idGen: string, outcome: OperationOutcome): Promise<FinishResult>;
  /**
   * Records an outcome handed in, finished, with its callback due; `conflict` if the id exists,
   * whoever's it is (`id_gen` is unique across clients).
   */
  submitOperation(operation: SubmittedOperation): Promise<void>;
  /**
   * Gives a running operation back because of a fault of the service's own: its lease let go,
   * due again at `fault.next_try_at`, the fault shown on it. `lease_lost` unless `workerId`
   * holds it.
   */
  deferOperation(idGen: string, workerId: string, fault: FaultInput): Promise<void>;
}

/** The outbox: each finished operation's callback, its delivery attempts and leases. */
export interface OutboxStore {
  getCallback(idGen: string): Promise<CallbackRecord | undefined>;
  listAttempts(idGen: string): Promise<AttemptRecord[]>;
  /** Due callbacks, now `delivering` under a lease of `workerId`; never the same one twice. */
  claimCallbacks(workerId: string, options: ClaimCallbacksOptions): Promise<ClaimedCallback[]>;
  /** Appends an attempt and moves the callback; `lease_lost` unless `workerId` still holds it. */
  recordAttempt(
    idGen: string,
    workerId: string,
    attempt: AttemptInput,
    next: NextCallbackState,
  ): Promise<CallbackRecord>;
  /**
   * A worker's round trip: records finished attempts and their receivers' circuits, then claims
   * (when asked) what is due, in one transaction (see `SettleOptions.claim` for the exception).
   * Each settlement is checked as `recordAttempt` checks it; one that fails is reported in its
   * place and the rest go ahead. If the claim fails after a lone settlement was written, the
   * call fails; settling it again then reports `lease_lost`.
   */
  settleCallbacks(
    workerId: string,
    settlements: readonly Settlement[],
    options: SettleOptions,
  ): Promise<SettleResult>;
  /** Extends the lease of a callback being delivered; false when the worker no longer holds it. */
  renewCallbackLease(idGen: string, workerId: string, leaseMs: number): Promise<boolean>;
  /** A finished callback back to `pending`, due now, history kept; `not_found` outside `scope`. */
  redeliver(scope: ClientScope, idGen: string): Promise<CallbackRecord>;
  /**
   * Gives a callback being delivered back, unsent, because of a fault of the service's own (its
   * result cannot be read now): `retrying` at `fault.next_try_at` with no attempt recorded and
   * its schedule where it was, the fault shown on its operation. `lease_lost` unless `workerId`
   * holds it.
   */
  deferCallback(idGen: string, workerId: string, fault: FaultInput): Promise<void>;
}

/** Receiver circuits, one per `host:port`. */
interface CircuitStore {
  getEndpoint(key: string): Promise<EndpointRecord>;
  /**
   * Receiver `key`'s circuit, as `getEndpoint` reads it, for `scope`: undefined for a client
   * none of whose callbacks went to it (a receiver it never called is none of its business).
   */
  endpointCircuit(scope: ClientScope, key: string): Promise<EndpointRecord | undefined>;
  updateEndpoint(key: string, update: EndpointUpdate): Promise<EndpointRecord>;
}

/** The queue as a whole, for workers: wake-ups, when work is next due, leases given back. */
export interface WorkStore {
  /** Calls `listener` when operations or callbacks become due, from any process. */
  onWork(listener: WorkListener): WorkSubscription;
  /**
   * The earliest time work of `kind` (both by default) becomes due or a lease runs out, counting
   * open circuits; null when nothing will. An idle worker sleeps until then or a wake-up.
   */
  nextDueAt(kind?: 'operation' | 'callback'): Promise<number | null>;
  /**
   * Gives back what `workerId` holds, due now, but the ids in `keep` (graceful shutdown; or
   * claims whose answer a dropped connection lost, which the worker holds without knowing).
   */
  releaseLeases(workerId: string, keep?: readonly string[]): Promise<ReleasedLeases>;
  /** Gives back every lease, due now: for a store no other process uses (`sharedByProcesses`). */
  recoverLeases(): Promise<ReleasedLeases>;
  /** Operations and callbacks per state, for metrics. */
  queueDepth(): Promise<QueueDepth>;
}

/**
 * The durable store: operations, their callbacks (the outbox), attempts, receiver circuits, API
 * keys, clients' secrets and idempotency keys, and the operator's view of them, each concern an interface of its own for code that
 * needs only that one.
 * Implemented by `SqliteStore` (embedded, one process) and `PostgresStore` (many workers).
 *
 * @example
 * const store = openStore('postgres://app@db/mediahook');
 * await store.migrate();
 * await store.createOperation({ id_gen: uuidv7(), client: 'default', kind: 'image', family: 'A', webhook_url, prompt });
 */
export interface Store
  extends
    OperationStore,
    OutboxStore,
    CircuitStore,
    ApiKeyStore,
    ClientSecretStore,
    IdempotencyStore,
    WorkStore,
    OperatorViewStore {
  /** The database's name, for logs (`sqlite`, `postgres`): code asks the capabilities below. */
  readonly dialect: string;
  /**
   * Whether several processes may use the store, and the data directory beside it, at once
   * (PostgreSQL). One that is not may take back every lease on start (`recoverLeases`), and
   * its data directory is local to this process.
   */
  readonly sharedByProcesses: boolean;
  /** Creates or upgrades the tables; safe to run on every start and from several processes. */
  migrate(): Promise<void>;
  close(): Promise<void>;
}

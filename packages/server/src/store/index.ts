/**
 * The service's durable store: operations, the callback outbox with leases and attempts, and
 * receiver circuits, on SQLite (embedded) or PostgreSQL (several workers).
 */

export { DEFAULT_CIRCUIT_POLICY, nextCircuit } from './circuit.ts';
export {
  ALL_CLIENTS,
  type ApiKeyRecord,
  type ApiKeyStore,
  CLIENT_NAME,
  type ClientScope,
  type ClientSecretRecord,
  type ClientSecretStore,
  DEFAULT_CLIENT,
  type IdempotencyClaim,
  type IdempotencyStore,
  type NewApiKey,
} from './client-store.ts';
export { endpointKeyOf } from './endpoint-key.ts';
export { MIGRATION_LOCK_TABLE, MIGRATION_TABLE, MIGRATIONS, migrateToLatest } from './migrations.ts';
export { openStore } from './open-store.ts';
export {
  circuitStateAt,
  type EndpointHealth,
  type OperatorViewStore,
  STATS_WINDOWS,
  type StatsBucket,
  type StatsWindow,
} from './operator-view.ts';
export { PostgresStore, type PostgresStoreOptions } from './postgres/postgres-store.ts';
export { callbackStatusOf, isoTime, RESPONSE_HEAD_CHARS } from './records.ts';
export {
  CALLBACK_STATES,
  type CallbackState,
  CIRCUIT_STATES,
  type CircuitState,
  KEY_ROLES,
  type KeyRole,
  FINAL_CALLBACK_STATES,
  OPERATION_KINDS,
  OPERATION_STATES,
  type OperationKind,
  type OperationState,
  type StoreSchema,
} from './schema.ts';
export { SqlStore, type StoreOptions } from './sql-store.ts';
export { SqliteStore, type SqliteStoreOptions } from './sqlite/sqlite-store.ts';
export type {
  AttemptInput,
  AttemptRecord,
  CallbackRecord,
  CircuitOutcome,
  CircuitPolicy,
  CircuitStore,
  ClaimCallbacksOptions,
  ClaimedCallback,
  EndpointRecord,
  EndpointUpdate,
  FaultInput,
  FinishResult,
  ListOperationsOptions,
  NewOperation,
  NextCallbackState,
  OperationOutcome,
  OperationRecord,
  OperationResource,
  OperationResult,
  OperationStore,
  OutboxStore,
  QueueDepth,
  ReleasedLeases,
  SettleOptions,
  SettleResult,
  Settlement,
  Store,
  SubmittedOperation,
  WorkEvent,
  WorkListener,
  WorkStore,
  WorkSubscription,
} from './store.ts';
export { isStoreError, STORE_ERROR_CODES, StoreError, type StoreErrorCode } from './store-error.ts';

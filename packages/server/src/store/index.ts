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
  type IdempotencyStore,
} from './client-store.ts';
export { endpointKeyOf } from './endpoint-key.ts';
export { MIGRATION_LOCK_TABLE, MIGRATION_TABLE, MIGRATIONS } from './migrations.ts';
export { openStore } from './open-store.ts';
export { circuitStateAt, STATS_WINDOWS, type StatsWindow } from './operator-view.ts';
export { PostgresStore } from './postgres/postgres-store.ts';
export { callbackStatusOf } from './records.ts';
export {
  CALLBACK_STATES,
  CIRCUIT_STATES,
  KEY_ROLES,
  type KeyRole,
  FINAL_CALLBACK_STATES,
  OPERATION_KINDS,
  OPERATION_STATES,
} from './schema.ts';
export { type StoreOptions } from './sql-store.ts';
export { SqliteStore } from './sqlite/sqlite-store.ts';
export type {
  AttemptInput,
  AttemptRecord,
  CallbackRecord,
  CircuitPolicy,
  ClaimedCallback,
  EndpointUpdate,
  FaultInput,
  NewOperation,
  NextCallbackState,
  OperationOutcome,
  OperationRecord,
  OperationResource,
  OperationResult,
  OperationStore,
  OutboxStore,
  QueueDepth,
  Settlement,
  Store,
  SubmittedOperation,
  WorkEvent,
  WorkStore,
} from './store.ts';
export { isStoreError, StoreError, type StoreErrorCode } from './store-error.ts';

/**
 * The tables of the service's store, as Kysely sees them. One schema serves SQLite and
 * PostgreSQL: text keys, integer counters, and every time as `bigint` Unix milliseconds (UTC),
 * which both databases compare exactly and neither reinterprets by time zone.
 */
import type { Kysely } from 'kysely';
import type { Family, MediaType } from 'mediahook/protocol';
import type { CallbackState, CircuitState, OperationKind, OperationState } from '../client/api-types.ts';

// The states the API shows are the ones the tables hold.
export type { CallbackState, CircuitState, OperationKind, OperationState } from '../client/api-types.ts';

export const OPERATION_KINDS: readonly OperationKind[] = ['image', 'video'];
export const OPERATION_STATES: readonly OperationState[] = ['queued', 'running', 'succeeded', 'failed'];
export const CALLBACK_STATES: readonly CallbackState[] = [
  'pending',
  'delivering',
  'retrying',
  'delivered',
  'dead',
  'gone',
];
export const CIRCUIT_STATES: readonly CircuitState[] = ['closed', 'open', 'half_open'];

/** Callback states after which nothing happens unless someone redelivers. */
export const FINAL_CALLBACK_STATES: readonly CallbackState[] = ['delivered', 'dead', 'gone'];

/** One generation operation: what to make, for whom, and how it went. */
export interface OperationsTable {
  /** UUIDv7 made by the caller; time-ordered, so it doubles as the creation order. */
  id_gen: string;
  kind: OperationKind;
  family: Family;
  state: OperationState;
  webhook_url: string;
  /** `host:port` of `webhook_url`, to filter and to share delivery fairly between receivers. */
  endpoint_key: string;
  prompt: string;
  /** When set, the generator fails with this text (exercises error callbacks). */
  fail_with: string | null;
  /** Overrides the `status` part of the callback (`success` / `error` by default). */
  status_text: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  /** Where the result file is kept (blob key or path); set on success only. */
  result_key: string | null;
  result_media_type: MediaType | null;
  result_bytes: number | null;
  /** The failure text sent in the error callback; set on failure only. */
  error_message: string | null;
  /** Which generation worker holds the operation while it is `running`, and until when. */
  lease_owner: string | null;
  lease_expires_at: number | null;
  /** How many times a worker has taken the operation: more than one means a worker died on it. */
  runs: number;
  /** Handed in from outside: the `time_gen` to send as it was given (null: `finished_at`). */
  time_gen: string | null;
  /** Handed in from outside: SHA-256 of everything handed in; null for a generated operation. */
  submission_sha256: string | null;
  /** The client whose key created it: whose secret signs its callback, who alone sees it. */
  client: string;
}

/** The outbox: the one callback of a finished operation and its delivery progress. */
export interface CallbacksTable {
  id_gen: string;
  state: CallbackState;
  /** When the next try is due (`pending` / `retrying`); null once final. */
  next_attempt_at: number | null;
  /** All attempts ever made; also the sequence number of the latest attempt row. */
  attempt_count: number;
  /** 1, plus one per manual redelivery. */
  round: number;
  /** Attempts in the current round: what a retry schedule counts. */
  round_attempt_count: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  endpoint_key: string;
  created_at: number;
  finished_at: number | null;
  last_error: string | null;
}

/** Every delivery attempt of a callback, kept across redeliveries. */
export interface AttemptsTable {
  id_gen: string;
  /** 1, 2, … per callback, in the order the attempts were recorded. */
  seq: number;
  round: number;
  at: number;
  duration_ms: number;
  status_code: number | null;
  /** Error class or reason (`timeout`, `connect_refused`, `ssrf_blocked: …`); null on an answer. */
  error: string | null;
  /** The first bytes of the receiver's answer, as text. */
  response_head: string | null;
  worker_id: string | null;
  /** The callback's receiver (`host:port`), for the receivers' health; null on rows from before it was kept. */
  endpoint_key: string | null;
  /** The request's headers as sent, a JSON object of text; null when nothing was sent. */
  request_headers: string | null;
  /** The answer's headers, a JSON object of text; null without an answer. */
  response_headers: string | null;
}

/** Circuit-breaker state of one receiver (`host:port`). */
export interface EndpointsTable {
  key: string;
  circuit_state: CircuitState;
  consecutive_failures: number;
  open_until: number | null;
  updated_at: number;
}

export type KeyRole = 'client' | 'admin';
export const KEY_ROLES: readonly KeyRole[] = ['client', 'admin'];

/** API keys of the service, kept only as SHA-256 hashes. */
export interface ApiKeysTable {
  /** Lower-case hex SHA-256 of the whole key. */
  hash: string;
  /** The key's first characters, to tell keys apart in a list without revealing them. */
  prefix: string;
  label: string | null;
  created_at: number;
  /** The key's public name, to list and revoke it by: `key_` and the first 16 hex of its hash. */
  key_id: string;
  client: string;
  role: KeyRole;
  expires_at: number | null;
  /** Kept coarsely (a write at most every minute per process), for an operator's list. */
  last_used_at: number | null;
  /** A revoked key stays, so that the store never falls back to keyless mode. */
  revoked_at: number | null;
}

/** Each client's signing secret, and the one it replaced while both sign (the rotation's overlap). */
export interface ClientSecretsTable {
  client: string;
  /** The secret as kept: `whsec_…` text, or sealed with the operator's secret key. */
  secret: string;
  previous_secret: string | null;
  /** Until when callbacks carry the previous secret's signature too. */
  previous_until: number | null;
  updated_at: number;
}

/** `Idempotency-Key` of `POST /v1/operations`, per client: the request it names and its answer. */
export interface IdempotencyKeysTable {
  client: string;
  key: string;
  /** SHA-256 of the request body as a JSON value (canonical form). */
  request_sha256: string;
  /** The answer's status; null while the first request is being processed. */
  status: number | null;
  /** The answer's body (JSON text); null while in progress. */
  body: string | null;
  /** When the key was taken: kept for a day, freed after a minute still in progress. */
  created_at: number;
}

export interface StoreSchema {
  operations: OperationsTable;
  callbacks: CallbacksTable;
  attempts: AttemptsTable;
  endpoints: EndpointsTable;
  api_keys: ApiKeysTable;
  client_secrets: ClientSecretsTable;
  idempotency_keys: IdempotencyKeysTable;
}

/** A connection (or a transaction) to the store's tables, on whichever database. */
export type StoreDb = Kysely<StoreSchema>;

/**
 * What the store keeps per client: its API keys, its signing secret, and its `Idempotency-Key`s;
 * and `ClientScope`, the part of every API query that says whose operations it may see.
 */
import type { ApiKeysTable, ClientSecretsTable } from './schema.ts';

/** The scope of an admin key: every client's operations. */
export const ALL_CLIENTS: unique symbol = Symbol('all clients');

/**
 * Whose operations a query sees: one client's (its name), or every client's (`ALL_CLIENTS`).
 * The store methods the API calls take it first, so that no route can leave it out.
 */
export type ClientScope = string | typeof ALL_CLIENTS;

/** A client's name: 1 to 64 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit. */
export const CLIENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The client every operation belonged to before there were clients, and the keyless one. */
export const DEFAULT_CLIENT = 'default';

/** An API key as kept: the `api_keys` table's columns, times as numbers on every database. */
export type ApiKeyRecord = ApiKeysTable;

/** A key to record: its `key_id` is derived from its hash. */
export type NewApiKey = Pick<ApiKeyRecord, 'hash' | 'prefix' | 'client' | 'role'> &
  Partial<Pick<ApiKeyRecord, 'label' | 'created_at' | 'expires_at'>>;

/** The service's API keys, kept as hashes. */
export interface ApiKeyStore {
  /** Records a key (`conflict` if its hash exists); the record as kept. */
  addApiKey(key: NewApiKey): Promise<ApiKeyRecord>;
  /** The key with this hash, revoked and expired ones included (the caller judges), or undefined. */
  findApiKey(hash: string): Promise<ApiKeyRecord | undefined>;
  /** Every key, oldest first. */
  listApiKeys(): Promise<ApiKeyRecord[]>;
  /** Revokes a key for good; `not_found` for an unknown `key_id`. Revoking twice changes nothing. */
  revokeApiKey(keyId: string): Promise<ApiKeyRecord>;
  /** Notes that keys were used at `at` (coarse: the caller batches). */
  touchApiKeys(keyIds: readonly string[], at: number): Promise<void>;
  /** How many keys were ever created, revoked ones included: with none, the store is keyless. */
  countApiKeys(): Promise<number>;
}

/** A client's signing secret as kept (maybe sealed), and the previous one during an overlap. */
export type ClientSecretRecord = ClientSecretsTable;

export interface ClientSecretStore {
  getClientSecret(client: string): Promise<ClientSecretRecord | undefined>;
  /**
   * Keeps `secret` as the client's unless it has one already (several processes may race to
   * make the first): the record that holds either way.
   */
  addClientSecret(client: string, secret: string): Promise<ClientSecretRecord>;
  /**
   * Makes `secret` the client's, the current one becoming the previous until `previousUntil`;
   * `not_found` when the client has no secret yet.
   */
  rotateClientSecret(client: string, secret: string, previousUntil: number): Promise<ClientSecretRecord>;
}

/** Where an `Idempotency-Key` stands when a request names it. */
export type IdempotencyClaim =
  /** Taken by this request: process it, then `completeIdempotencyKey` or `releaseIdempotencyKey`. */
  | { state: 'claimed' }
  /** A request with another body holds or held it. */
  | { state: 'reused' }
  /** The first request with this body is still being processed. */
  | { state: 'in_progress' }
  /** The first request's answer, to replay. */
  | { state: 'done'; status: number; body: string };

export interface IdempotencyOptions {
  /** How long an answer is kept. */
  keepMs: number;
  /** After how long a key still in progress is freed (its request is taken to have died). */
  abandonMs: number;
}

export interface IdempotencyStore {
  /** Takes `key` of `client` for a request whose body hashes to `requestSha256`, or says why not. */
  claimIdempotencyKey(
    client: string,
    key: string,
    requestSha256: string,
    options: IdempotencyOptions,
  ): Promise<IdempotencyClaim>;
  /** Keeps the answer of the request that claimed the key, for its repeats. */
  completeIdempotencyKey(client: string, key: string, status: number, body: string): Promise<void>;
  /** Frees a claimed key (the answer is not kept: a 5xx, a crash of the handler). */
  releaseIdempotencyKey(client: string, key: string): Promise<void>;
}

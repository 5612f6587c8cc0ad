/**
 * Queries per client, the same on both databases: API keys, signing secrets, idempotency keys,
 * and the filter that narrows a query on operations, callbacks or attempts to one client.
 */
import { type RawBuilder, type Selectable, sql } from 'kysely';
import {
  ALL_CLIENTS,
  type ApiKeyRecord,
  type ClientScope,
  type ClientSecretRecord,
  type IdempotencyClaim,
  type IdempotencyOptions,
  type NewApiKey,
} from './client-store.ts';
import { checkClient, checkText } from './operation-queries.ts';
import type { ApiKeysTable, ClientSecretsTable, StoreDb } from './schema.ts';
import { StoreError } from './store-error.ts';

/**
 * The condition "`id_gen` is an operation of `scope`" for a table with an `id_gen` column
 * (callbacks, attempts); true for `ALL_CLIENTS`.
 */
export function inScope(scope: ClientScope): RawBuilder<boolean> {
  return scope === ALL_CLIENTS
    ? sql<boolean>`1 = 1`
    : sql<boolean>`id_gen in (select o.id_gen from operations o where o.client = ${scope})`;
}

/** Refuses a scope that is neither a client's name nor `ALL_CLIENTS`. */
export function checkScope(scope: ClientScope): void {
  if (scope === ALL_CLIENTS) return;
  if (typeof scope !== 'string' || scope.length === 0) {
    throw new StoreError('invalid_argument', 'a client scope is required');
  }
  checkText('client', scope);
}

/** A key's public name: derived from its hash, so keys made before clients have one too. */
function keyIdOf(hash: string): string {
  return `key_${hash.slice(0, 16)}`;
}

function toApiKeyRecord(row: Selectable<ApiKeysTable>): ApiKeyRecord {
  const num = (value: number | null) => (value === null ? null : Number(value));
  return {
    ...row,
    created_at: Number(row.created_at),
    expires_at: num(row.expires_at),
    last_used_at: num(row.last_used_at),
    revoked_at: num(row.revoked_at),
  };
}

export async function insertApiKey(db: StoreDb, key: NewApiKey, now: number): Promise<ApiKeyRecord> {
  checkClient(key.client);
  checkText('label', key.label);
  const row = await db
    .insertInto('api_keys')
    .values({
      hash: key.hash,
      prefix: key.prefix,
      label: key.label ?? null,
      created_at: key.created_at ?? now,
      key_id: keyIdOf(key.hash),
      client: key.client,
      role: key.role,
      expires_at: key.expires_at ?? null,
    })
    .onConflict((oc) => oc.doNothing())
    .returningAll()
    .executeTakeFirst();
  if (row === undefined) throw new StoreError('conflict', 'this key exists already');
  return toApiKeyRecord(row);
}

export async function selectApiKeys(db: StoreDb, hash?: string): Promise<ApiKeyRecord[]> {
  const rows = await db
    .selectFrom('api_keys')
    .selectAll()
    .$if(hash !== undefined, (qb) => qb.where('hash', '=', hash!))
    .orderBy('created_at')
    .orderBy('key_id')
    .execute();
  return rows.map(toApiKeyRecord);
}

export async function revokeApiKeyRow(db: StoreDb, keyId: string, now: number): Promise<ApiKeyRecord> {
  checkText('key_id', keyId);
  await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('key_id', '=', keyId)
    .where('revoked_at', 'is', null)
    .execute();
  const row = await db.selectFrom('api_keys').selectAll().where('key_id', '=', keyId).executeTakeFirst();
  if (row === undefined) throw new StoreError('not_found', `no key ${keyId}`);
  return toApiKeyRecord(row);
}

export async function touchApiKeyRows(db: StoreDb, keyIds: readonly string[], at: number): Promise<void> {
  if (keyIds.length === 0) return;
  await db
    .updateTable('api_keys')
    .set({ last_used_at: at })
    .where('key_id', 'in', keyIds)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
    .execute();
}

function toSecretRecord(row: Selectable<ClientSecretsTable>): ClientSecretRecord {
  return {
    ...row,
    previous_until: row.previous_until === null ? null : Number(row.previous_until),
    updated_at: Number(row.updated_at),
  };
}

export async function selectClientSecret(
  db: StoreDb,
  client: string,
): Promise<ClientSecretRecord | undefined> {
  checkText('client', client);
  const row = await db
    .selectFrom('client_secrets')
    .selectAll()
    .where('client', '=', client)
    .executeTakeFirst();
  return row === undefined ? undefined : toSecretRecord(row);
}

export async function insertClientSecret(
  db: StoreDb,
  client: string,
  secret: string,
  now: number,
): Promise<ClientSecretRecord> {
  checkText('client', client);
  await db
    .insertInto('client_secrets')
    .values({ client, secret, updated_at: now })
    .onConflict((oc) => oc.column('client').doNothing())
    .execute();
  return (await selectClientSecret(db, client))!;
}

export async function rotateClientSecretRow(
  db: StoreDb,
  client: string,
  secret: string,
  previousUntil: number,
  now: number,
): Promise<ClientSecretRecord> {
  checkText('client', client);
  const row = await db
    .updateTable('client_secrets')
    .set((eb) => ({
      previous_secret: eb.ref('secret'),
      previous_until: previousUntil,
      secret,
      updated_at: now,
    }))
    .where('client', '=', client)
    .returningAll()
    .executeTakeFirst();
  if (row === undefined) throw new StoreError('not_found', `client ${client} has no secret yet`);
  return toSecretRecord(row);
}

/**
 * Takes an idempotency key through the database's uniqueness alone: an insert that does nothing
 * if the key exists, else a compare-and-set on the row read (a key whose answer is older than
 * `keepMs`, or in progress longer than `abandonMs`, is taken over), so that of any number of
 * requests at once, in any number of processes, exactly one gets `claimed`.
 */
export async function claimIdempotencyRow(
  db: StoreDb,
  client: string,
  key: string,
  requestSha256: string,
  options: IdempotencyOptions,
  now: number,
): Promise<IdempotencyClaim> {
  checkText('client', client);
  for (;;) {
    const inserted = await db
      .insertInto('idempotency_keys')
      .values({ client, key, request_sha256: requestSha256, created_at: now })
      .onConflict((oc) => oc.columns(['client', 'key']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0) return { state: 'claimed' };
    const row = await db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('client', '=', client)
      .where('key', '=', key)
      .executeTakeFirst();
    // Deleted between the two statements (a 5xx freed it): try the insert again.
    if (row === undefined) continue;
    const createdAt = Number(row.created_at);
    const stale =
      now - createdAt >= options.keepMs || (row.status === null && now - createdAt >= options.abandonMs);
    if (stale) {
      const taken = await db
        .updateTable('idempotency_keys')
        .set({ request_sha256: requestSha256, status: null, body: null, created_at: now })
        .where('client', '=', client)
        .where('key', '=', key)
        .where('created_at', '=', createdAt)
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) > 0) return { state: 'claimed' };
      continue;
    }
    if (row.request_sha256 !== requestSha256) return { state: 'reused' };
    if (row.status === null || row.body === null) return { state: 'in_progress' };
    return { state: 'done', status: Number(row.status), body: row.body };
  }
}

/** Drops idempotency keys whose answers are past keeping. */
export async function purgeIdempotencyRows(db: StoreDb, before: number): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('created_at', '<', before).execute();
}

/** Keeps the answer of the request that holds a key, or (null) frees the key. */
export async function settleIdempotencyRow(
  db: StoreDb,
  client: string,
  key: string,
  answer: { status: number; body: string } | null,
): Promise<void> {
  if (answer === null) {
    await db.deleteFrom('idempotency_keys').where('client', '=', client).where('key', '=', key).execute();
    return;
  }
  await db
    .updateTable('idempotency_keys')
    .set(answer)
    .where('client', '=', client)
    .where('key', '=', key)
    .execute();
}

/**
 * The store's migrations, in order, written once for SQLite and PostgreSQL with Kysely's schema
 * builder. A migration never changes once released: a new column or index is a new entry.
 * The CHECK lists are spelled out here rather than taken from `schema.ts` for that reason,
 * except the families', which follow the protocol: a new family also needs a migration that
 * widens `operations_family_check` in stores made before it.
 */
import { type Kysely, type Migration, type MigrationProvider, Migrator, sql } from 'kysely';
import { FAMILIES } from 'mediahook/protocol';

/** Names of the tables where Kysely's migrator records what ran. */
export const MIGRATION_TABLE = 'store_migrations';
export const MIGRATION_LOCK_TABLE = 'store_migration_lock';

const initial: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('operations')
      .ifNotExists()
      .addColumn('id_gen', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('family', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('webhook_url', 'text', (c) => c.notNull())
      .addColumn('endpoint_key', 'text', (c) => c.notNull())
      .addColumn('prompt', 'text', (c) => c.notNull())
      .addColumn('fail_with', 'text')
      .addColumn('status_text', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('started_at', 'bigint')
      .addColumn('finished_at', 'bigint')
      .addColumn('result_key', 'text')
      .addColumn('result_media_type', 'text')
      .addColumn('result_bytes', 'bigint')
      .addColumn('error_message', 'text')
      .addColumn('lease_owner', 'text')
      .addColumn('lease_expires_at', 'bigint')
      .addColumn('runs', 'integer', (c) => c.notNull().defaultTo(0))
      .addCheckConstraint('operations_kind_check', sql`kind in ('image', 'video')`)
      .addCheckConstraint(
        'operations_family_check',
        sql`family in (${sql.join(FAMILIES.map((family) => sql.lit(family)))})`,
      )
      .addCheckConstraint(
        'operations_state_check',
        sql`state in ('queued', 'running', 'succeeded', 'failed')`,
      )
      .execute();
    // Claiming scans by state in creation order; the dashboard filters by receiver.
    await db.schema
      .createIndex('operations_state_idx')
      .ifNotExists()
      .on('operations')
      .columns(['state', 'id_gen'])
      .execute();
    await db.schema
      .createIndex('operations_endpoint_idx')
      .ifNotExists()
      .on('operations')
      .columns(['endpoint_key', 'id_gen'])
      .execute();

    await db.schema
      .createTable('callbacks')
      .ifNotExists()
      .addColumn('id_gen', 'text', (c) => c.primaryKey().references('operations.id_gen').onDelete('cascade'))
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('next_attempt_at', 'bigint')
      .addColumn('attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('round', 'integer', (c) => c.notNull().defaultTo(1))
      .addColumn('round_attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('lease_owner', 'text')
      .addColumn('lease_expires_at', 'bigint')
      .addColumn('endpoint_key', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('finished_at', 'bigint')
      .addColumn('last_error', 'text')
      .addCheckConstraint(
        'callbacks_state_check',
        sql`state in ('pending', 'delivering', 'retrying', 'delivered', 'dead', 'gone')`,
      )
      .execute();
    // Due work is found by (state, time); expired leases by (state, lease expiry).
    await db.schema
      .createIndex('callbacks_due_idx')
      .ifNotExists()
      .on('callbacks')
      .columns(['state', 'next_attempt_at'])
      .execute();
    await db.schema
      .createIndex('callbacks_lease_idx')
      .ifNotExists()
      .on('callbacks')
      .columns(['state', 'lease_expires_at'])
      .execute();
    await db.schema
      .createIndex('callbacks_endpoint_idx')
      .ifNotExists()
      .on('callbacks')
      .columns(['endpoint_key', 'state'])
      .execute();

    await db.schema
      .createTable('attempts')
      .ifNotExists()
      .addColumn('id_gen', 'text', (c) => c.notNull().references('callbacks.id_gen').onDelete('cascade'))
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('round', 'integer', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('duration_ms', 'integer', (c) => c.notNull())
      .addColumn('status_code', 'integer')
      .addColumn('error', 'text')
      .addColumn('response_head', 'text')
      .addColumn('worker_id', 'text')
      .addPrimaryKeyConstraint('attempts_pk', ['id_gen', 'seq'])
      .execute();

    await db.schema
      .createTable('endpoints')
      .ifNotExists()
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('circuit_state', 'text', (c) => c.notNull())
      .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('open_until', 'bigint')
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addCheckConstraint('endpoints_circuit_check', sql`circuit_state in ('closed', 'open', 'half_open')`)
      .execute();
  },
};

const apiKeys: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('api_keys')
      .ifNotExists()
      .addColumn('hash', 'text', (c) => c.primaryKey())
      .addColumn('prefix', 'text', (c) => c.notNull())
      .addColumn('label', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};

/**
 * Callbacks by (state, receiver, time) in place of (receiver, state): a claim beside a receiver
 * at its cap lists the other receivers' due callbacks from it, one probe per receiver
 * (`receiverDueList`), and every query by receiver and state it served before it serves too.
 */
const receiverDueIndex: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('callbacks_receiver_due_idx')
      .ifNotExists()
      .on('callbacks')
      .columns(['state', 'endpoint_key', 'next_attempt_at', 'id_gen'])
      .execute();
    await db.schema.dropIndex('callbacks_endpoint_idx').ifExists().execute();
  },
};

/**
 * Queued operations by id alone (a partial index): the generation claim takes the oldest, and
 * PostgreSQL otherwise walks the primary key through every finished operation older than it
 * (10 ms beside 100,000 finished), taking the state index for no better.
 */
const queuedOperationsIndex: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('operations_queued_idx')
      .ifNotExists()
      .on('operations')
      .column('id_gen')
      .where(sql.ref('state'), '=', 'queued')
      .execute();
  },
};

/**
 * Outcomes handed in from outside (`POST /v1/callbacks`): the `time_gen` to send as given, and
 * the hash of everything handed in, which a repeat of the same id must match.
 */
const submittedOperations: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('operations').addColumn('time_gen', 'text').execute();
    await db.schema.alterTable('operations').addColumn('submission_sha256', 'text').execute();
  },
};

/**
 * What the operator's view reads of attempts: each one's receiver (filled in for the attempts
 * already kept), the headers sent and answered, and indexes by time (the charts, the hour of
 * each receiver), by receiver and time (its last attempt) and, for failed attempts only, by
 * receiver and time (its last error, however many successes came since).
 */
const operatorView: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('attempts').addColumn('endpoint_key', 'text').execute();
    await db.schema.alterTable('attempts').addColumn('request_headers', 'text').execute();
    await db.schema.alterTable('attempts').addColumn('response_headers', 'text').execute();
    await sql`update attempts set endpoint_key =
      (select c.endpoint_key from callbacks c where c.id_gen = attempts.id_gen)`.execute(db);
    await db.schema.createIndex('attempts_at_idx').ifNotExists().on('attempts').column('at').execute();
    await db.schema
      .createIndex('attempts_endpoint_idx')
      .ifNotExists()
      .on('attempts')
      .columns(['endpoint_key', 'at'])
      .execute();
    await db.schema
      .createIndex('attempts_failed_idx')
      .ifNotExists()
      .on('attempts')
      .columns(['endpoint_key', 'at'])
      .where(
        sql<boolean>`(error is not null or status_code is null or status_code < 200 or status_code > 299)`,
      )
      .execute();
  },
};

/**
 * Clients: each key belongs to a client and has a role (keys made before are `admin` keys of
 * client `default`, named by their hash), may expire and be revoked; each operation belongs to
 * the client whose key created it; each client has its own signing secret; and
 * `Idempotency-Key`s are kept per client.
 */
const clients: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const keys = db.schema.alterTable('api_keys');
    await keys.addColumn('key_id', 'text').execute();
    await keys.addColumn('client', 'text', (c) => c.notNull().defaultTo('default')).execute();
    await keys.addColumn('role', 'text', (c) => c.notNull().defaultTo('admin')).execute();
    await keys.addColumn('expires_at', 'bigint').execute();
    await keys.addColumn('last_used_at', 'bigint').execute();
    await keys.addColumn('revoked_at', 'bigint').execute();
    await sql`update api_keys set key_id = 'key_' || substr(hash, 1, 16)`.execute(db);
    await db.schema.createIndex('api_keys_key_id_idx').unique().on('api_keys').column('key_id').execute();

    await db.schema
      .alterTable('operations')
      .addColumn('client', 'text', (c) => c.notNull().defaultTo('default'))
      .execute();
    // A client's operations newest first; its receivers' callbacks and attempts are found by id.
    await db.schema
      .createIndex('operations_client_idx')
      .ifNotExists()
      .on('operations')
      .columns(['client', 'id_gen'])
      .execute();

    await db.schema
      .createTable('client_secrets')
      .ifNotExists()
      .addColumn('client', 'text', (c) => c.primaryKey())
      .addColumn('secret', 'text', (c) => c.notNull())
      .addColumn('previous_secret', 'text')
      .addColumn('previous_until', 'bigint')
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('idempotency_keys')
      .ifNotExists()
      .addColumn('client', 'text', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('request_sha256', 'text', (c) => c.notNull())
      .addColumn('status', 'integer')
      .addColumn('body', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['client', 'key'])
      .execute();
    await db.schema
      .createIndex('idempotency_keys_created_idx')
      .ifNotExists()
      .on('idempotency_keys')
      .column('created_at')
      .execute();
  },
};

/** Every migration by name; names sort in the order they must run. */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001_initial': initial,
  '0002_api_keys': apiKeys,
  '0003_receiver_due_index': receiverDueIndex,
  '0004_queued_operations_index': queuedOperationsIndex,
  '0005_submitted_operations': submittedOperations,
  '0006_operator_view': operatorView,
  '0007_clients': clients,
};

const provider: MigrationProvider = {
  async getMigrations() {
    return { ...MIGRATIONS };
  },
};

/**
 * Runs the migrations that have not run yet on `db`; running it again changes nothing.
 * `schema` (PostgreSQL) is where the bookkeeping tables live, so that stores in different
 * schemas of one database never read each other's migration records.
 *
 * @example
 * await migrateToLatest(db, { schema: 'mediahook' });
 */
export async function migrateToLatest(
  db: Kysely<unknown>,
  options: { schema?: string | undefined } = {},
): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
    ...(options.schema === undefined ? {} : { migrationTableSchema: options.schema }),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

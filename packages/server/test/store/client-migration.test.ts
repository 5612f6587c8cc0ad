/**
 * The upgrade to clients, on both databases: a store made before them (every migration but the
 * clients' one, with a key and an operation in it) keeps its key as an `admin` key of client
 * `default`, and its operations as that client's.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { type Dialect, Kysely, type Migration, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ALL_CLIENTS,
  MIGRATION_LOCK_TABLE,
  MIGRATION_TABLE,
  MIGRATIONS,
  PostgresStore,
  SqliteStore,
  type Store,
} from '../../src/store/index.ts';
import { POSTGRES_URL, probePostgres } from './backends.ts';

const problem = await probePostgres();
const BEFORE_CLIENTS = Object.fromEntries(Object.entries(MIGRATIONS).filter(([name]) => name < '0007'));
const HASH = 'f'.repeat(64);
const ID = '01936d3c-0000-7000-8000-000000000001';

/** A store as the release before clients left it: its migrations, one key, one operation. */
async function oldStore(dialect: Dialect, schema?: string): Promise<void> {
  const db = new Kysely<any>({ dialect });
  try {
    const migrator = new Migrator({
      db,
      provider: { getMigrations: async () => BEFORE_CLIENTS as Record<string, Migration> },
      migrationTableName: MIGRATION_TABLE,
      migrationLockTableName: MIGRATION_LOCK_TABLE,
      ...(schema === undefined ? {} : { migrationTableSchema: schema }),
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
    await db
      .insertInto('api_keys')
      .values({ hash: HASH, prefix: 'mh_old1', label: null, created_at: 1 })
      .execute();
    await db
      .insertInto('operations')
      .values({
        id_gen: ID,
        kind: 'image',
        family: 'A',
        state: 'queued',
        webhook_url: 'https://hooks.example/x',
        endpoint_key: 'hooks.example:443',
        prompt: 'p',
        created_at: 1,
        runs: 0,
      })
      .execute();
  } finally {
    await db.destroy();
  }
}

async function expectUpgraded(store: Store): Promise<void> {
  await store.migrate();
  expect(await store.findApiKey(HASH)).toMatchObject({
    key_id: `key_${'f'.repeat(16)}`,
    client: 'default',
    role: 'admin',
    expires_at: null,
    revoked_at: null,
  });
  expect((await store.getOperation('default', ID))?.client).toBe('default');
  expect(await store.getOperation('other', ID)).toBeUndefined();
  expect((await store.getOperation(ALL_CLIENTS, ID))?.id_gen).toBe(ID);
}

describe('the upgrade to clients', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  it('on SQLite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mediahook-upgrade-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'store.sqlite');
    await oldStore(new SqliteDialect({ database: new Database(path) }));
    const store = new SqliteStore(path);
    cleanups.push(() => store.close());
    await expectUpgraded(store);
  });

  it.skipIf(problem !== undefined && process.env.CI !== 'true')('on PostgreSQL', async () => {
    const schema = `upgrade_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    cleanups.push(async () => {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    });
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}`, max: 1 });
    await oldStore(new PostgresDialect({ pool }), schema);
    const store = new PostgresStore({ connectionString: POSTGRES_URL, schema, poolSize: 2 });
    cleanups.push(() => store.close());
    await expectUpgraded(store);
  });
});

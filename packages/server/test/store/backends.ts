/**
 * The two databases the store suite runs on. Each test gets a database of its own: a SQLite
 * file in a fresh temporary directory, or a fresh PostgreSQL schema (created, then dropped),
 * so tests, and whole runs in parallel, never see each other's rows.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { POSTGRES_URL } from '../../../../test/support/processes.ts';
import { PostgresStore, SqliteStore, type Store, type StoreOptions } from '../../src/store/index.ts';

export { POSTGRES_URL, probePostgres } from '../../../../test/support/processes.ts';

/** One test's database. */
export interface Backend {
  /** A new, independent store on this database (on PostgreSQL: its own pool and listener). */
  open(options?: StoreOptions): Store;
  /** Makes every insert into `callbacks` fail until the returned function undoes it. */
  breakCallbackInserts(): Promise<() => Promise<void>>;
  /** Makes every insert of an attempt of callback `idGen` fail, for good. */
  breakAttemptInserts(idGen: string): Promise<void>;
  /** PostgreSQL only: kills the LISTEN connections of this test's stores, as a network failure would. */
  dropListenerConnections?(): Promise<number>;
  /** Rows in a table, read on a connection of its own. */
  countRows(table: string): Promise<number>;
  dispose(): Promise<void>;
}

export interface BackendKind {
  name: 'sqlite' | 'postgres';
  create(): Promise<Backend>;
}

function tracking(open: (options: StoreOptions) => Store) {
  const stores: Store[] = [];
  return {
    open(options: StoreOptions = {}): Store {
      const store = open(options);
      stores.push(store);
      return store;
    },
    async closeAll(): Promise<void> {
      await Promise.all(stores.map((s) => s.close()));
    },
  };
}

const TABLE = /^[a-z_]+$/;

/** A test's own id as an SQL string literal (ids here are UUIDs: nothing needs escaping). */
function quoted(idGen: string): string {
  if (!/^[0-9a-f-]+$/.test(idGen)) throw new Error(`not an id made by the tests: ${idGen}`);
  return `'${idGen}'`;
}

export const sqliteBackend: BackendKind = {
  name: 'sqlite',
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'mediahook-store-'));
    const path = join(dir, 'store.sqlite');
    const stores = tracking((options) => new SqliteStore(path, options));
    const raw = (work: (db: Database.Database) => void) => {
      const db = new Database(path);
      try {
        work(db);
      } finally {
        db.close();
      }
    };
    return {
      open: stores.open,
      async breakCallbackInserts() {
        raw((db) =>
          db.exec(`CREATE TRIGGER test_reject BEFORE INSERT ON callbacks
                   BEGIN SELECT RAISE(ABORT, 'injected failure'); END`),
        );
        return async () => raw((db) => db.exec('DROP TRIGGER test_reject'));
      },
      async breakAttemptInserts(idGen) {
        raw((db) =>
          db.exec(`CREATE TRIGGER test_reject_attempt BEFORE INSERT ON attempts
                   WHEN NEW.id_gen = ${quoted(idGen)}
                   BEGIN SELECT RAISE(ABORT, 'injected failure'); END`),
        );
      },
      async countRows(table) {
        if (!TABLE.test(table)) throw new Error(`bad table ${table}`);
        let n = 0;
        raw((db) => {
          n = (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
        });
        return n;
      },
      async dispose() {
        await stores.closeAll();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

export const postgresBackend: BackendKind = {
  name: 'postgres',
  async create() {
    const schema = `store_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    const stores = tracking(
      (options) => new PostgresStore({ ...options, connectionString: POSTGRES_URL, schema, poolSize: 4 }),
    );
    return {
      open: stores.open,
      async breakCallbackInserts() {
        await admin.query(`CREATE FUNCTION test_reject() RETURNS trigger LANGUAGE plpgsql AS
                           $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`);
        await admin.query(`CREATE TRIGGER test_reject BEFORE INSERT ON callbacks
                           FOR EACH ROW EXECUTE FUNCTION test_reject()`);
        return async () => {
          await admin.query('DROP TRIGGER test_reject ON callbacks');
          await admin.query('DROP FUNCTION test_reject()');
        };
      },
      async breakAttemptInserts(idGen) {
        await admin.query(`CREATE FUNCTION test_reject_attempt() RETURNS trigger LANGUAGE plpgsql AS
                           $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`);
        await admin.query(`CREATE TRIGGER test_reject_attempt BEFORE INSERT ON attempts
                           FOR EACH ROW WHEN (NEW.id_gen = ${quoted(idGen)})
                           EXECUTE FUNCTION test_reject_attempt()`);
      },
      async dropListenerConnections() {
        const result = await admin.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1 AND pid <> pg_backend_pid()',
          [`LISTEN "mediahook_work_${schema}"`],
        );
        return result.rowCount ?? 0;
      },
      async countRows(table) {
        if (!TABLE.test(table)) throw new Error(`bad table ${table}`);
        const result = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
        return Number(result.rows[0]?.n);
      },
      async dispose() {
        try {
          await stores.closeAll();
        } finally {
          await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
          await admin.end();
        }
      },
    };
  },
};

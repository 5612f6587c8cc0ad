import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
} from 'kysely';

/**
 * Kysely's SQLite driver, except that a transaction starts with BEGIN IMMEDIATE: it takes the
 * write lock up front. A plain (deferred) BEGIN takes it at the first write, and two processes
 * that both read first then both fail to upgrade (SQLITE_BUSY) instead of one waiting its turn.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/**
 * The SQLite dialect of the store: every Kysely transaction is a write transaction.
 *
 * @example
 * const db = new Kysely<StoreSchema>({ dialect: new ImmediateSqliteDialect({ database }) });
 */
export class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config);
  }
}

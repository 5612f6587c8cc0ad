import {
  Kysely,
  type PostgresCursor,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  sql,
} from 'kysely';
import pg from 'pg';
import { statementNameOf } from '../compiled-query.ts';
import type { StoreDb, StoreSchema } from '../schema.ts';
import { SqlStore, type StoreOptions } from '../sql-store.ts';
import type { WorkEvent, WorkListener, WorkSubscription } from '../store.ts';
import { StoreError } from '../store-error.ts';
import { WorkSignal, warnListenerError } from '../work-signal.ts';
import { encodeWorkEvent, NotificationListener } from './notification-listener.ts';
import { postgresDialect } from './postgres-dialect.ts';

interface PostgresStoreOptions extends StoreOptions {
  /** `postgres://user@host:5432/db`. */
  connectionString: string;
  /** Where the tables live; created by `migrate()` when missing. `public` by default. */
  schema?: string;
  /** Connections in the pool (the LISTEN connection comes on top). */
  poolSize?: number;
}

/** Lower-case SQL identifiers only, so the name needs no quoting anywhere it is used. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/;
const INT8_OID = 20;

// `bigint` columns hold milliseconds and byte counts, far below 2^53; `count(*)` is bigint too.
// Parsed per pool, not through pg's process-wide parsers, so other pg users are unaffected.
const storeTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format ?? 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

/** PostgreSQL's SQLSTATE for a prepared statement whose result columns a schema change altered. */
const STALE_STATEMENT = '0A000';

/**
 * The pool as Kysely uses it, except that the store's compiled queries run as named (prepared)
 * statements: PostgreSQL then parses and plans each once per connection instead of on every
 * run, which for the claim took as long as running it. A statement returning whole rows goes
 * stale when its table gains a column (a newer process migrating); the connection holding it is
 * then closed on release rather than pooled, so one write fails, not every later use of it.
 */
function preparingPool(pool: pg.Pool): PostgresPool {
  return {
    async connect() {
      const client = await pool.connect();
      let stale = false;
      return {
        query(text: string | PostgresCursor<unknown>, values?: readonly unknown[]) {
          if (typeof text !== 'string') return client.query(text as never);
          const name = statementNameOf(text);
          if (name === undefined) return client.query(text, values as unknown[]);
          return client.query({ name, text, values: values as unknown[] }).catch((error: unknown) => {
            if ((error as { code?: string }).code === STALE_STATEMENT) stale = true;
            throw error;
          });
        },
        release: () => client.release(stale),
      } as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}

/**
 * The store on PostgreSQL, for several service or worker processes sharing one queue. Claims
 * use `FOR UPDATE SKIP LOCKED`; wake-ups are NOTIFY'd inside the transaction that made work due
 * and heard through LISTEN on a dedicated connection, by every process using the same schema.
 *
 * @example
 * const store = new PostgresStore({ connectionString: 'postgres://app@db:5432/mediahook' });
 * await store.migrate();
 * const stop = store.onWork(() => worker.poke());
 */
export class PostgresStore extends SqlStore {
  readonly schema: string;
  /** The NOTIFY channel; one per schema, since channels are shared by the whole database. */
  readonly channel: string;
  readonly #clientConfig: pg.ClientConfig;
  readonly #signal: WorkSignal;
  readonly #onError: (error: unknown) => void;
  #listener: NotificationListener | undefined;
  #closed = false;

  constructor(options: PostgresStoreOptions) {
    const schema = options.schema ?? 'public';
    if (!SCHEMA_NAME.test(schema)) {
      throw new StoreError(
        'invalid_argument',
        `schema must match ${SCHEMA_NAME} (got ${JSON.stringify(schema)})`,
      );
    }
    const clientConfig: pg.ClientConfig = {
      connectionString: options.connectionString,
      // Set at connection start, so every pooled connection (and the listener) sees the schema.
      options: `-c search_path=${schema}`,
      types: storeTypes,
    };
    const pool = new pg.Pool({ ...clientConfig, max: options.poolSize ?? 10 });
    const onError = options.onBackgroundError ?? warnListenerError;
    // An idle pooled connection that dies is replaced on next use; without a handler it would
    // crash the process.
    pool.on('error', onError);
    // The pool listens only to idle connections: one that dies while checked out between two
    // queries (a server restart) would crash the process with an unhandled 'error'. Its next
    // query fails instead, and the pool drops it on release.
    pool.on('connect', (client) => client.on('error', onError));
    const channel = `mediahook_work_${schema}`;
    const db = new Kysely<StoreSchema>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
    super(db, postgresDialect(channel), options);
    this.schema = schema;
    this.channel = channel;
    this.#clientConfig = clientConfig;
    this.#onError = onError;
    this.#signal = new WorkSignal(onError);
  }

  protected override async prepare(): Promise<void> {
    if (this.schema === 'public') return;
    try {
      await this.db.schema.createSchema(this.schema).ifNotExists().execute();
    } catch (error) {
      // Two processes creating it at once: one of them fails although the schema now exists.
      const found = await sql<{
        n: number;
      }>`select count(*) as n from pg_namespace where nspname = ${this.schema}`
        .execute(this.db)
        .catch(() => undefined);
      if (Number(found?.rows[0]?.n ?? 0) === 0) throw error;
    }
  }

  protected override migrationSchema(): string {
    return this.schema;
  }

  protected override async announceInTransaction(trx: StoreDb, events: readonly WorkEvent[]): Promise<void> {
    // Delivered at commit, and not at all on rollback: no wake-up for work that never became due.
    for (const event of events) {
      await sql`select pg_notify(${this.channel}, ${encodeWorkEvent(event)})`.execute(trx);
    }
  }

  protected override announceAfterCommit(): void {
    // This process hears its own NOTIFY through its listener like any other process.
  }

  override onWork(listener: WorkListener): WorkSubscription {
    if (this.#closed) throw new StoreError('unavailable', 'the store is closed');
    this.#listener ??= new NotificationListener({
      client: this.#clientConfig,
      channel: this.channel,
      onEvent: (event) => this.#signal.emit(event),
      onError: this.#onError,
    });
    return this.#signal.subscribe(listener, this.#listener.ready);
  }

  override async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#signal.clear();
    await this.#listener?.close();
    await this.db.destroy();
  }
}

import { PostgresStore } from './postgres/postgres-store.ts';
import type { StoreOptions } from './sql-store.ts';
import { SqliteStore } from './sqlite/sqlite-store.ts';
import type { Store } from './store.ts';

const POSTGRES_URL = /^postgres(ql)?:\/\//i;

/**
 * The store a `--db` value names: a `postgres://` or `postgresql://` URL opens PostgreSQL
 * (a `schema` query parameter picks the schema, `public` by default), anything else is a
 * SQLite file path. Call `migrate()` before use.
 *
 * @example
 * const store = openStore('postgres://app@db/mediahook?schema=callbacks');
 * await store.migrate();
 */
export function openStore(db: string, options: StoreOptions & { schema?: string } = {}): Store {
  if (!POSTGRES_URL.test(db)) return new SqliteStore(db, options);
  const url = new URL(db);
  const schema = url.searchParams.get('schema') ?? options.schema;
  url.searchParams.delete('schema');
  return new PostgresStore({ ...options, connectionString: url.href, ...(schema ? { schema } : {}) });
}

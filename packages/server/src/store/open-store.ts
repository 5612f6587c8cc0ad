import { PostgresStore } from './postgres/postgres-store.ts';
import type { StoreOptions } from './sql-store.ts';
import { SqliteStore } from './sqlite/sqlite-store.ts';
import type { Store } from './store.ts';
import { StoreError } from './store-error.ts';

const POSTGRES_URL = /^postgres(ql)?:\/\//i;
/** A URL scheme of two letters or more: `C:\data` stays a (Windows) path. */
const SCHEME = /^([a-z][a-z0-9+.-]+):/i;

/** Where a `--db` value puts the store: a SQLite file, or a PostgreSQL URL. */
type DbLocation = { dialect: 'sqlite'; path: string } | { dialect: 'postgres'; url: string };

/**
 * Reads a `--db` value: a path or `sqlite:PATH` is a SQLite file, `postgres://…` or
 * `postgresql://…` PostgreSQL. Any other `scheme:` is refused (`invalid_argument`) rather than
 * taken for a file name.
 *
 * @example
 * parseDbLocation('sqlite:./data/x.sqlite'); // { dialect: 'sqlite', path: './data/x.sqlite' }
 */
export function parseDbLocation(db: string): DbLocation {
  if (POSTGRES_URL.test(db)) return { dialect: 'postgres', url: db };
  const scheme = SCHEME.exec(db)?.[1];
  const path = scheme?.toLowerCase() === 'sqlite' ? db.slice(scheme.length + 1) : db;
  if (scheme !== undefined && path === db) {
    throw new StoreError(
      'invalid_argument',
      `${scheme}: is not a store mediahook knows: give a SQLite file path (or sqlite:PATH) or a postgres:// URL`,
    );
  }
  if (path === '') {
    throw new StoreError('invalid_argument', 'the store needs a SQLite file path or a postgres:// URL');
  }
  return { dialect: 'sqlite', path };
}

/**
 * The store a `--db` value names ({@link parseDbLocation}): a `postgres://` or `postgresql://`
 * URL opens PostgreSQL (a `schema` query parameter picks the schema, `public` by default), a
 * path or `sqlite:PATH` a SQLite file. Call `migrate()` before use.
 *
 * @example
 * const store = openStore('postgres://app@db/mediahook?schema=callbacks');
 * await store.migrate();
 */
export function openStore(db: string, options: StoreOptions & { schema?: string } = {}): Store {
  const location = parseDbLocation(db);
  if (location.dialect === 'sqlite') return new SqliteStore(location.path, options);
  const url = new URL(location.url);
  const schema = url.searchParams.get('schema') ?? options.schema;
  url.searchParams.delete('schema');
  return new PostgresStore({ ...options, connectionString: url.href, ...(schema ? { schema } : {}) });
}

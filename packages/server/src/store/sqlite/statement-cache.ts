import type Database from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

/** Distinct SQL texts kept prepared; Kysely writes one text per query shape, so few are in use. */
const CACHED_STATEMENTS = 256;

/**
 * The connection as Kysely's SQLite driver sees it, with prepared statements kept by SQL text.
 * The driver prepares every query afresh, and compiling a statement costs more than running it
 * for the store's short queries (the claim's CTE most of all); a statement is reusable for any
 * parameters. One still being iterated (`busy`) is not handed out twice: that query gets a
 * fresh one. SQLite recompiles a kept statement by itself when the schema changes.
 */
export function withStatementCache(database: Database.Database): SqliteDatabase {
  const statements = new Map<string, Database.Statement>();
  return {
    prepare(sql) {
      const kept = statements.get(sql);
      if (kept !== undefined && !kept.busy) {
        // Most recently used last, so the least recently used is the first to go.
        statements.delete(sql);
        statements.set(sql, kept);
        return kept;
      }
      const statement = database.prepare(sql);
      if (kept === undefined) {
        if (statements.size >= CACHED_STATEMENTS) statements.delete(statements.keys().next().value!);
        statements.set(sql, statement);
      }
      return statement;
    },
    close() {
      statements.clear();
      database.close();
    },
  };
}

/**
 * A PostgreSQL connection that dies while the store holds it between two queries (what a
 * server restart does to busy workers) must not take the process down: the crash run that
 * restarts PostgreSQL found worker processes dying of exactly that. The server is not
 * restarted here, since other tests share it; the one connection is terminated instead.
 */
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { freshSchema, POSTGRES_URL, probePostgres, until } from '../support/processes.ts';
import { PostgresStore } from '../../packages/server/src/store/index.ts';

const problem = await probePostgres();

describe.skipIf(problem !== undefined && process.env.CI !== 'true')('a PostgreSQL store', () => {
  it('survives its connection dying between two queries, and goes on working', async () => {
    if (problem) throw new Error(`PostgreSQL is required when CI=true: ${problem}`);
    const { schema, drop } = freshSchema('reliability_conn');
    const errors: unknown[] = [];
    const store = new PostgresStore({
      connectionString: POSTGRES_URL,
      schema,
      poolSize: 2,
      onBackgroundError: (e) => errors.push(e),
    });
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      await store.migrate();
      // The store's own query builder: the only way to hold a pooled connection between queries.
      const db = (store as unknown as { db: Kysely<any> }).db;
      await db
        .transaction()
        .execute(async (trx) => {
          const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
          await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
          // The connection reports its end while nothing runs on it.
          expect(await until(() => errors.length > 0, 10_000, 20)).toBe(true);
        })
        .catch(() => {});
      expect(await store.getOperation('default', 'nothing-here')).toBeUndefined();
    } finally {
      await store.close();
      await admin.end();
      await drop();
    }
  }, 30_000);
});

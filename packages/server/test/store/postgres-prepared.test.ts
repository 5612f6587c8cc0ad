/**
 * On PostgreSQL the store's compiled queries run as prepared statements. A statement that
 * returns whole rows fails once its table gains a column (a newer process migrating during a
 * rolling upgrade); the connection that holds it is then retired, so the failure is one write,
 * retried as any failed write is, and not every use of that connection from then on.
 */
import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { freshSchema, POSTGRES_URL, probePostgres } from '../../../../test/support/processes.ts';
import { PostgresStore } from '../../src/store/index.ts';
import { newOperation } from './helpers.ts';

const problem = await probePostgres();

describe.skipIf(problem !== undefined && process.env.CI !== 'true')('PostgreSQL prepared statements', () => {
  it('retire a connection whose statements a schema change made stale', async () => {
    if (problem) throw new Error(`PostgreSQL is required when CI=true: ${problem}`);
    const { schema, drop } = freshSchema('prepared');
    // One connection: every query reuses it, and with it its prepared statements.
    const store = new PostgresStore({ connectionString: POSTGRES_URL, schema, poolSize: 1 });
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      await store.migrate();
      const finish = async () => {
        const op = await store.createOperation(newOperation());
        return store.finishOperation(op.id_gen, { state: 'failed', message: 'x' });
      };
      const pid = async () =>
        (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(store['db'])).rows[0]!.pid;
      expect((await finish()).changed).toBe(true); // prepares the finish statements
      const before = await pid();
      await admin.query(`alter table ${schema}.operations add column note text`);
      // The stale statement fails this write once…
      await expect(finish()).rejects.toThrow(/cached plan must not change result type/);
      // …and the next ones run on a new connection that prepares it afresh.
      expect((await finish()).changed).toBe(true);
      expect(await pid()).not.toBe(before);
      expect((await finish()).changed).toBe(true);
    } finally {
      await store.close();
      await drop();
      await admin.end();
    }
  });
});

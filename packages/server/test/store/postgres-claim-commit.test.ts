/**
 * On PostgreSQL a claim's commit does not wait for the WAL flush (a lease lost to a server crash
 * only makes its callbacks due again), and that setting stays inside the claim's own
 * transaction: the commits that follow on the same connection, an outbox's among them, are
 * flushed as ever.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { freshSchema, POSTGRES_URL, probePostgres } from '../../../../test/support/processes.ts';
import { claimCallbackRows } from '../../src/store/claim-queries.ts';
import { PostgresStore } from '../../src/store/index.ts';
import { postgresDialect } from '../../src/store/postgres/postgres-dialect.ts';
import type { StoreDb } from '../../src/store/schema.ts';
import { finishedOperations } from './helpers.ts';

const problem = await probePostgres();

async function synchronousCommit(db: StoreDb): Promise<string> {
  const result = await sql<{ value: string }>`select current_setting('synchronous_commit') as value`.execute(
    db,
  );
  return result.rows[0]!.value;
}

describe.skipIf(problem !== undefined && process.env.CI !== 'true')('PostgreSQL claim commit', () => {
  it('turns synchronous_commit off for the claim transaction only', async () => {
    if (problem) throw new Error(`PostgreSQL is required when CI=true: ${problem}`);
    const { schema, drop } = freshSchema('claim_commit');
    // One connection: what a claim leaves in its session, the next query would see.
    const store = new PostgresStore({ connectionString: POSTGRES_URL, schema, poolSize: 1 });
    try {
      await store.migrate();
      const db = store['db'] as StoreDb;
      await finishedOperations(store, 2);
      expect(await synchronousCommit(db)).toBe('on');

      // Inside a transaction of its own, the claim's setting is visible after it…
      const inside = await db.transaction().execute(async (trx) => {
        const claimed = await claimCallbackRows(trx, postgresDialect(store.channel), 'w1', {
          now: Date.now(),
          leaseMs: 60_000,
          limit: 1,
        });
        return { claimed: claimed.length, setting: await synchronousCommit(trx) };
      });
      expect(inside).toEqual({ claimed: 1, setting: 'off' });
      // …and gone once it ends, as it is after a claim made through the store.
      expect(await synchronousCommit(db)).toBe('on');
      expect(await store.claimCallbacks('w2', { limit: 1, leaseMs: 60_000 })).toHaveLength(1);
      expect(await synchronousCommit(db)).toBe('on');
    } finally {
      await store.close();
      await drop();
    }
  });
});

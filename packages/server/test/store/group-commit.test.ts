/**
 * Group commit on a real SQLite file: writes that queue up behind a running transaction share
 * the next one, each in a savepoint, so that one failing write is rolled back alone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoreDb } from '../../src/store/schema.ts';
import { GroupCommit } from '../../src/store/sqlite/group-commit.ts';
import { ImmediateSqliteDialect } from '../../src/store/sqlite/immediate-sqlite-dialect.ts';

let dir: string;
let database: Database.Database;
let db: StoreDb;
let begins: number;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mediahook-group-commit-'));
  database = new Database(join(dir, 'g.sqlite'));
  database.pragma('journal_mode = WAL');
  begins = 0;
  db = new Kysely({
    dialect: new ImmediateSqliteDialect({ database }),
    log: (event) => {
      if (event.query.sql === 'begin immediate') begins += 1;
    },
  }) as unknown as StoreDb;
  await sql`create table t (k text primary key)`.execute(db);
});
afterEach(async () => {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const insert = (k: string) => (trx: StoreDb) => sql`insert into t (k) values (${k})`.execute(trx);
const keys = () => database.prepare('select k from t order by k').pluck().all();

describe('GroupCommit', () => {
  it('runs a write that finds none running at once, alone', async () => {
    const commits = new GroupCommit(db);
    const { value, events } = await commits.run(async (trx, events) => {
      await insert('a')(trx);
      events.push({ kind: 'callback', id_gen: 'a' });
      return 42;
    });
    expect(value).toBe(42);
    expect(events).toEqual([{ kind: 'callback', id_gen: 'a' }]);
    expect(keys()).toEqual(['a']);
    expect(begins).toBe(1);
  });

  it('groups the writes that queue up, and rolls back a failing one alone', async () => {
    const commits = new GroupCommit(db);
    const names = Array.from({ length: 20 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    const results = await Promise.allSettled(
      names.map((k) =>
        commits.run(async (trx, events) => {
          await insert(k)(trx);
          events.push({ kind: 'operation', id_gen: k });
          // k07 writes, then fails: what it wrote must go, and nothing else.
          if (k === 'k07') throw new Error('k07 fails after writing');
          // k13 breaks a constraint: its statement fails, the others stand.
          if (k === 'k13') await insert('k00')(trx);
          return k;
        }),
      ),
    );
    expect(results[7]).toMatchObject({ status: 'rejected', reason: { message: 'k07 fails after writing' } });
    expect(results[13]).toMatchObject({ status: 'rejected' });
    const fulfilled = results.filter((r) => r.status === 'fulfilled');
    expect(fulfilled).toHaveLength(18);
    for (const r of fulfilled) expect(r.value.events).toEqual([{ kind: 'operation', id_gen: r.value.value }]);
    expect(keys()).toEqual(names.filter((k) => k !== 'k07' && k !== 'k13'));
    // The first ran alone; the 19 that queued behind it shared one transaction.
    expect(begins).toBe(2);
  });

  it('fails every write of a group whose transaction cannot commit, and goes on afterwards', async () => {
    const commits = new GroupCommit(db);
    // Another connection holds the write lock: BEGIN IMMEDIATE fails once the wait is over.
    database.pragma('busy_timeout = 50');
    const other = new Database(join(dir, 'g.sqlite'));
    other.exec('begin immediate');
    const results = await Promise.allSettled(['x', 'y', 'z'].map((k) => commits.run(insert(k))));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    other.exec('rollback');
    other.close();
    await commits.run(insert('after'));
    expect(keys()).toEqual(['after']);
  });
});

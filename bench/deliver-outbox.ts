/**
 * Outboxes for the deliver suite: a fresh store per run (a temporary SQLite file, or a
 * PostgreSQL schema of its own, dropped afterwards) with its result directory, and a bulk
 * loader that fills a SQLite outbox with a due backlog far faster than one transaction per
 * callback would.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { blobKeyOf, DirectoryBlobStore } from '../packages/server/src/delivery/index.ts';
import { uuidv7Generator } from '../packages/mediahook/src/protocol/uuidv7.ts';
import { endpointKeyOf, openStore, type Store } from '../packages/server/src/store/index.ts';

export const POSTGRES_URL = process.env.MEDIAHOOK_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

export type Backend = 'sqlite' | 'postgres';

const nextId = uuidv7Generator();

/** A fresh store and result directory, and how to remove both. */
export interface Outbox {
  store: Store;
  blobs: DirectoryBlobStore;
  /** The result every operation of the bench points to. */
  resultKey: string;
  /** The SQLite file (for the bulk loader); undefined on PostgreSQL. */
  sqlitePath?: string;
  /** The PostgreSQL schema of this outbox; undefined on SQLite. */
  postgresSchema?: string;
  dispose(): Promise<void>;
}

/**
 * Opens a fresh outbox. Every operation's result is the same 64 KiB file: the sender reads it
 * from the page cache, as it would a result the generator has just written; writing a file per
 * operation would be the generator's work, not delivery's.
 */
export async function openOutbox(backend: Backend, jpeg: Buffer): Promise<Outbox> {
  const dir = mkdtempSync(join(tmpdir(), 'mediahook-bench-deliver-'));
  const schema = `bench_deliver_${process.pid}_${randomBytes(4).toString('hex')}`;
  const sqlitePath = join(dir, 'outbox.sqlite');
  const store = backend === 'sqlite' ? openStore(sqlitePath) : openStore(`${POSTGRES_URL}?schema=${schema}`);
  const dispose = async () => {
    try {
      await store.close();
      if (backend === 'postgres') await dropSchema(schema);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    await store.migrate();
    const blobs = new DirectoryBlobStore(join(dir, 'results'));
    const resultKey = blobKeyOf(nextId(), 'image/jpeg');
    await blobs.put(resultKey, [jpeg]);
    const where = backend === 'sqlite' ? { sqlitePath } : { postgresSchema: schema };
    return { store, blobs, resultKey, ...where, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/**
 * Runs bulk statements on the outbox's database over a connection of its own (the store is idle
 * meanwhile). `statementsOver(series)` is given a FROM item of the rows `i` = 0 … n - 1, as the
 * database spells it.
 */
export async function execOnOutbox(
  outbox: Outbox,
  n: number,
  statementsOver: (series: string) => string[],
): Promise<void> {
  if (outbox.sqlitePath) {
    const db = new Database(outbox.sqlitePath);
    try {
      const series = `(WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ${n - 1}) SELECT i FROM s)`;
      for (const statement of statementsOver(series)) db.exec(statement);
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(`SET search_path TO ${outbox.postgresSchema!}`);
    for (const statement of statementsOver(`generate_series(0, ${n - 1}) AS s(i)`))
      await client.query(statement);
  } finally {
    await client.end();
  }
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  client.on('error', () => {}); // a dropped connection fails the query, which is reported
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/** Why PostgreSQL cannot take part, or undefined when it can. */
export async function probePostgres(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2_000 });
  client.on('error', () => {}); // reported through connect() or query()
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (error) {
    return (error as Error).message;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Runs `work(i)` for every i in [0, n), `lanes` at a time. */
export async function inLanes(n: number, lanes: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < n) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(lanes, n) }, lane));
}

/** Rows per bulk transaction: large enough to amortise the commit, small enough to stay brief. */
const LOAD_BATCH = 50_000;

/**
 * Fills the outbox with `n` finished operations and their pending callbacks, all due now, with
 * plain INSERTs on a connection of its own (the store is idle meanwhile). The rows are what
 * finishOperation writes: succeeded operations with the shared result, callbacks `pending`
 * with `next_attempt_at` = `created_at`. Their times are spread as if the backlog had been
 * enqueued at 4 callbacks per millisecond, so that, as in a real backlog, they are mostly
 * distinct and strictly older than now.
 */
export function loadBacklog(outbox: Outbox, n: number, origin: string, bytes: number): void {
  if (!outbox.sqlitePath) throw new Error('the bulk loader writes SQLite files only');
  const db = new Database(outbox.sqlitePath);
  try {
    db.pragma('synchronous = NORMAL');
    const endpoint = endpointKeyOf(`${origin}/`);
    const operation = db.prepare(
      `INSERT INTO operations (id_gen, kind, family, state, webhook_url, endpoint_key, prompt,
         created_at, started_at, finished_at, result_key, result_media_type, result_bytes, runs)
       VALUES (?, 'image', 'A', 'succeeded', ?, ?, 'bench', ?, ?, ?, ?, 'image/jpeg', ?, 1)`,
    );
    const callback = db.prepare(
      `INSERT INTO callbacks (id_gen, state, next_attempt_at, attempt_count, round,
         round_attempt_count, endpoint_key, created_at)
       VALUES (?, 'pending', ?, 0, 1, 0, ?, ?)`,
    );
    const start = Date.now() - Math.ceil(n / 4) - 1;
    const batch = db.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const id = nextId();
        const at = start + Math.floor(i / 4);
        operation.run(id, `${origin}/cb/${id}`, endpoint, at, at, at, outbox.resultKey, bytes);
        callback.run(id, at, endpoint, at);
      }
    });
    for (let from = 0; from < n; from += LOAD_BATCH) batch(from, Math.min(n, from + LOAD_BATCH));
  } finally {
    db.close();
  }
}

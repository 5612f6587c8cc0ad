import { Readable } from 'node:stream';
import pg from 'pg';
import { BLOB_KEY, type BlobBytes, checkBlobKey, type OpenedBlob, RemoteBlobStore } from './blob-store.ts';

/** Rows of 1 MiB: small enough to pass through pg as one value, few enough to read a file fast. */
const CHUNK_BYTES = 1024 * 1024;
/** Chunks fetched per query while a file is streamed out: at most this many MiB in memory. */
const CHUNKS_PER_READ = 2;
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

interface PostgresBlobStoreOptions {
  /** `postgres://user@host:5432/db`: the store's own database. */
  connectionString: string;
  /** The schema of the store's tables (`public` by default); the blob tables go beside them. */
  schema?: string | undefined;
  /** Connections in the pool (4). */
  poolSize?: number;
}

/**
 * Result files kept in PostgreSQL, the store's own database, as rows of 1 MiB chunks: every
 * process that reaches the database reads every result, with no disk shared. A file is written
 * in one transaction, chunk by chunk as its bytes arrive, so a writer that dies leaves nothing;
 * it is read back a few chunks per query. No whole file is held in memory either way.
 *
 * @example
 * const blobs = await PostgresBlobStore.open({ connectionString: 'postgres://app@db/mediahook' });
 * await blobs.put(blobKeyOf(idGen, 'video/mp4'), createReadStream('out.mp4'));
 */
export class PostgresBlobStore extends RemoteBlobStore {
  readonly location = 'postgres';
  readonly #pool: pg.Pool;
  readonly #files: string;
  readonly #chunks: string;

  private constructor(pool: pg.Pool, schema: string) {
    super();
    this.#pool = pool;
    this.#files = `${schema}.result_files`;
    this.#chunks = `${schema}.result_chunks`;
  }

  /** Connects and creates the two tables when missing (safe with several processes at once). */
  static async open(options: PostgresBlobStoreOptions): Promise<PostgresBlobStore> {
    const schema = options.schema ?? 'public';
    if (!SCHEMA_NAME.test(schema)) throw new TypeError(`not a usable schema name: ${schema}`);
    const pool = new pg.Pool({ connectionString: options.connectionString, max: options.poolSize ?? 4 });
    // An idle connection dropped by the server must not crash the process; the next query reconnects.
    pool.on('error', () => {});
    // Nor one dropped while a write holds it between two queries: its next query fails instead.
    pool.on('connect', (client) => client.on('error', () => {}));
    const store = new PostgresBlobStore(pool, schema);
    try {
      await store.#transaction(async (client) => {
        // Two processes creating the same table at once would collide on the catalog otherwise.
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`mediahook_blobs_${schema}`]);
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
        await client.query(`CREATE TABLE IF NOT EXISTS ${store.#files} (
          key text PRIMARY KEY, bytes bigint NOT NULL, chunks integer NOT NULL, created_at bigint NOT NULL)`);
        await client.query(`CREATE TABLE IF NOT EXISTS ${store.#chunks} (
          key text NOT NULL, seq integer NOT NULL, data bytea NOT NULL, PRIMARY KEY (key, seq))`);
      });
    } catch (error) {
      await pool.end();
      throw error;
    }
    return store;
  }

  async put(key: string, bytes: BlobBytes, signal?: AbortSignal): Promise<number> {
    checkBlobKey(key);
    return this.#transaction(async (client) => {
      await client.query(`DELETE FROM ${this.#chunks} WHERE key = $1`, [key]);
      await client.query(`DELETE FROM ${this.#files} WHERE key = $1`, [key]);
      let seq = 0;
      let total = 0;
      const insert = async (chunk: Buffer) => {
        await client.query(`INSERT INTO ${this.#chunks} (key, seq, data) VALUES ($1, $2, $3)`, [
          key,
          seq++,
          chunk,
        ]);
      };
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      for await (const piece of bytes) {
        signal?.throwIfAborted();
        const chunk = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
        pending.push(chunk);
        pendingBytes += chunk.length;
        total += chunk.length;
        while (pendingBytes >= CHUNK_BYTES) {
          const all = Buffer.concat(pending, pendingBytes);
          await insert(all.subarray(0, CHUNK_BYTES));
          pending = [all.subarray(CHUNK_BYTES)];
          pendingBytes -= CHUNK_BYTES;
        }
      }
      signal?.throwIfAborted();
      if (pendingBytes > 0) await insert(Buffer.concat(pending, pendingBytes));
      await client.query(
        `INSERT INTO ${this.#files} (key, bytes, chunks, created_at) VALUES ($1, $2, $3, $4)`,
        [key, total, seq, Date.now()],
      );
      return total;
    });
  }

  async open(key: string): Promise<OpenedBlob | null> {
    const head = await this.#head(key);
    if (!head) return null;
    const pool = this.#pool;
    const chunks = this.#chunks;
    async function* read(): AsyncGenerator<Buffer> {
      for (let seq = 0; seq < head!.chunks; seq += CHUNKS_PER_READ) {
        const { rows } = await pool.query<{ data: Buffer }>(
          `SELECT data FROM ${chunks} WHERE key = $1 AND seq >= $2 AND seq < $3 ORDER BY seq`,
          [key, seq, seq + CHUNKS_PER_READ],
        );
        for (const row of rows) yield row.data;
      }
    }
    return { stream: Readable.from(read(), { objectMode: false }), size: head.bytes };
  }

  async size(key: string): Promise<number | null> {
    return (await this.#head(key))?.bytes ?? null;
  }

  async modifiedAt(key: string): Promise<number | null> {
    checkBlobKey(key);
    const { rows } = await this.#pool.query<{ created_at: string }>(
      `SELECT created_at FROM ${this.#files} WHERE key = $1`,
      [key],
    );
    return rows[0] ? Number(rows[0].created_at) : null;
  }

  async remove(key: string): Promise<void> {
    checkBlobKey(key);
    await this.#transaction(async (client) => {
      await client.query(`DELETE FROM ${this.#files} WHERE key = $1`, [key]);
      await client.query(`DELETE FROM ${this.#chunks} WHERE key = $1`, [key]);
    });
  }

  async *keys(): AsyncIterable<string> {
    let after = '';
    for (;;) {
      const { rows } = await this.#pool.query<{ key: string }>(
        `SELECT key FROM ${this.#files} WHERE key > $1 ORDER BY key LIMIT 1000`,
        [after],
      );
      for (const row of rows) if (BLOB_KEY.test(row.key)) yield row.key;
      if (rows.length < 1000) return;
      after = rows.at(-1)!.key;
    }
  }

  close(): Promise<void> {
    return this.#pool.end();
  }

  async #head(key: string): Promise<{ bytes: number; chunks: number } | null> {
    checkBlobKey(key);
    const { rows } = await this.#pool.query<{ bytes: string; chunks: number }>(
      `SELECT bytes, chunks FROM ${this.#files} WHERE key = $1`,
      [key],
    );
    const row = rows[0];
    return row ? { bytes: Number(row.bytes), chunks: row.chunks } : null;
  }

  async #transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // A connection that cannot even roll back is not given to the next writer.
      await client.query('ROLLBACK').catch(() => (broken = true));
      throw error;
    } finally {
      client.release(broken);
    }
  }
}

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Receipt, ReceiptStore } from './receipt-store.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS receipts (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id_gen TEXT NOT NULL UNIQUE,
  event TEXT NOT NULL,
  family TEXT NOT NULL,
  status TEXT NOT NULL,
  time_gen TEXT NOT NULL,
  message TEXT,
  file_path TEXT,
  media_type TEXT,
  bytes INTEGER,
  sha256 TEXT,
  received_at TEXT NOT NULL
)`;

const COLUMNS =
  'id_gen, event, family, status, time_gen, message, file_path, media_type, bytes, sha256, received_at';

/**
 * Receipts in a SQLite file (WAL). Survives restarts; several receivers in one process may
 * share it. A process crash loses nothing committed.
 *
 * @example
 * const store = new SqliteReceiptStore('./callbacks/receipts.sqlite');
 */
export class SqliteReceiptStore implements ReceiptStore {
  readonly #db: Database.Database;
  readonly #get: Database.Statement<[string], Receipt>;
  readonly #add: Database.Statement<Receipt>;
  readonly #list: Database.Statement<[number], Receipt>;

  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.#db = new Database(path);
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
    this.#db.pragma('busy_timeout = 5000');
    this.#db.exec(SCHEMA);
    this.#get = this.#db.prepare(`SELECT ${COLUMNS} FROM receipts WHERE id_gen = ?`);
    this.#add = this.#db.prepare(
      `INSERT INTO receipts (${COLUMNS}) VALUES (@id_gen, @event, @family, @status, @time_gen, @message,
        @file_path, @media_type, @bytes, @sha256, @received_at) ON CONFLICT (id_gen) DO NOTHING`,
    );
    this.#list = this.#db.prepare(`SELECT ${COLUMNS} FROM receipts ORDER BY seq DESC LIMIT ?`);
  }

  async get(idGen: string): Promise<Receipt | undefined> {
    return this.#get.get(idGen);
  }

  async add(receipt: Receipt): Promise<boolean> {
    return this.#add.run(receipt).changes === 1;
  }

  async list(options: { limit?: number } = {}): Promise<Receipt[]> {
    return this.#list.all(options.limit ?? 100);
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }
}

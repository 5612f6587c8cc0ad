import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { useWalMode } from './wal-mode.ts';
import type { Receipt, ReceiptClaims, ReceiptStore } from './receipt-store.ts';

// Both tables are created if missing, so a receipts file from before claims existed upgrades
// in place.
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
);
CREATE TABLE IF NOT EXISTS receipt_claims (
  id_gen TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID`;

const COLUMNS =
  'id_gen, event, family, status, time_gen, message, file_path, media_type, bytes, sha256, received_at';

/**
 * One statement, so that it is atomic across processes: inserts the claim unless a receipt
 * exists, or takes over a claim that is this holder's own or has expired. `changes` is 1 when
 * the holder now holds it.
 */
const CLAIM = `INSERT INTO receipt_claims (id_gen, holder, expires_at)
  SELECT @id_gen, @holder, @expires_at
  WHERE NOT EXISTS (SELECT 1 FROM receipts WHERE id_gen = @id_gen)
  ON CONFLICT (id_gen) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
  WHERE receipt_claims.holder = excluded.holder OR receipt_claims.expires_at <= @now`;

interface ClaimRow {
  id_gen: string;
  holder: string;
  expires_at: number;
  now: number;
}

/**
 * Receipts in a SQLite file (WAL). Survives restarts; several receivers, in one process or in
 * several on one host, may share it: its claims let one of them at a time handle a callback.
 * A process crash loses nothing committed, and its claims lapse at their expiry.
 *
 * @example
 * const store = new SqliteReceiptStore('./callbacks/receipts.sqlite');
 */
export class SqliteReceiptStore implements ReceiptStore, ReceiptClaims {
  readonly #db: Database.Database;
  readonly #get: Database.Statement<[string], Receipt>;
  readonly #add: (receipt: Receipt) => boolean;
  readonly #list: Database.Statement<[number], Receipt>;
  readonly #claim: Database.Statement<ClaimRow>;
  readonly #renew: Database.Statement<[number, string, string]>;
  readonly #release: Database.Statement<[string, string]>;

  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.#db = new Database(path);
    useWalMode(this.#db);
    this.#db.pragma('synchronous = NORMAL');
    this.#db.pragma('busy_timeout = 5000');
    this.#db.exec(SCHEMA);
    // Claims of processes that died and whose callbacks never came again; anyone could take
    // an expired claim over, so dropping one here changes nothing.
    this.#db.prepare('DELETE FROM receipt_claims WHERE expires_at <= ?').run(Date.now());
    this.#get = this.#db.prepare(`SELECT ${COLUMNS} FROM receipts WHERE id_gen = ?`);
    const insert = this.#db.prepare<Receipt>(
      `INSERT INTO receipts (${COLUMNS}) VALUES (@id_gen, @event, @family, @status, @time_gen, @message,
        @file_path, @media_type, @bytes, @sha256, @received_at) ON CONFLICT (id_gen) DO NOTHING`,
    );
    const unclaim = this.#db.prepare<[string]>('DELETE FROM receipt_claims WHERE id_gen = ?');
    // One transaction: no moment in which another process sees neither the claim nor the receipt.
    this.#add = this.#db.transaction((receipt: Receipt) => {
      unclaim.run(receipt.id_gen);
      return insert.run(receipt).changes === 1;
    });
    this.#list = this.#db.prepare(`SELECT ${COLUMNS} FROM receipts ORDER BY seq DESC LIMIT ?`);
    this.#claim = this.#db.prepare(CLAIM);
    this.#renew = this.#db.prepare(
      'UPDATE receipt_claims SET expires_at = ? WHERE id_gen = ? AND holder = ?',
    );
    this.#release = this.#db.prepare('DELETE FROM receipt_claims WHERE id_gen = ? AND holder = ?');
  }

  async get(idGen: string): Promise<Receipt | undefined> {
    return this.#get.get(idGen);
  }

  async add(receipt: Receipt): Promise<boolean> {
    return this.#add(receipt);
  }

  async list(options: { limit?: number } = {}): Promise<Receipt[]> {
    return this.#list.all(options.limit ?? 100);
  }

  async claim(idGen: string, holder: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    return this.#claim.run({ id_gen: idGen, holder, expires_at: now + ttlMs, now }).changes === 1;
  }

  async renew(idGen: string, holder: string, ttlMs: number): Promise<boolean> {
    return this.#renew.run(Date.now() + ttlMs, idGen, holder).changes === 1;
  }

  async release(idGen: string, holder: string): Promise<void> {
    this.#release.run(idGen, holder);
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }
}

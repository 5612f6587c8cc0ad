import type Database from 'better-sqlite3';

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Puts a database in WAL mode, waiting out another process doing the same to the same new file.
 * Switching from the rollback journal takes an exclusive lock, and SQLite answers SQLITE_BUSY at
 * once, without its busy handler, when two connections holding shared locks both want it (one
 * would deadlock the other): several processes opening a fresh file together (receivers sharing
 * an out directory, workers sharing a store) retry here for up to `waitMs`.
 *
 * @example
 * useWalMode(new Database('mediahook.sqlite'));
 */
export function useWalMode(database: Database.Database, waitMs = 5000): void {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      database.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw error;
      // A short synchronous pause, as SQLite's own busy handler would take: this runs while the
      // store is opened, before anything else can use it.
      Atomics.wait(pause, 0, 0, 5 + Math.random() * 20);
    }
  }
}

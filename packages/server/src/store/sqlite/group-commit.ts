/**
 * Group commit for one SQLite connection. SQLite has one writer, and this process already
 * queues its write transactions behind one connection; writes that arrive while one is running
 * share the next transaction, each in a savepoint of its own, and so share its BEGIN and COMMIT
 * (which cost more than the store's small writes themselves). A write that finds none running
 * starts at once, alone, as before.
 */
import { CompiledQuery } from 'kysely';
import type { StoreDb } from '../schema.ts';
import type { WorkEvent } from '../store.ts';

/** What a write does inside its transaction; the events are wake-ups to send after the commit. */
export type WriteWork<T> = (trx: StoreDb, events: WorkEvent[]) => Promise<T>;

interface Pending {
  work: WriteWork<unknown>;
  resolve(result: { value: unknown; events: WorkEvent[] }): void;
  reject(error: unknown): void;
}

/** Most writes one transaction takes: the lock is held no longer than a few of them run. */
const MAX_GROUP = 64;

const SAVEPOINT = CompiledQuery.raw('savepoint write');
const RELEASE = CompiledQuery.raw('release write');
const ROLLBACK_TO = CompiledQuery.raw('rollback to write');

/**
 * Runs writes on `db`, grouping those that queue up behind a running transaction.
 *
 * @example
 * const commits = new GroupCommit(db);
 * const { value, events } = await commits.run((trx, events) => insertRow(trx, events));
 */
export class GroupCommit {
  readonly #db: StoreDb;
  readonly #queue: Pending[] = [];
  #draining = false;

  constructor(db: StoreDb) {
    this.#db = db;
  }

  /** Resolves once `work` is committed (with the events it collected); rejects if it failed. */
  run<T>(work: WriteWork<T>): Promise<{ value: T; events: WorkEvent[] }> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ work, resolve, reject } as Pending);
      if (!this.#draining) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#draining = true;
    try {
      while (this.#queue.length > 0) await this.#commit(this.#queue.splice(0, MAX_GROUP));
    } finally {
      this.#draining = false;
    }
  }

  async #commit(group: Pending[]): Promise<void> {
    const outcomes: ({ value: unknown; events: WorkEvent[] } | { error: unknown })[] = [];
    try {
      await this.#db.transaction().execute(async (trx) => {
        for (const { work } of group) {
          const events: WorkEvent[] = [];
          // Alone, a write is its own transaction: its failure rolls all of it back.
          if (group.length === 1) {
            outcomes.push({ value: await work(trx, events), events });
            continue;
          }
          await trx.executeQuery(SAVEPOINT);
          try {
            outcomes.push({ value: await work(trx, events), events });
          } catch (error) {
            await trx.executeQuery(ROLLBACK_TO);
            outcomes.push({ error });
          }
          await trx.executeQuery(RELEASE);
        }
      });
    } catch (error) {
      // The transaction itself failed (the lock could not be had, the commit failed, a
      // rollback to a savepoint failed): nothing of the group was written.
      for (const pending of group) pending.reject(error);
      return;
    }
    group.forEach((pending, i) => {
      const outcome = outcomes[i]!;
      if ('error' in outcome) pending.reject(outcome.error);
      else pending.resolve(outcome);
    });
  }
}

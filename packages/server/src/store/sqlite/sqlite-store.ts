import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely } from 'kysely';
import type { StoreDb, StoreSchema } from '../schema.ts';
import { SqlStore, type StoreOptions } from '../sql-store.ts';
import type { WorkEvent, WorkListener, WorkSubscription } from '../store.ts';
import { StoreError } from '../store-error.ts';
import { WorkSignal, warnListenerError } from '../work-signal.ts';
import { GroupCommit, type WriteWork } from './group-commit.ts';
import { ImmediateSqliteDialect } from './immediate-sqlite-dialect.ts';
import { sqliteDialect } from './sqlite-dialect.ts';
import { withStatementCache } from './statement-cache.ts';
import { checkpointInThread, type WalCheckpointer } from './wal-checkpointer.ts';
import { useWalMode } from './wal-mode.ts';

interface SqliteStoreOptions extends StoreOptions {
  /** How long a write waits for another process's write lock before failing, in ms. */
  busyTimeoutMs?: number;
  /**
   * How often a worker thread checkpoints the WAL of a file database, in ms (500). 0 leaves
   * checkpoints to SQLite, which runs them inside a commit, on the event loop.
   */
  checkpointIntervalMs?: number;
}

/** One open database file, shared by every store of this process that opens the same path. */
interface OpenFile {
  db: StoreDb;
  commits: GroupCommit;
  signal: WorkSignal;
  checkpointer: WalCheckpointer | undefined;
  users: number;
}

// better-sqlite3 is synchronous: a second connection of this process waiting for the write lock
// would block the very event loop the first connection needs to commit. So a process keeps one
// connection per file, and Kysely's connection mutex queues its transactions instead.
const openFiles = new Map<string, OpenFile>();

function openFile(path: string, options: SqliteStoreOptions): OpenFile {
  const shared = path !== ':memory:';
  const key = shared ? resolve(path) : path;
  const existing = shared ? openFiles.get(key) : undefined;
  if (existing !== undefined) {
    existing.users += 1;
    return existing;
  }
  const interval = options.checkpointIntervalMs;
  if (interval !== undefined && !(Number.isSafeInteger(interval) && interval >= 0)) {
    throw new StoreError('invalid_argument', 'checkpointIntervalMs must be 0 or positive ms');
  }
  if (shared) {
    // The owner's alone: operations, prompts and webhook URLs. SQLite gives the -wal and -shm
    // files the database file's mode, so a new file is made 0600 before SQLite opens it.
    mkdirSync(dirname(key), { recursive: true, mode: 0o700 });
    closeSync(openSync(key, 'a', 0o600));
  }
  const database = openDatabase(key);
  // WAL: readers never wait for the writer; NORMAL is durable across process crashes in WAL.
  useWalMode(database);
  database.pragma('synchronous = NORMAL');
  database.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5000)}`);
  database.pragma('foreign_keys = ON');
  const db = new Kysely<StoreSchema>({
    dialect: new ImmediateSqliteDialect({ database: withStatementCache(database) }),
  });
  const file: OpenFile = {
    db,
    commits: new GroupCommit(db),
    signal: new WorkSignal(options.onBackgroundError),
    checkpointer: shared
      ? checkpointInThread(database, key, {
          onError: options.onBackgroundError ?? warnListenerError,
          ...(options.checkpointIntervalMs === undefined ? {} : { intervalMs: options.checkpointIntervalMs }),
        })
      : undefined,
    users: 1,
  };
  if (shared) openFiles.set(key, file);
  return file;
}

/**
 * The file opened by better-sqlite3. Its native part is built or fetched by its install script:
 * installed with scripts off, it is missing, which is `driver_missing` with what to do rather
 * than the loader's list of every path it tried.
 */
function openDatabase(path: string): Database.Database {
  try {
    return new Database(path);
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code !== 'ERR_DLOPEN_FAILED' && !/bindings file|NODE_MODULE_VERSION/.test(message)) throw error;
    throw new StoreError(
      'driver_missing',
      `better-sqlite3's native module cannot be loaded (${message.split('\n')[0]!.trim()})`,
      { cause: error },
    );
  }
}

/**
 * The embedded store: one SQLite file in WAL mode, for a single service process (the default
 * of `mediahook serve`). Wake-ups travel in process; every store of the process that opens the
 * same file shares one connection and hears the same wake-ups.
 *
 * @example
 * const store = new SqliteStore('./.data/mediahook.sqlite');
 * await store.migrate();
 * await store.recoverLeases(); // a restart: whatever was in flight is due again
 */
export class SqliteStore extends SqlStore {
  readonly path: string;
  readonly #file: OpenFile;
  readonly #subscriptions = new Set<() => void>();
  #closed = false;

  constructor(path: string, options: SqliteStoreOptions = {}) {
    const file = openFile(path, options);
    super(file.db, sqliteDialect, options);
    this.path = path;
    this.#file = file;
  }

  protected override async prepare(): Promise<void> {}

  /** Writes of every store of this file that queue up share a transaction: see GroupCommit. */
  protected override async write<T>(work: WriteWork<T>): Promise<T> {
    const { value, events } = await this.#file.commits.run(work);
    if (events.length > 0) this.announceAfterCommit(events);
    return value;
  }

  protected override migrationSchema(): string | undefined {
    return undefined;
  }

  protected override async announceInTransaction(): Promise<void> {}

  protected override announceAfterCommit(events: readonly WorkEvent[]): void {
    for (const event of events) this.#file.signal.emit(event);
  }

  override onWork(listener: WorkListener): WorkSubscription {
    const subscription = this.#file.signal.subscribe(listener, Promise.resolve());
    const unsubscribe = () => {
      this.#subscriptions.delete(unsubscribe);
      subscription();
    };
    this.#subscriptions.add(unsubscribe);
    return Object.assign(unsubscribe, { ready: subscription.ready });
  }

  override async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const unsubscribe of [...this.#subscriptions]) unsubscribe();
    this.#file.users -= 1;
    if (this.#file.users > 0) return;
    for (const [key, file] of openFiles) if (file === this.#file) openFiles.delete(key);
    // The thread's connection first: closing the last one checkpoints and removes the WAL.
    await this.#file.checkpointer?.stop();
    await this.#file.db.destroy();
  }
}

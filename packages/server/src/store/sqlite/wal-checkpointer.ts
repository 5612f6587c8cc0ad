import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

/** How often the thread checkpoints, in ms, unless the store is told otherwise. */
const CHECKPOINT_INTERVAL_MS = 500;

/** SQLite's own default `wal_autocheckpoint`, restored when the thread is gone. */
const AUTOCHECKPOINT_PAGES = 1000;

/** WAL frames (pages) from which the thread works to have the WAL restarted (see the thread). */
const FULL_AFTER_FRAMES = 4096;

/** How long the thread tries PASSIVE rounds for that, then as long FULL ones, in ms. */
const FULL_WAIT_MS = 100;

/** How long a stopping thread gets to close its connection before it is terminated, in ms. */
const STOP_GRACE_MS = 2000;

const THREAD = new URL('./wal-checkpoint-thread.js', import.meta.url);

interface WalCheckpointerOptions {
  intervalMs?: number;
  /** A failure of the thread (it has stopped) or of starting it. */
  onError: (error: unknown) => void;
  /** The thread stopped without being asked: failed, or the file is gone. */
  onStop?: () => void;
}

function failure(error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  return new Error(`SQLite WAL checkpoint thread: ${message}`, { cause: error });
}

/**
 * Checkpoints one SQLite file's WAL from a worker thread with a connection of its own, so the
 * checkpoint's writes and fsyncs never run on the event loop, where better-sqlite3 would run
 * them inside whichever commit crossed `wal_autocheckpoint`. The thread does not keep the
 * process alive.
 *
 * @example
 * const checkpointer = new WalCheckpointer('/data/mediahook.sqlite', { onError: console.error });
 * await checkpointer.stop();
 */
export class WalCheckpointer {
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  #stopping = false;

  constructor(path: string, options: WalCheckpointerOptions) {
    this.#worker = new Worker(THREAD, {
      workerData: {
        path,
        intervalMs: options.intervalMs ?? CHECKPOINT_INTERVAL_MS,
        fullAfterFrames: FULL_AFTER_FRAMES,
        fullWaitMs: FULL_WAIT_MS,
      },
      // No loaders (tsx, vitest's): the thread is plain JavaScript and starts faster without.
      execArgv: [],
    });
    this.#worker.unref();
    this.#worker.on('error', (error) => options.onError(failure(error)));
    this.#exited = new Promise((resolve) => {
      this.#worker.once('exit', () => {
        if (!this.#stopping) options.onStop?.();
        resolve();
      });
    });
  }

  /** Closes the thread's connection and ends the thread; resolves once it has. */
  async stop(): Promise<void> {
    this.#stopping = true;
    // Unref'd, the thread would let the process exit before close() resolves.
    this.#worker.ref();
    this.#worker.postMessage('stop');
    // A thread stuck in a checkpoint (a hung disk) must not hold up close() for ever.
    const timer = setTimeout(() => void this.#worker.terminate(), STOP_GRACE_MS);
    timer.unref();
    await this.#exited;
    clearTimeout(timer);
  }
}

/**
 * Hands a file connection's checkpoints to a thread: `wal_autocheckpoint = 0` on `database`,
 * back to SQLite's default if the thread fails or stops by itself. Undefined, checkpoints left
 * to SQLite, when the file is not in WAL mode, `intervalMs` is 0 or the thread cannot start.
 */
export function checkpointInThread(
  database: Database.Database,
  path: string,
  options: WalCheckpointerOptions,
): WalCheckpointer | undefined {
  if (options.intervalMs === 0) return undefined;
  if (database.pragma('journal_mode', { simple: true }) !== 'wal') return undefined;
  const restore = () => {
    if (!database.open) return;
    try {
      database.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
    } catch {
      // Busy iterating a statement's rows: soon done.
      setTimeout(restore, 100).unref();
    }
  };
  database.pragma('wal_autocheckpoint = 0');
  try {
    return new WalCheckpointer(path, {
      ...options,
      onStop: () => {
        restore();
        options.onStop?.();
      },
    });
  } catch (error) {
    restore();
    options.onError(failure(error));
    return undefined;
  }
}

import { type FileHandle, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { emitWarning } from 'node:process';
import type { FileSink } from '../protocol/index.ts';
import { type FileModes, fileModesOf, makeParentDirectory } from './file-modes.ts';
import { uniqueName } from './store-files.ts';

/** 0600 files, 0700 directories. */
const DEFAULT_MODES = fileModesOf({});

/** Bytes gathered before one `writev`: fewer system calls than one write per socket chunk. */
const BATCH_BYTES = 2 * 1024 * 1024;

/**
 * Bytes written between two background `fdatasync`s of a large file, so that the fsync at
 * `close` waits for the tail only (the size: docs/benchmarks.md, "Figures behind the code").
 */
const WRITEBACK_BYTES = 16 * 1024 * 1024;

/**
 * Removes the temporary files of uploads that no process is writing any more: a receiver
 * killed mid-upload (SIGKILL, power loss) cannot clean up after itself. Only files untouched
 * for `olderThanMs` go, so a live upload of another receiver sharing the directory is left
 * alone (a live upload writes at least once per idle timeout). Resolves to how many went.
 */
export async function removeStaleTemporaryFiles(directory: string, olderThanMs: number): Promise<number> {
  const names = await readdir(directory).catch((error: unknown) => {
    if (isMissing(error)) return [];
    throw error;
  });
  let removed = 0;
  for (const name of names) {
    if (!name.startsWith('.incoming-') || !name.endsWith('.part')) continue;
    const path = join(directory, name);
    const info = await stat(path).catch(() => null);
    if (!info?.isFile() || Date.now() - info.mtimeMs < olderThanMs) continue;
    await unlink(path).then(
      () => removed++,
      () => {},
    );
  }
  return removed;
}

/**
 * A temporary file untouched this long belongs to no live upload: even one at the minimum rate
 * (1 KiB/s) fills a 2 MiB write batch in about 34 minutes.
 */
const STALE_TEMPORARY_MS = 60 * 60 * 1000;

/**
 * Removes what receivers killed mid-upload left in `out`, now and then hourly; the timer does
 * not keep the process alive.
 */
export function sweepStaleTemporaryFiles(out: string): ReturnType<typeof setInterval> {
  const sweep = () =>
    removeStaleTemporaryFiles(out, STALE_TEMPORARY_MS).catch((error: unknown) =>
      emitWarning(`stale temporary files in ${out} could not be removed: ${String(error)}`),
    );
  void sweep();
  const timer = setInterval(sweep, STALE_TEMPORARY_MS);
  timer.unref();
  return timer;
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

async function fsyncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

interface DirectorySync {
  /** Whether an fsync of the directory is running. */
  running: boolean;
  /** Callers that came while one was running: they share the next one. */
  next: { promise: Promise<void>; resolve(): void; reject(error: unknown): void } | null;
}

/**
 * The directories' sync states, kept once made (up to KEPT_DIRECTORIES of them). A Map whose
 * entries come and go with every sync keeps stale copies of them in the tables it outgrows, and
 * through the waiters' promises those kept whole requests alive across young-generation
 * collections, until a full one.
 */
const directorySyncs = new Map<string, DirectorySync>();
const KEPT_DIRECTORIES = 16;

/**
 * Makes the entries of `directory` durable. One fsync covers every rename that finished before
 * it started, so commits that arrive while one is running wait for it and then share a single
 * next one, instead of each opening, syncing and closing the directory: under concurrent
 * callbacks most of those system calls (each a thread-pool round trip) are saved.
 */
function syncDirectory(directory: string): Promise<void> {
  let state = directorySyncs.get(directory);
  if (!state) {
    state = { running: false, next: null };
    directorySyncs.set(directory, state);
  }
  if (state.running) {
    if (!state.next) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      state.next = { promise, resolve, reject };
    }
    return state.next.promise;
  }
  state.running = true;
  const sync = fsyncDirectory(directory);
  const after = () => {
    state.running = false;
    const waiting = state.next;
    state.next = null;
    // The waiters' renames finished before this sync ended, not surely before it began.
    if (waiting) syncDirectory(directory).then(waiting.resolve, waiting.reject);
    else if (directorySyncs.size > KEPT_DIRECTORIES) directorySyncs.delete(directory);
  };
  sync.then(after, after);
  return sync;
}

/**
 * A sink that writes a result file to a temporary file next to its final place, then, once the
 * callback is known valid, fsyncs and renames it atomically. A rejected or aborted callback
 * leaves nothing behind. One write is in flight while the next batch gathers. Files are made
 * 0600 and missing directories 0700 unless `modes` widens them (`fileModesOf`).
 *
 * @example
 * const sink = new DiskSink('/data/callbacks');
 * // … the decoder writes and closes it …
 * await sink.commit('/data/callbacks/op-1.jpg');
 */
export class DiskSink implements FileSink {
  readonly tempPath: string;
  #handle: Promise<FileHandle> | null = null;
  #batch: Buffer[] = [];
  #batchBytes = 0;
  #inflight: Promise<void> | null = null;
  /** The background fdatasync, if one runs; its failure fails the sink like a write's. */
  #writeback: Promise<void> | null = null;
  /** Bytes written since the last background fdatasync started. */
  #unflushed = 0;
  #failure: unknown = null;
  /** Bytes on their way to the file or in it: what `write` was given. */
  #received = 0;
  #closed = false;
  #finalPath: string | null = null;
  #gone = false;
  readonly #modes: FileModes;

  constructor(directory: string, modes: FileModes = DEFAULT_MODES) {
    this.tempPath = join(directory, `.incoming-${uniqueName()}.part`);
    this.#modes = modes;
  }

  /** Bytes given to `write` so far, whether or not they have reached the file yet. */
  get bytes(): number {
    return this.#received;
  }

  write(chunk: Buffer): void | Promise<void> {
    if (this.#failure) throw this.#failure;
    this.#batch.push(chunk);
    this.#batchBytes += chunk.length;
    this.#received += chunk.length;
    if (this.#batchBytes < BATCH_BYTES) return;
    if (!this.#inflight) {
      this.#startWrite();
      return;
    }
    // A write is in flight and another batch is full: wait, so memory stays bounded.
    return this.#inflight.then(() => {
      if (this.#failure) throw this.#failure;
      if (this.#batchBytes >= BATCH_BYTES && !this.#inflight) this.#startWrite();
    });
  }

  #open(): Promise<FileHandle> {
    this.#handle ??= this.#create();
    return this.#handle;
  }

  async #create(): Promise<FileHandle> {
    const mode = this.#modes.file;
    // The directory is made only when it is missing: one system call fewer for every file.
    const handle = await open(this.tempPath, 'wx', mode).catch(async (error: unknown) => {
      if (!isMissing(error)) throw error;
      await makeParentDirectory(this.tempPath, this.#modes);
      return open(this.tempPath, 'wx', mode);
    });
    // A widened mode is set past the umask; a failure here fails the sink like a write's.
    if (this.#modes.exactFile) {
      await handle.chmod(mode).catch(async (error: unknown) => {
        await handle.close();
        throw error;
      });
    }
    return handle;
  }

  #startWrite(): void {
    const batch = this.#batch;
    const size = this.#batchBytes;
    this.#batch = [];
    this.#batchBytes = 0;
    this.#inflight = (async () => {
      const handle = await this.#open();
      let done = 0;
      let pending = batch;
      // writev may write less than asked; carry on from where it stopped.
      while (done < size) {
        const { bytesWritten } = await handle.writev(pending);
        done += bytesWritten;
        if (done < size) pending = [Buffer.concat(pending).subarray(bytesWritten)];
      }
      this.#unflushed += size;
      if (this.#unflushed >= WRITEBACK_BYTES && !this.#writeback) {
        this.#unflushed = 0;
        this.#writeback = handle.datasync().then(
          () => {
            this.#writeback = null;
          },
          (error: unknown) => {
            this.#failure ??= error;
            this.#writeback = null;
          },
        );
      }
    })().then(
      () => {
        this.#inflight = null;
      },
      (error: unknown) => {
        this.#failure = error;
        this.#inflight = null;
      },
    );
  }

  /** Writes what is left and fsyncs: the bytes are on disk when this resolves. */
  async close(): Promise<void> {
    if (this.#inflight) await this.#inflight;
    if (this.#batchBytes > 0) {
      this.#startWrite();
      await this.#inflight;
    }
    if (this.#writeback) await this.#writeback;
    if (this.#failure) throw this.#failure;
    const handle = await this.#open();
    await handle.sync();
    await handle.close();
    this.#closed = true;
  }

  /** Moves the closed file to its final path, atomically, and makes the rename durable. */
  async commit(finalPath: string): Promise<void> {
    if (!this.#closed) throw new Error('a sink is committed after it is closed');
    await rename(this.tempPath, finalPath).catch(async (error: unknown) => {
      // As in #open: the final directory is made only when the rename finds it missing.
      if (!isMissing(error)) throw error;
      await makeParentDirectory(finalPath, this.#modes);
      await rename(this.tempPath, finalPath);
    });
    this.#finalPath = finalPath;
    await syncDirectory(dirname(finalPath));
  }

  /** Removes whatever this sink wrote, the temporary file or the committed one. */
  async abort(): Promise<void> {
    if (this.#gone) return;
    this.#gone = true;
    this.#failure ??= new Error('aborted');
    if (this.#inflight) await this.#inflight;
    if (this.#writeback) await this.#writeback;
    if (this.#handle) {
      const handle = await this.#handle.catch(() => null);
      if (handle && !this.#closed) await handle.close().catch(() => {});
    }
    await unlink(this.#finalPath ?? this.tempPath).catch(() => {});
  }
}

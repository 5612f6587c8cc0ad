/**
 * The SHA-256 of a result file as it streams through the decoder. Small files are hashed in
 * place (as they arrive when known to be small, else at the end); a large one is hashed on a
 * thread, in 1 MiB batches, so that the event loop goes on receiving (docs/benchmarks.md,
 * "Figures behind the code"). Where the runtime has no threads (Workers), every file is hashed
 * in place.
 */
import { createHash, type Hash } from 'node:crypto';
import type { Worker } from 'node:worker_threads';

/** Files up to this size are hashed in place; the thread's round trip would cost more. */
const IN_PLACE_BYTES = 1024 * 1024;
const BATCH_BYTES = 1024 * 1024;
/** Bytes of one file handed to the thread and not hashed yet, before the decoder must wait. */
const MAX_BACKLOG_BYTES = 8 * BATCH_BYTES;

interface Job {
  /** `length` bytes were hashed; `buffer`, the batch they came in, is free again. */
  hashed(length: number, buffer: ArrayBuffer): void;
  done(digest: string): void;
  fail(error: Error): void;
}

type ThreadMessage = { job: number; hashed: number; bytes: ArrayBuffer } | { job: number; digest: string };

/** Whether the runtime can start the thread; false once it could not. */
let threadsWork = true;

/** One hashing thread per process, shared by every file being hashed; started on first use. */
class Sha256Thread {
  static #shared: Sha256Thread | null = null;

  /** The thread, or null where the runtime cannot start one. */
  static get(): Sha256Thread | null {
    if (Sha256Thread.#shared || !threadsWork) return Sha256Thread.#shared;
    // Looked up, not imported: a module that imports node:worker_threads does not even load
    // where the runtime lacks it.
    const threads = globalThis.process?.getBuiltinModule?.('node:worker_threads');
    try {
      if (!threads) throw new Error('no node:worker_threads');
      Sha256Thread.#shared = new Sha256Thread(threads.Worker);
    } catch {
      threadsWork = false;
    }
    return Sha256Thread.#shared;
  }

  readonly #worker: Worker;
  readonly #jobs = new Map<number, Job>();
  #nextJob = 1;

  private constructor(Thread: typeof Worker) {
    // No loaders (tsx, vitest's): the thread is plain JavaScript.
    this.#worker = new Thread(new URL('./sha256-thread.js', import.meta.url), { execArgv: [] });
    // The thread keeps the process alive only while a file is being hashed on it.
    this.#worker.unref();
    this.#worker.on('message', (message: ThreadMessage) => {
      const job = this.#jobs.get(message.job);
      if (!job) return;
      if ('hashed' in message) job.hashed(message.hashed, message.bytes);
      else {
        this.#forget(message.job);
        job.done(message.digest);
      }
    });
    const failed = (error: Error) => {
      if (Sha256Thread.#shared === this) Sha256Thread.#shared = null;
      const jobs = [...this.#jobs.values()];
      this.#jobs.clear();
      for (const job of jobs) job.fail(error);
    };
    this.#worker.on('error', failed);
    this.#worker.on('exit', (code) => failed(new Error(`the SHA-256 thread stopped (exit code ${code})`)));
  }

  open(job: Job): number {
    const id = this.#nextJob++;
    if (this.#jobs.size === 0) this.#worker.ref();
    this.#jobs.set(id, job);
    return id;
  }

  /** Hands `length` bytes of `bytes` over (the buffer is transferred, no longer usable here). */
  send(id: number, bytes: ArrayBuffer, length: number, end: boolean): void {
    this.#worker.postMessage({ job: id, bytes, length, end }, [bytes]);
  }

  drop(id: number): void {
    if (!this.#jobs.has(id)) return;
    this.#forget(id);
    this.#worker.postMessage({ job: id, drop: true });
  }

  #forget(id: number): void {
    this.#jobs.delete(id);
    if (this.#jobs.size === 0) this.#worker.unref();
  }
}

export interface FileDigestOptions {
  /**
   * The most bytes the file can have, when known. A file known to be small is hashed as it is
   * fed, with no copy; one that may be large goes to the thread from its first byte. Unknown,
   * the first MiB is copied and kept until it is clear which of the two the file is.
   */
  maxBytes?: number | undefined;
}

/**
 * SHA-256 of bytes fed in order. `update` does not keep what it is given (the caller's buffers
 * may be reused); `backlog` tells when the thread has fallen behind, so that the feeder waits.
 *
 * @example
 * const digest = new FileDigest({ maxBytes: Number(req.headers['content-length']) });
 * for await (const chunk of file) { digest.update(chunk); await digest.backlog(); }
 * const hex = await digest.digest();
 */
export class FileDigest {
  /** The in-place hash of a file known to be small. */
  #inPlace: Hash | null = null;
  /** Copies of the bytes while the file is small enough to be hashed in place. */
  #small: Buffer[] | null = [];
  #smallBytes = 0;
  #job: number | null = null;
  #batch: Buffer | null = null;
  /** Batches the thread has hashed and given back, to be filled again. */
  readonly #free: ArrayBuffer[] = [];
  #filled = 0;
  #sent = 0;
  #hashed = 0;
  #result: Promise<string> | null = null;
  #settle: { done(digest: string): void; fail(error: Error): void } | null = null;
  #failure: Error | null = null;
  #waiting: (() => void) | null = null;

  constructor(options: FileDigestOptions = {}) {
    const { maxBytes } = options;
    if (maxBytes === undefined || !Number.isFinite(maxBytes) || maxBytes < 0) return;
    // Copying a small file to hash it at the end doubles the buffers every callback allocates,
    // which is what makes V8 run full collections under load.
    if (maxBytes <= IN_PLACE_BYTES || !Sha256Thread.get()) this.#inPlace = createHash('sha256');
    else this.#startThread();
  }

  update(chunk: Uint8Array): void {
    if (this.#failure) throw this.#failure;
    if (this.#inPlace) {
      this.#inPlace.update(chunk);
      return;
    }
    if (this.#small) {
      if (this.#smallBytes + chunk.length <= IN_PLACE_BYTES) {
        this.#small.push(Buffer.from(chunk));
        this.#smallBytes += chunk.length;
        return;
      }
      if (!Sha256Thread.get()) {
        this.#hashInPlace(chunk);
        return;
      }
      this.#startThread();
    }
    let offset = 0;
    while (offset < chunk.length) {
      this.#batch ??= Buffer.from(this.#free.pop() ?? new ArrayBuffer(BATCH_BYTES));
      const copied = chunk.subarray(offset, offset + BATCH_BYTES - this.#filled);
      this.#batch.set(copied, this.#filled);
      this.#filled += copied.length;
      offset += copied.length;
      if (this.#filled === BATCH_BYTES) this.#sendBatch(false);
    }
  }

  /** Resolves once the thread has caught up enough; undefined when there is no need to wait. */
  backlog(): Promise<void> | undefined {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#sent - this.#hashed <= MAX_BACKLOG_BYTES) return undefined;
    return new Promise((resolve) => {
      this.#waiting = resolve;
    });
  }

  /** The digest, in lower-case hex, of everything fed. Feed nothing more afterwards. */
  digest(): Promise<string> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#inPlace) {
      const hex = this.#inPlace.digest('hex');
      this.#inPlace = null;
      return Promise.resolve(hex);
    }
    if (this.#small) {
      const hash = createHash('sha256');
      for (const chunk of this.#small) hash.update(chunk);
      this.#small = null;
      return Promise.resolve(hash.digest('hex'));
    }
    this.#sendBatch(true);
    return this.#result!;
  }

  /** Gives up: the thread drops what it was given of this file. */
  abort(): void {
    this.#small = null;
    this.#inPlace = null;
    this.#failure ??= new Error('the digest was abandoned');
    if (this.#job !== null) Sha256Thread.get()?.drop(this.#job);
    this.#wake();
  }

  /** Goes on hashing in place, from the copies kept so far, where no thread can be had. */
  #hashInPlace(chunk: Uint8Array): void {
    const hash = createHash('sha256');
    for (const kept of this.#small ?? []) hash.update(kept);
    this.#small = null;
    hash.update(chunk);
    this.#inPlace = hash;
  }

  #startThread(): void {
    const small = this.#small!;
    this.#small = null;
    this.#result = new Promise<string>((done, fail) => {
      this.#settle = { done, fail };
    });
    // Awaited by digest(); a failure before that must not be an unhandled rejection.
    this.#result.catch(() => {});
    this.#job = Sha256Thread.get()!.open({
      hashed: (length, buffer) => {
        this.#hashed += length;
        if (buffer.byteLength === BATCH_BYTES) this.#free.push(buffer);
        if (this.#sent - this.#hashed <= MAX_BACKLOG_BYTES / 2) this.#wake();
      },
      done: (digest) => this.#settle!.done(digest),
      fail: (error) => {
        this.#failure = error;
        this.#settle!.fail(error);
        this.#wake();
      },
    });
    for (const chunk of small) this.update(chunk);
  }

  #sendBatch(end: boolean): void {
    // A batch owns its ArrayBuffer whole: transferring it moves only this batch.
    const buffer = (this.#batch?.buffer as ArrayBuffer | undefined) ?? new ArrayBuffer(0);
    const length = this.#filled;
    this.#batch = null;
    this.#filled = 0;
    this.#sent += length;
    Sha256Thread.get()!.send(this.#job!, buffer, length, end);
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting?.();
  }
}

/**
 * Buffers for result files sent from memory, reused from one send to the next: a fresh buffer
 * per callback is off-heap memory that only full collections give back, and their pauses made
 * most of the delivery latency's tail (docs/benchmarks.md, "Figures behind the code").
 *
 * A buffer goes back when its send has ended. The send may have ended before every byte left
 * the process: a receiver that answers before reading the whole body leaves the last bytes
 * queued on its connection, and those are read from the buffer when the socket can take them.
 * So a buffer is only ever reused for the same receiver (`endpoint`, its `host:port`): whatever
 * such late bytes hold then went to the server that the next callback is addressed to anyway.
 */

/** Room is kept in whole 64 KiB steps, so that files of nearly the same size share buffers. */
const STEP = 64 * 1024;

interface ResultBuffersOptions {
  /** Most bytes kept in free buffers, over all receivers (8 MiB by default). */
  maxFreeBytes?: number;
}

/**
 * @example
 * const buffers = new ResultBuffers();
 * const file = await blobs.read(key, bytes, (size) => buffers.take(endpoint, size));
 * try { await sender.send(url, callback) } finally { if (file) buffers.give(endpoint, file) }
 */
export class ResultBuffers {
  readonly #maxFreeBytes: number;
  /** Free buffers by receiver, least recently given first. */
  readonly #free = new Map<string, ArrayBuffer[]>();
  #freeBytes = 0;
  /** Buffers handed out by `take` and not given back: `give` takes back only those. */
  readonly #lent = new WeakSet<ArrayBuffer>();

  constructor(options: ResultBuffersOptions = {}) {
    this.#maxFreeBytes = options.maxFreeBytes ?? 8 * 1024 * 1024;
  }

  /** Bytes held in free buffers now. */
  get freeBytes(): number {
    return this.#freeBytes;
  }

  /** A buffer of exactly `size` bytes (contents undefined) for a file sent to `endpoint`. */
  take(endpoint: string, size: number): Buffer {
    const room = Math.max(STEP, Math.ceil(size / STEP) * STEP);
    const list = this.#free.get(endpoint);
    const at = list?.findIndex((b) => b.byteLength === room) ?? -1;
    let memory: ArrayBuffer;
    if (list !== undefined && at >= 0) {
      memory = list.splice(at, 1)[0]!;
      this.#freeBytes -= room;
      if (list.length === 0) this.#free.delete(endpoint);
    } else {
      memory = new ArrayBuffer(room);
    }
    this.#lent.add(memory);
    return Buffer.from(memory, 0, size);
  }

  /** Gives back a buffer from `take` once its send to `endpoint` has ended; others are ignored. */
  give(endpoint: string, buffer: Uint8Array): void {
    const memory = buffer.buffer;
    if (!(memory instanceof ArrayBuffer) || !this.#lent.delete(memory)) return;
    if (memory.byteLength > this.#maxFreeBytes) return;
    const list = this.#free.get(endpoint) ?? [];
    this.#free.delete(endpoint); // re-inserted last: the most recently used receiver
    list.push(memory);
    this.#free.set(endpoint, list);
    this.#freeBytes += memory.byteLength;
    // Over the bound, the buffers of the receivers sent to least recently go first.
    for (const [key, buffers] of this.#free) {
      if (this.#freeBytes <= this.#maxFreeBytes) break;
      while (buffers.length > 0 && this.#freeBytes > this.#maxFreeBytes) {
        this.#freeBytes -= buffers.shift()!.byteLength;
      }
      if (buffers.length === 0) this.#free.delete(key);
    }
  }
}

import { PassThrough, type Readable } from 'node:stream';
import type { MediaType } from './callback-shapes.ts';
import { ProtocolError } from './errors.ts';

/** What a sink factory learns when a result file starts. */
export interface FileStart {
  /** Part name: the family's result part (`result_pv` in family A). */
  part: string;
  /** The sender's filename; informative only, never to be used as a path. */
  filename: string;
  /** The declared Content-Type, or null. */
  declaredType: string | null;
  /** The media type the first bytes show. */
  mediaType: MediaType;
  /**
   * The text parts that came before the file, by name. In wire order that is all of them, so
   * a receiver can see `id_gen` before storing anything (for example to skip a duplicate).
   */
  fields: ReadonlyMap<string, string>;
}

/**
 * Where the bytes of a result file go while a callback is decoded. The decoder never calls
 * `write` again before a promise it returned has settled, so a sink needs no queue of its own.
 */
export interface FileSink {
  /** Takes the next bytes; return a promise to make the decoder wait (backpressure). */
  write(chunk: Buffer): void | Promise<void>;
  /** All bytes were written and the callback is valid. */
  close(): Promise<void>;
  /** The callback failed; drop whatever was written. Called at most once, never after close. */
  abort(reason: unknown): Promise<void>;
}

/** Makes the sink for one result file. */
export type FileSinkFactory<S extends FileSink = FileSink> = (file: FileStart) => S;

/** A sink that counts and drops the bytes: for validation-only decoding and benchmarks. */
export function discardSink(): FileSink {
  return {
    write() {},
    async close() {},
    async abort() {},
  };
}

/** A sink whose bytes come out of `stream`, for users who store the file themselves. */
export interface StreamSink extends FileSink {
  /** The file's bytes; it errors when the callback turns out invalid. */
  readonly stream: Readable;
}

/**
 * A sink that exposes the file as a Readable. Consume `stream` while decoding continues: the
 * decoder waits whenever the stream's buffer is full.
 *
 * @example
 * const callback = await decodeCallback(req, req.headers['content-type'], {
 *   sink: () => { const s = streamSink(); s.stream.pipe(createWriteStream('out.bin')); return s; },
 * });
 */
export function streamSink(highWaterMark = 256 * 1024): StreamSink {
  const stream = new PassThrough({ highWaterMark });
  return {
    stream,
    write(chunk) {
      if (stream.write(chunk)) return;
      return new Promise<void>((resolve, reject) => {
        const onDrain = () => {
          stream.off('error', onError);
          resolve();
        };
        const onError = (error: Error) => {
          stream.off('drain', onDrain);
          reject(error);
        };
        stream.once('drain', onDrain);
        stream.once('error', onError);
      });
    },
    async close() {
      // Not waiting for 'finish': that needs the reader to drain, and the reader may be later.
      stream.end();
    },
    async abort(reason) {
      stream.destroy(reason instanceof Error ? reason : new Error(String(reason)));
    },
  };
}

/** A sink that keeps the file in memory, for runtimes without a file system (Workers). */
export interface MemorySink extends FileSink {
  /** The file's bytes, once the callback was accepted; empty before. */
  readonly bytes: Uint8Array;
}

/** Held by {@link memorySink} unless told otherwise: well within a Worker's 128 MB. */
const DEFAULT_MEMORY_SINK_BYTES = 32 * 1024 * 1024;

/**
 * A sink factory whose files are kept in memory, up to `maxBytes` each (32 MiB by default): a
 * larger one fails the callback with `file_too_large`, as the receiver's own limit would. For
 * runtimes with no disk, such as Cloudflare Workers; the handler takes the bytes from
 * `callback.file.sink`.
 *
 * @example
 * const receiver = createReceiver({
 *   sink: memorySink(),
 *   store: new MemoryReceiptStore(),
 *   onSuccess: async (callback) => env.BUCKET.put(callback.id_gen, (callback.file.sink as MemorySink).bytes),
 * });
 * export default { fetch: webHandler(receiver) };
 */
export function memorySink(maxBytes = DEFAULT_MEMORY_SINK_BYTES): FileSinkFactory<MemorySink> {
  return () => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    let whole: Uint8Array = new Uint8Array(0);
    return {
      get bytes() {
        return whole;
      },
      write(chunk) {
        size += chunk.length;
        if (size > maxBytes) {
          throw new ProtocolError(
            'file_too_large',
            `the file is over the ${maxBytes}-byte limit of this receiver's memory sink`,
          );
        }
        // A copy: the decoder may hand out views of a buffer it reuses.
        chunks.push(new Uint8Array(chunk));
      },
      async close() {
        whole = new Uint8Array(size);
        let at = 0;
        for (const chunk of chunks.splice(0)) {
          whole.set(chunk, at);
          at += chunk.length;
        }
      },
      async abort() {
        chunks.length = 0;
      },
    };
  };
}

import { PassThrough, type Readable } from 'node:stream';
import type { MediaType } from './callback-shapes.ts';

/** What a sink factory learns when a result file starts. */
export interface FileStart {
  /** Part name: `result_pv` or `res_image`. */
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

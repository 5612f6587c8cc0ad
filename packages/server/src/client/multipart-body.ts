/**
 * A `multipart/form-data` body (RFC 7578) built as the request is sent: text parts, then the
 * file read as the connection takes it, never held in memory whole.
 */

/** A file of known size read as it is sent: a Web stream, or a Node stream (any async iterable of bytes). */
export interface FileStream {
  stream: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
  /** Its length in bytes: the body's length is declared from it, and a stream of another length fails. */
  size: number;
  /** The part's filename (`result`). */
  name?: string;
  /** The part's media type; the service judges the file by its bytes anyway. */
  type?: string;
}

/** A Blob or File is sent as the runtime reads it (a browser from disk); a stream as it comes. */
export type SubmittedFile = Blob | FileStream;

export interface MultipartBody {
  contentType: string;
  body: Blob | Uint8Array | ReadableStream<Uint8Array>;
  /** Set for a stream, whose length the runtime cannot know. */
  length?: number;
}

const encoder = new TextEncoder();

function randomBoundary(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `mediahook-${Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

/** A quoted parameter as browsers write it in a form: `"`, CR and LF percent-encoded. */
function quoted(value: string): string {
  return `"${value.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A')}"`;
}

/** The body of `texts` (in order) and `file` last, as the part named `fileName`. */
export function multipartBody(
  texts: readonly (readonly [string, string])[],
  file?: { part: string; file: SubmittedFile },
): MultipartBody {
  const boundary = randomBoundary();
  const contentType = `multipart/form-data; boundary=${boundary}`;
  let head = texts
    .map(
      ([name, value]) =>
        `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(name)}\r\n\r\n${value}\r\n`,
    )
    .join('');
  if (file === undefined) return { contentType, body: encoder.encode(`${head}--${boundary}--\r\n`) };
  const source = file.file;
  const name =
    source instanceof Blob ? ((source as Partial<File>).name ?? file.part) : (source.name ?? file.part);
  const type = (source.type ?? '') || 'application/octet-stream';
  head +=
    `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(file.part)}; filename=${quoted(name)}\r\n` +
    `Content-Type: ${type}\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  // A Blob of Blobs refers to the file's bytes: nothing is copied until it is read.
  if (source instanceof Blob) return { contentType, body: new Blob([head, source, tail]) };
  const [first, last] = [encoder.encode(head), encoder.encode(tail)];
  return {
    contentType,
    body: streamOf(first, source, last),
    length: first.length + source.size + last.length,
  };
}

/** `head`, the file's bytes and `tail`, each chunk read only when the reader asks for it. */
function streamOf(head: Uint8Array, file: FileStream, tail: Uint8Array): ReadableStream<Uint8Array> {
  const chunks = fileChunks(file);
  let started = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!started) {
          started = true;
          return controller.enqueue(head);
        }
        const next = await chunks.next();
        if (!next.done) return controller.enqueue(next.value);
        controller.enqueue(tail);
        controller.close();
      },
      async cancel(reason) {
        await chunks.return?.(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/** The file's chunks, failing when they add up to another length than the size given. */
async function* fileChunks(file: FileStream): AsyncGenerator<Uint8Array> {
  let bytes = 0;
  const iterable: AsyncIterable<Uint8Array> =
    Symbol.asyncIterator in file.stream ? file.stream : iterate(file.stream as ReadableStream<Uint8Array>);
  for await (const chunk of iterable) {
    bytes += chunk.length;
    if (bytes > file.size)
      throw new RangeError(`the file stream is longer than its size, ${file.size} bytes`);
    yield chunk;
  }
  if (bytes !== file.size) throw new RangeError(`the file stream ended after ${bytes} of ${file.size} bytes`);
}

/** A Web stream as an async iterable, where the runtime's streams are not iterable themselves. */
async function* iterate(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  let done = false;
  try {
    for (;;) {
      const next = await reader.read();
      if ((done = next.done)) return;
      yield next.value;
    }
  } finally {
    // Left early (the request failed): the file is not read any further.
    if (!done) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

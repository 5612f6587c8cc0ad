import { randomFillSync } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { extensionOf, FAMILY_PARTS, type Family, type MediaType } from './callback-shapes.ts';
import { boundaryOf } from './header-value.ts';

/**
 * The bytes of a result file: a path, a Buffer, a Readable of a known size (read once), or a
 * function opening a new Readable each time the body is produced (a file kept elsewhere, as in
 * object storage, which a signed callback reads twice: once to sign, once to send).
 */
export type FileSource =
  | string
  | Uint8Array
  | { stream: Readable; size: number }
  | { open: () => Readable | Promise<Readable>; size: number };

interface OutgoingFields {
  family: Family;
  status: string;
  id_gen: string;
  time_gen: string;
}

/** A callback to send. */
export type OutgoingCallback =
  | (OutgoingFields & {
      event: 'success';
      file: FileSource;
      mediaType: MediaType;
      /** Defaults to `<id_gen>.jpg` or `<id_gen>.mp4`. */
      filename?: string;
    })
  | (OutgoingFields & { event: 'error'; message: string });

/** A callback ready to send: headers known up front, body produced on demand. */
export interface EncodedCallback {
  boundary: string;
  contentType: string;
  contentLength: number;
  /**
   * The body, from the start. Each call reads the file again, so a body can be produced twice
   * (once to sign, once to send) when the source is a path or a Buffer.
   */
  body(): AsyncIterable<Buffer>;
  /**
   * The body's bytes, in order, when nothing of it has to be read (an error callback, or a file
   * given as bytes); null when the file is a path or a stream. Written as they are, without a
   * stream: for a small result, streaming it costs more than the request itself.
   */
  inMemory(): readonly Buffer[] | null;
}

/**
 * Random bytes for boundaries, drawn from the system's CSPRNG 4 KiB at a time: one call per 256
 * boundaries instead of one per callback, every boundary still of bytes used once only.
 */
const boundaryBytes = Buffer.alloc(4096);
let boundaryOffset = boundaryBytes.length;

/** A boundary of 32 random characters; RFC 2046 allows up to 70. */
export function randomBoundary(): string {
  if (boundaryOffset + 16 > boundaryBytes.length) {
    randomFillSync(boundaryBytes);
    boundaryOffset = 0;
  }
  const random = boundaryBytes.toString('hex', boundaryOffset, boundaryOffset + 16);
  boundaryOffset += 16;
  return `mediahook-${random}`;
}

function escapeQuoted(value: string): string {
  // The escaping browsers use in form-data names and filenames (WHATWG HTML: CR, LF and '"'
  // as %0D, %0A, %22), extended to every control character, which a header cannot carry.
  return value.replace(
    /[\u0000-\u001f\u007f"]/g,
    (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
  );
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The Content-Type for a boundary, quoting it when it is not a token (RFC 2046 §5.1.1). */
function contentTypeFor(boundary: string): string {
  return `multipart/form-data; boundary=${TOKEN.test(boundary) ? boundary : `"${boundary}"`}`;
}

function partHead(boundary: string, name: string, file?: { filename: string; mediaType: string }): string {
  let head = `--${boundary}\r\nContent-Disposition: form-data; name="${escapeQuoted(name)}"`;
  if (file) head += `; filename="${escapeQuoted(file.filename)}"\r\nContent-Type: ${file.mediaType}`;
  return `${head}\r\n\r\n`;
}

/**
 * Encodes a callback as `multipart/form-data`: exactly the parts of its shape, in wire order,
 * with the Content-Length computed before any byte is read. The file is streamed, never held
 * whole. The same callback and boundary always give the same bytes.
 *
 * @example
 * const encoded = await encodeCallback({ family: 'A', event: 'success', status: 'success',
 *   id_gen: 'op-1', time_gen: new Date().toISOString(), file: 'out.jpg', mediaType: 'image/jpeg' });
 * await fetch(url, { method: 'POST', headers: { 'content-type': encoded.contentType },
 *   body: Readable.from(encoded.body()), duplex: 'half' });
 */
export async function encodeCallback(
  callback: OutgoingCallback,
  boundary = randomBoundary(),
): Promise<EncodedCallback> {
  const parts = FAMILY_PARTS[callback.family];
  if (!parts) throw new TypeError(`unknown family ${String(callback.family)}`);
  if (callback.id_gen === '') throw new TypeError('id_gen must not be empty');
  const checked = boundaryOf(contentTypeFor(boundary));
  if ('error' in checked) throw new TypeError(`unusable boundary: ${checked.error}`);
  const texts: [string, string][] = [
    ['status', callback.status],
    ['id_gen', callback.id_gen],
    ['time_gen', callback.time_gen],
  ];
  if (callback.event === 'error') texts.push([parts.error, callback.message]);
  else if (!parts.mediaTypes.includes(callback.mediaType)) {
    throw new TypeError(`family ${callback.family} cannot carry ${callback.mediaType}`);
  }
  const delimiter = `--${boundary}`;
  let head = '';
  for (const [name, value] of texts) {
    if (value.includes(delimiter)) throw new TypeError(`the ${name} text contains the boundary`);
    // A lone surrogate has no UTF-8 form: it would be sent as U+FFFD, silently changed.
    if (!value.isWellFormed()) throw new TypeError(`the ${name} text has an unpaired surrogate`);
    head += `${partHead(boundary, name)}${value}\r\n`;
  }
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1');
  if (callback.event === 'error') {
    const bytes = Buffer.concat([Buffer.from(head, 'utf8'), tail.subarray(2)]);
    return {
      boundary,
      contentType: contentTypeFor(boundary),
      contentLength: bytes.length,
      async *body() {
        yield bytes;
      },
      inMemory: () => [bytes],
    };
  }
  const filename = callback.filename ?? `${callback.id_gen}${extensionOf(callback.mediaType)}`;
  head += partHead(boundary, parts.result, { filename, mediaType: callback.mediaType });
  const headBytes = Buffer.from(head, 'utf8');
  const source = callback.file;
  const size = await sizeOf(source);
  let streamUsed = false;
  return {
    boundary,
    contentType: contentTypeFor(boundary),
    contentLength: headBytes.length + size + tail.length,
    async *body() {
      yield headBytes;
      if (typeof source === 'string') {
        let read = 0;
        for await (const chunk of createReadStream(source, { highWaterMark: 256 * 1024 })) {
          read += (chunk as Buffer).length;
          yield chunk as Buffer;
        }
        if (read !== size)
          throw new Error(`${source} changed size while it was sent (${size} → ${read} bytes)`);
      } else if (source instanceof Uint8Array) {
        yield Buffer.from(source.buffer, source.byteOffset, source.byteLength);
      } else if ('open' in source) {
        yield* sizedStream(await source.open(), size);
      } else {
        if (streamUsed) throw new Error('a stream source can be sent once only');
        streamUsed = true;
        yield* sizedStream(source.stream, size);
      }
      yield tail;
    },
    inMemory() {
      if (!(source instanceof Uint8Array)) return null;
      return [headBytes, Buffer.from(source.buffer, source.byteOffset, source.byteLength), tail];
    },
  };
}

/** The chunks of a stream that must hold exactly `size` bytes. */
async function* sizedStream(stream: Readable, size: number): AsyncGenerator<Buffer> {
  let read = 0;
  for await (const chunk of stream) {
    read += (chunk as Buffer).length;
    if (read > size) throw new Error(`the file stream is longer than its declared size ${size}`);
    yield chunk as Buffer;
  }
  if (read !== size) throw new Error(`the file stream ended at ${read} of its declared ${size} bytes`);
}

async function sizeOf(source: FileSource): Promise<number> {
  if (typeof source === 'string') return (await stat(source)).size;
  if (source instanceof Uint8Array) return source.byteLength;
  return source.size;
}
